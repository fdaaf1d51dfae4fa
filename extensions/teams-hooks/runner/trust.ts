/**
 * Trust in gate files by content. The agents a gate judges run as the same user as the leader and
 * can write the hooks dirs, so a gate could be edited, deleted, disabled or shadowed to let work
 * through. The leader keeps, per team, the sha256 and mode of every gate it trusts
 * (`hook-state/trust.json`, path → entry), taken on its first start (trust on first use) and by
 * `pi-teams-hooks trust`; a copy of each trusted content (`hook-state/trusted/<sha256>`) lets `trust`
 * show what changed. Before an event runs, its chain is compared with the record:
 *
 *   untrusted_hook       a gate that runs is new, or its content or mode changed since it was trusted
 *   gate_missing         a trusted gate no longer runs: deleted, disabled or replaced through the team
 *                        layer, shadowed by a new file earlier in the lookup order, no longer a file
 *   gate_not_executable  a trusted gate that lost the execute bit it needs
 *   insecure_hook        a gate others could rewrite: world-writable, or owned by another user than
 *                        the leader's (root excepted)
 *
 * Each is a closed error: the event fails, whatever its failure mode. The record is itself a file the
 * agents could write; what that allows, and what the leader does to make it visible, is in
 * docs/security.md.
 */
import { createHash } from "node:crypto";
import { lstatSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chainDirName, type ChainDiscovery } from "./chain.js";
import { HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import type { TrustErrorKind } from "../contract/hook-run.js";
import { hookCandidatePaths, insecurity } from "./discover.js";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import { mkdirUnder, problemDetail, readRegularBytes, writeJsonAtomic } from "../team/json-file.js";
import { withLock } from "../team/lock.js";
import { leaderStateDir } from "../team/paths.js";

export type TrustProblemKind = TrustErrorKind;

/** One gate as trusted: its content hash and permission bits, and who recorded it when. */
export interface TrustEntry {
  sha256: string;
  /** `st_mode & 0o7777`. */
  mode: number;
  size: number;
  trustedAt: string;
  /** `user@host (pid N, how)`: for people; anyone who can write the file can write this too. */
  trustedBy: string;
}

export interface TrustRecord {
  version: 1;
  gates: Record<string, TrustEntry>;
}

export function trustFile(teamDir: string): string {
  return path.join(leaderStateDir(teamDir), "trust.json");
}

export function trustedCopyFile(teamDir: string, sha256: string): string {
  return path.join(leaderStateDir(teamDir), "trusted", sha256);
}

// ---------------------------------------------------------------------------------------------
// The record on disk

export type TrustRead =
  | { state: "none" }
  | { state: "ok"; record: TrustRecord }
  | { state: "invalid"; problem: string };

/** Hook files and the record are small; anything bigger is not one of ours. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/** Reads the trust record. A missing file is `none`; anything unreadable or malformed is `invalid`. */
export function readTrust(teamDir: string): TrustRead {
  const file = trustFile(teamDir);
  const read = readRegular(file);
  if (read.kind === "missing") return { state: "none" };
  if (read.kind === "problem") return { state: "invalid", problem: `${file}: ${read.problem}` };
  let value: unknown;
  try {
    value = JSON.parse(read.bytes.toString("utf8"));
  } catch (error) {
    return { state: "invalid", problem: `${file}: invalid JSON (${describeError(error)})` };
  }
  const record = asRecord(value);
  return record ? { state: "ok", record } : { state: "invalid", problem: `${file}: not a trust record (expected {"version": 1, "gates": {…}})` };
}

function asRecord(value: unknown): TrustRecord | null {
  if (value === null || typeof value !== "object") return null;
  const { version, gates } = value as { version?: unknown; gates?: unknown };
  if (version !== 1 || gates === null || typeof gates !== "object" || Array.isArray(gates)) return null;
  const out: Record<string, TrustEntry> = {};
  for (const [file, raw] of Object.entries(gates as Record<string, unknown>)) {
    if (raw === null || typeof raw !== "object") return null;
    const e = raw as Record<string, unknown>;
    if (typeof e.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(e.sha256) || !Number.isInteger(e.mode) || !Number.isInteger(e.size)) return null;
    out[file] = {
      sha256: e.sha256,
      mode: e.mode as number,
      size: e.size as number,
      trustedAt: typeof e.trustedAt === "string" ? e.trustedAt : "",
      trustedBy: typeof e.trustedBy === "string" ? e.trustedBy : "",
    };
  }
  return { version: 1, gates: out };
}

/** Replaces entries (an entry of `null` removes the gate from the record), under the record's lock. */
export async function updateTrust(teamDir: string, changes: ReadonlyMap<string, TrustEntry | null>, opts: { replaceInvalid?: boolean } = {}): Promise<TrustRecord> {
  const file = trustFile(teamDir);
  mkdirUnder(teamDir, path.dirname(file));
  return withLock(
    file,
    async () => {
      const current = readTrust(teamDir);
      // A record that cannot be read is not replaced by a partial one: a person decides what it held.
      if (current.state === "invalid" && !opts.replaceInvalid) throw new HooksError("E_CONFIG", `${current.problem}; fix or remove it, then record trust again`);
      const gates: Record<string, TrustEntry> = current.state === "ok" ? { ...current.record.gates } : {};
      for (const [gate, entry] of changes) {
        if (entry === null) delete gates[gate];
        else gates[gate] = entry;
      }
      const record: TrustRecord = { version: 1, gates: Object.fromEntries(Object.entries(gates).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) };
      await writeJsonAtomic(file, record);
      return record;
    },
    { label: "pi-teams-hooks trust" },
  );
}

/** Writes `record` as the whole trust record (the leader's own copy, after its team dir was re-created). */
export async function replaceTrust(teamDir: string, record: TrustRecord): Promise<TrustRecord> {
  const file = trustFile(teamDir);
  mkdirUnder(teamDir, path.dirname(file));
  await withLock(file, () => writeJsonAtomic(file, record), { label: "pi-teams-hooks leader" });
  return record;
}

/** Keeps a copy of trusted content, so that a later change can be shown as a diff. Best effort. */
export function keepTrustedCopy(teamDir: string, sha256: string, content: Buffer): void {
  const file = trustedCopyFile(teamDir, sha256);
  try {
    mkdirUnder(teamDir, path.dirname(file));
    writeFileSync(file, content, { flag: "wx", mode: 0o600 });
  } catch {
    // EEXIST: kept already (the name is the content's hash). Anything else only costs the diff later.
  }
}

/** The copy of trusted content, or null when there is none (recorded before copies were kept, or removed). */
export function readTrustedCopy(teamDir: string, sha256: string): Buffer | null {
  const read = readRegular(trustedCopyFile(teamDir, sha256));
  return read.kind === "ok" ? read.bytes : null;
}

/** Who records trust, for people reading the record. */
export function trustedBy(how: string): string {
  let user = "unknown";
  try {
    user = os.userInfo().username;
  } catch {
    // no passwd entry for this uid (containers): the uid says enough
    user = String(process.getuid?.() ?? "unknown");
  }
  return `${user}@${os.hostname()} (pid ${process.pid}, ${how})`;
}

// ---------------------------------------------------------------------------------------------
// Fingerprints of gate files

export interface Fingerprint {
  sha256: string;
  mode: number;
  size: number;
  uid: number;
  /** The content, only when asked for (to keep a copy). */
  content?: Buffer;
}

const cache = new Map<string, { sig: string; fingerprint: Fingerprint }>();

/**
 * The hash, mode and owner of `file` (symlinks followed), or a problem. A file unchanged since the
 * last look (same inode, size, mtime and ctime: a write or a chmod changes the ctime, which no one
 * but root can set back) is not read again.
 */
export function fingerprint(file: string, opts: { content?: boolean } = {}): Fingerprint | { problem: string } {
  let sig: string;
  try {
    const info = statSync(file);
    sig = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}:${info.mode}:${info.uid}`;
    const known = cache.get(file);
    if (known && known.sig === sig && !opts.content) return known.fingerprint;
  } catch (error) {
    return { problem: `cannot stat (${errnoCode(error) ?? describeError(error)})` };
  }
  const read = readRegular(file);
  if (read.kind !== "ok") return { problem: read.kind === "missing" ? "deleted" : read.problem };
  const fp: Fingerprint = {
    sha256: createHash("sha256").update(read.bytes).digest("hex"),
    mode: read.mode & 0o7777,
    size: read.bytes.length,
    uid: read.uid,
  };
  if (cache.size > 4096) cache.clear();
  cache.set(file, { sig, fingerprint: fp });
  return opts.content ? { ...fp, content: read.bytes } : fp;
}

type Regular = { kind: "ok"; bytes: Buffer; mode: number; uid: number } | { kind: "missing" } | { kind: "problem"; problem: string };

/** Reads a regular file without ever blocking on a FIFO or a device in its place (json-file.ts). */
function readRegular(file: string): Regular {
  const read = readRegularBytes(file, { maxBytes: MAX_FILE_BYTES });
  if (read.ok) return { kind: "ok", bytes: read.bytes, mode: read.stat.mode, uid: read.stat.uid };
  if (read.problem.kind === "missing") return { kind: "missing" };
  return { kind: "problem", problem: problemDetail(read.problem) };
}

// ---------------------------------------------------------------------------------------------
// One event's chain against the record

export interface TrustProblem {
  kind: TrustProblemKind;
  path: string;
  reason: string;
}

/** What changed about one gate since it was trusted (what the lead is told once, and `trust` shows). */
export interface GateChange {
  path: string;
  change: "new" | "changed" | "removed";
  /** The trusted entry, for `changed` and `removed`. */
  trusted: TrustEntry | null;
  /** The file now, for `new` and `changed`. */
  now: Fingerprint | null;
  /** For people: `mode 0755 → 0777`, `deleted`, `disabled by …`. */
  detail: string;
}

export interface ChainTrust {
  /** sha256 of each hook that runs, by path. */
  hashes: Map<string, string>;
  /** Problems in chain order; empty when everything may run. */
  problems: TrustProblem[];
  /** The changes behind the `untrusted_hook`, `gate_missing` and `gate_not_executable` problems. */
  changes: GateChange[];
}

export interface TrustCheckOptions {
  /** null: no record exists yet (nothing is compared; only insecure gates are refused). */
  record: TrustRecord | null;
  /** `--allow-insecure-hooks`. */
  allowInsecure: boolean;
  /** The leader's uid (process.getuid()), or null where there is none. */
  uid: number | null;
}

/**
 * Compares the chain that would run for `event` with the trust record. `layers` are the dirs the chain
 * was discovered in: only trusted gates inside them count (a gate of a hooks dir the leader is not
 * using is not "missing").
 */
export function checkChainTrust(chain: ChainDiscovery, event: HookEventName, layers: { global: string; team: string | null }, opts: TrustCheckOptions): ChainTrust {
  const hashes = new Map<string, string>();
  const problems: TrustProblem[] = [];
  const changes: GateChange[] = [];
  const gates = opts.record?.gates ?? {};
  for (const hook of chain.hooks) {
    const file = hook.hook.hookPath;
    const fp = fingerprint(file);
    if ("problem" in fp) {
      // Gone or unreadable between discovery and now: it cannot run as discovered.
      problems.push({ kind: "gate_missing", path: file, reason: `${file}: ${fp.problem}` });
      continue;
    }
    hashes.set(file, fp.sha256);
    const insecure = opts.allowInsecure ? null : insecurity(fp, opts.uid);
    if (insecure) problems.push({ kind: "insecure_hook", path: file, reason: `${file} is ${insecure}; refused (or: --allow-insecure-hooks)` });
    if (!opts.record) continue;
    const trusted = gates[file];
    if (!trusted) {
      changes.push({ path: file, change: "new", trusted: null, now: fp, detail: "not trusted yet" });
      problems.push({ kind: "untrusted_hook", path: file, reason: `${file} is a new gate, not trusted yet` });
    } else if (trusted.sha256 !== fp.sha256 || trusted.mode !== fp.mode) {
      const detail = describeChange(trusted, fp);
      changes.push({ path: file, change: "changed", trusted, now: fp, detail });
      problems.push({ kind: "untrusted_hook", path: file, reason: `${file} changed since it was trusted (${detail})` });
    }
  }
  if (opts.record) {
    const running = new Set(chain.hooks.map((h) => h.hook.hookPath));
    for (const [file, trusted] of Object.entries(gates)) {
      if (running.has(file) || eventOfGate(file, layers) !== event) continue;
      const why = whyNotRunning(file, chain, layers);
      changes.push({ path: file, change: "removed", trusted, now: null, detail: why.detail });
      problems.push({ kind: why.kind, path: file, reason: `trusted gate ${file} no longer runs: ${why.detail}` });
    }
  }
  return { hashes, problems, changes };
}

/** The event a gate path belongs to, given the two layers; null when it is in neither. */
export function eventOfGate(file: string, layers: { global: string; team: string | null }): HookEventName | null {
  const dir = path.dirname(file);
  const base = path.basename(file);
  const roots = [layers.global, ...(layers.team ? [layers.team] : [])].map((d) => path.resolve(d));
  for (const event of HOOK_EVENTS) {
    for (const root of roots) {
      if (dir === root && hookCandidatePaths(root, event).some((p) => path.basename(p) === base)) return event;
      if (dir === path.join(root, chainDirName(event))) return event;
    }
  }
  return null;
}

function whyNotRunning(file: string, chain: ChainDiscovery, layers: { global: string; team: string | null }): { kind: TrustProblemKind; detail: string } {
  try {
    lstatSync(file);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return { kind: "gate_missing", detail: "deleted" };
  }
  const skip = chain.skipped.find((s) => s.path === file);
  if (skip) return { kind: /not executable/.test(skip.reason) ? "gate_not_executable" : "gate_missing", detail: skip.reason };
  for (const found of [chain.v1.global, chain.v1.team]) {
    const candidate = found?.candidates.find((c) => c.path === file);
    if (candidate?.status === "skipped") return { kind: /not executable/.test(candidate.reason ?? "") ? "gate_not_executable" : "gate_missing", detail: candidate.reason ?? "skipped" };
  }
  // A v1 file not even looked at: an earlier name in the lookup order runs instead.
  const v1 = chain.hooks.find((h) => h.kind === "v1");
  if (v1 && path.dirname(v1.hook.hookPath) === path.dirname(file)) return { kind: "gate_missing", detail: `shadowed by ${v1.hook.hookPath} (earlier in the lookup order)` };
  const layer = path.dirname(file) === path.resolve(layers.global) ? "global" : "team";
  return { kind: "gate_missing", detail: `does not run (${layer} layer)` };
}

function describeChange(trusted: TrustEntry, now: Fingerprint): string {
  const parts: string[] = [];
  if (trusted.sha256 !== now.sha256) parts.push(`sha256 ${trusted.sha256.slice(0, 12)}… → ${now.sha256.slice(0, 12)}…`);
  if (trusted.mode !== now.mode) parts.push(`mode ${octal(trusted.mode)} → ${octal(now.mode)}`);
  return parts.join(", ");
}

export function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

/** A new trust entry for a gate as it is now. */
export function entryFor(fp: Fingerprint, at: string, by: string): TrustEntry {
  return { sha256: fp.sha256, mode: fp.mode, size: fp.size, trustedAt: at, trustedBy: by };
}

// ---------------------------------------------------------------------------------------------
// The record as a running leader (or `run`) holds it

/** One change of the record on disk, for the leader to say: gates approved or removed by someone. */
export interface RecordChange {
  path: string;
  change: "approved" | "removed";
  entry: TrustEntry | null;
}

/**
 * The trust record of a team, re-read whenever its file changes (a `trust` command, or anyone else
 * writing it), with what changed, so that the leader can say it.
 */
export class TrustState {
  readonly teamDir: string;
  /** null: no record (nothing is compared). */
  record: TrustRecord | null = null;
  #sig: string | null = null;

  constructor(teamDir: string) {
    this.teamDir = teamDir;
  }

  /** Reads the file if it changed since the last look; `changes` lists entries added, changed or dropped. */
  refresh(): { read: TrustRead | null; changes: RecordChange[] } {
    const sig = signatureOf(trustFile(this.teamDir));
    if (sig === this.#sig) return { read: null, changes: [] };
    this.#sig = sig;
    const read = readTrust(this.teamDir);
    const before = this.record?.gates ?? {};
    const after = read.state === "ok" ? read.record.gates : {};
    const changes: RecordChange[] = [];
    for (const [file, entry] of Object.entries(after)) {
      const old = before[file];
      if (!old || old.sha256 !== entry.sha256 || old.mode !== entry.mode) changes.push({ path: file, change: "approved", entry });
    }
    for (const file of Object.keys(before)) if (!(file in after)) changes.push({ path: file, change: "removed", entry: null });
    return { read, changes };
  }

  /** Sets the record in force without reading the file (a new record just written, or an empty one enforced). */
  set(record: TrustRecord | null): void {
    this.record = record;
    this.#sig = signatureOf(trustFile(this.teamDir));
  }
}

function signatureOf(file: string): string | null {
  try {
    const info = statSync(file);
    return `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
  } catch {
    return null; // missing (or unreadable): the read says which
  }
}
