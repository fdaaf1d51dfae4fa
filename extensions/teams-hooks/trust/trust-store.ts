/**
 * The trust record on disk (its shape, and the check of a chain against it, are in trust.ts):
 * `hook-state/trust.json`, path → entry, taken on the leader's first start (trust on first use) and
 * by `pi-teams-hooks trust`, and written under its lock; a copy of each trusted content
 * (`hook-state/trusted/<sha256>`), which lets `trust` show what changed; and `TrustState`, the record
 * as a running leader (or `run`) holds it, re-read when its file changes. docs/security.md.
 *
 * The record in the team dir is a file the agents could write. So the record the leader last wrote,
 * or the lead last approved, is also kept outside every team dir, in the user's state directory
 * (`approvedFile`): that copy is the record in force, and `trust.json` is held to it. An entry of
 * `trust.json` the copy does not have was not approved: it is said, and not trusted.
 */
import { createHash } from "node:crypto";
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import { HooksError, describeError } from "../contract/errors.js";
import { mkdirUnder, writeJsonAtomic } from "../team/json-file.js";
import { withLock } from "../team/lock.js";
import { leaderStateDir, userStateDir } from "../team/paths.js";
import { readRegular, type TrustEntry, type TrustRecord } from "./trust.js";

/** The trust record's name in `hook-state/` (a watcher there looks for it). */
export const TRUST_FILE_NAME = "trust.json";

export function trustFile(teamDir: string): string {
  return path.join(leaderStateDir(teamDir), TRUST_FILE_NAME);
}

function trustedCopyFile(teamDir: string, sha256: string): string {
  return path.join(leaderStateDir(teamDir), "trusted", sha256);
}

// ---------------------------------------------------------------------------------------------
// The record on disk

type TrustRead = { state: "none" } | { state: "ok"; record: TrustRecord } | { state: "invalid"; problem: string };

/** Reads the trust record. A missing file is `none`; anything unreadable or malformed is `invalid`. */
export function readTrust(teamDir: string): TrustRead {
  const file = trustFile(teamDir);
  const read = readJson(file);
  if (read.state !== "read") return read;
  const record = asRecord(read.value);
  return record
    ? { state: "ok", record }
    : { state: "invalid", problem: `${file}: not a trust record (expected {"version": 1, "gates": {…}})` };
}

/** A file of JSON: `none` when missing, `invalid` when unreadable or not JSON (the problem names the file). */
function readJson(
  file: string,
): { state: "none" } | { state: "invalid"; problem: string } | { state: "read"; value: unknown } {
  const read = readRegular(file);
  if (read.kind === "missing") return { state: "none" };
  if (read.kind === "problem") return { state: "invalid", problem: `${file}: ${read.problem}` };
  try {
    return { state: "read", value: JSON.parse(read.bytes.toString("utf8")) };
  } catch (error) {
    return { state: "invalid", problem: `${file}: invalid JSON (${describeError(error)})` };
  }
}

function asRecord(value: unknown): TrustRecord | null {
  if (value === null || typeof value !== "object") return null;
  const { version, gates } = value as { version?: unknown; gates?: unknown };
  if (version !== 1 || gates === null || typeof gates !== "object" || Array.isArray(gates)) return null;
  const out: Record<string, TrustEntry> = {};
  for (const [file, raw] of Object.entries(gates as Record<string, unknown>)) {
    if (raw === null || typeof raw !== "object") return null;
    const e = raw as Record<string, unknown>;
    if (
      typeof e.sha256 !== "string" ||
      !/^[0-9a-f]{64}$/.test(e.sha256) ||
      !Number.isInteger(e.mode) ||
      !Number.isInteger(e.size)
    )
      return null;
    // A handler's events (trust.ts): an entry whose list is not one of event names reads as none (every event).
    const events =
      Array.isArray(e.events) && e.events.every((v) => (HOOK_EVENTS as readonly unknown[]).includes(v))
        ? (e.events as HookEventName[])
        : undefined;
    out[file] = {
      sha256: e.sha256,
      mode: e.mode as number,
      size: e.size as number,
      trustedAt: typeof e.trustedAt === "string" ? e.trustedAt : "",
      trustedBy: typeof e.trustedBy === "string" ? e.trustedBy : "",
      events,
      // Only `false` means anything (an optional gate); anything else reads as required, the safe side.
      ...(e.required === false ? { required: false as const } : {}),
    };
  }
  return { version: 1, gates: out };
}

/**
 * Replaces entries (an entry of `null` removes the gate from the record) of the record in force (the
 * approved copy, else `trust.json`), under the record's lock: the approved copy first, then
 * `trust.json`, so that a leader that sees the file change finds it equal to what was approved.
 */
export async function updateTrust(
  teamDir: string,
  changes: ReadonlyMap<string, TrustEntry | null>,
  opts: { replaceInvalid?: boolean; by?: string; env?: Readonly<Record<string, string | undefined>> } = {},
): Promise<TrustRecord> {
  const file = trustFile(teamDir);
  mkdirUnder(teamDir, path.dirname(file));
  return withLock(
    file,
    async () => {
      const current = readTrustInForce(teamDir, opts.env);
      // A record that cannot be read is not replaced by a partial one: a person decides what it held.
      if (current.state === "invalid" && !opts.replaceInvalid)
        throw new HooksError("E_CONFIG", `${current.problem}; fix or remove it, then record trust again`);
      const gates: Record<string, TrustEntry> = current.state === "ok" ? { ...current.record.gates } : {};
      for (const [gate, entry] of changes) {
        if (entry === null) delete gates[gate];
        else gates[gate] = entry;
      }
      const record: TrustRecord = {
        version: 1,
        gates: Object.fromEntries(Object.entries(gates).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
      };
      await writeApproved(teamDir, record, opts.by ?? trustedBy("pi-teams-hooks trust"), opts.env);
      await writeJsonAtomic(file, record);
      return record;
    },
    { label: "pi-teams-hooks trust" },
  );
}

/**
 * Writes `record` as the whole trust record, and as the approved copy (the leader's own record in
 * force, after its team dir or `hook-state/` was created again, or `trust.json` was edited).
 */
export async function replaceTrust(
  teamDir: string,
  record: TrustRecord,
  env?: Readonly<Record<string, string | undefined>>,
): Promise<TrustRecord> {
  const file = trustFile(teamDir);
  mkdirUnder(teamDir, path.dirname(file));
  await withLock(
    file,
    async () => {
      await writeApproved(teamDir, record, trustedBy("the leader, from memory"), env);
      await writeJsonAtomic(file, record);
    },
    { label: "pi-teams-hooks leader" },
  );
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

// ---------------------------------------------------------------------------------------------
// The approved copy, outside the team dir

export { userStateDir } from "../team/paths.js";

/** Where the record approved for `teamDir` is kept: `<state dir>/trust/<sha256 of the team dir's path>.json`. */
export function approvedFile(teamDir: string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  const id = createHash("sha256").update(path.resolve(teamDir)).digest("hex").slice(0, 32);
  return path.join(userStateDir(env), "trust", `${id}.json`);
}

/** The record approved for a team (what the leader last wrote or the lead last approved). */
export function readApproved(
  teamDir: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): TrustRead {
  return readKept(approvedFile(teamDir, env), teamDir, "an approved trust record");
}

/** A record kept outside the team dir for `teamDir` (`{teamDir, record, …}`), else why not. */
function readKept(file: string, teamDir: string, what: string): TrustRead {
  const read = readJson(file);
  if (read.state !== "read") return read;
  const kept = read.value as { teamDir?: unknown; record?: unknown } | null;
  const record = kept && kept.teamDir === path.resolve(teamDir) ? asRecord(kept.record) : null;
  return record ? { state: "ok", record } : { state: "invalid", problem: `${file}: not ${what} of ${teamDir}` };
}

/** Keeps `record` as the one approved for the team (0600, in a 0700 folder of the user's state dir). */
export async function writeApproved(
  teamDir: string,
  record: TrustRecord,
  by: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<void> {
  const file = approvedFile(teamDir, env);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeJsonAtomic(
    file,
    { version: 1, teamDir: path.resolve(teamDir), record, updatedAt: new Date().toISOString(), by },
    { mode: 0o600 },
  );
}

/**
 * The record a leader of this team last held in force, kept beside the approved copy
 * (`<state dir>/trust/<hash>.seen.json`) and written by the leader only: what its next start compares
 * the approved copy with, so that a record approved, or rewritten, while no leader ran is said.
 */
export function seenFile(teamDir: string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  return approvedFile(teamDir, env).replace(/\.json$/, ".seen.json");
}

export function readSeen(teamDir: string, env: Readonly<Record<string, string | undefined>> = process.env): TrustRead {
  return readKept(seenFile(teamDir, env), teamDir, "a trust record");
}

/** Best effort: a seen record not written only makes the next start say less. */
export async function writeSeen(
  teamDir: string,
  record: TrustRecord,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<void> {
  const file = seenFile(teamDir, env);
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeJsonAtomic(
      file,
      { version: 1, teamDir: path.resolve(teamDir), record, updatedAt: new Date().toISOString() },
      { mode: 0o600 },
    );
  } catch {
    /* the next start compares with an older record, or none */
  }
}

/**
 * What changed for one gate between two records, in words: `added (sha256 …)`, `removed`, or each
 * field that differs (`sha256 a… → b…`, `mode 755 → 700`, `required → optional`).
 */
export function entryChange(before: TrustEntry | undefined, after: TrustEntry | undefined): string | null {
  const sha = (e: TrustEntry) => `${e.sha256.slice(0, 12)}…`;
  const need = (e: TrustEntry) => (e.required === false ? "optional" : "required");
  if (!before && !after) return null;
  if (!before && after) return `added (sha256 ${sha(after)}, ${need(after)})`;
  if (before && !after) return "removed";
  if (!before || !after) return null;
  const parts: string[] = [];
  if (before.sha256 !== after.sha256) parts.push(`sha256 ${sha(before)} → ${sha(after)}`);
  if (before.mode !== after.mode) parts.push(`mode ${before.mode.toString(8)} → ${after.mode.toString(8)}`);
  if (need(before) !== need(after)) parts.push(`${need(before)} → ${need(after)}`);
  return parts.length > 0 ? parts.join(", ") : null;
}

/**
 * The record in force for a team, as the leader holds it: the approved copy when there is one, else
 * `trust.json` (a team whose leader never ran on this account, or one recorded before copies were
 * kept). `trust` and `run` compare gates with it.
 */
export function readTrustInForce(
  teamDir: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): TrustRead & { source: "approved" | "file" } {
  const approved = readApproved(teamDir, env);
  if (approved.state === "ok") return { ...approved, source: "approved" };
  return { ...readTrust(teamDir), source: "file" };
}

/** How `file` differs from `approved`, entry by entry: added or changed (`approved` in its words) and removed. */
export function recordDiff(approved: TrustRecord, file: TrustRecord): RecordChange[] {
  const changes: RecordChange[] = [];
  for (const [gate, entry] of Object.entries(file.gates)) {
    // `required` too (entryChange compares it): an entry made optional by hand in trust.json would let
    // a team drop a required gate.
    if (entryChange(approved.gates[gate], entry) !== null) changes.push({ path: gate, change: "approved", entry });
  }
  for (const gate of Object.keys(approved.gates))
    if (!(gate in file.gates)) changes.push({ path: gate, change: "removed", entry: null });
  return changes;
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
      if (!old || old.sha256 !== entry.sha256 || old.mode !== entry.mode)
        changes.push({ path: file, change: "approved", entry });
    }
    for (const file of Object.keys(before))
      if (!(file in after)) changes.push({ path: file, change: "removed", entry: null });
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
