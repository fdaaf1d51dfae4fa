/**
 * Trust in gate files by content. The agents a gate judges run as the same user as the leader and
 * can write the hooks dirs, so a gate could be edited, deleted, disabled or shadowed to let work
 * through. The leader keeps, per team, the sha256 and mode of every gate it trusts (a `TrustRecord`;
 * trust-store.ts keeps it on disk). This module holds the record's shape, the fingerprint of a gate
 * file, and the check made before an event runs, which compares its chain with the record:
 *
 *   untrusted_hook       a gate that runs is new, or its content or mode changed since it was trusted
 *   gate_missing         a trusted gate no longer runs: deleted, disabled or replaced through the team
 *                        layer, shadowed by a new file earlier in the lookup order, no longer a file
 *   gate_not_executable  a trusted gate that lost the execute bit it needs
 *   insecure_hook        a gate others could rewrite: world-writable, or owned by another user than
 *                        the leader's (root excepted)
 *
 * Each is a closed error: the event fails, whatever its failure mode. One exception: a global gate
 * trusted as optional (its settings line says `required=false`, so its entry says `required: false`)
 * that the team switches off (`NAME.disabled` in its layer), replaces through its layer, or deletes is
 * no problem: it is `dropped` by the team, said once on the leader's output and in the event's logs,
 * and needs no approval. A required gate gone is `gate_missing` as before, until approved.
 * The record is itself a file the
 * agents could write; what that allows, and what the leader does to make it visible, is in
 * docs/security.md.
 *
 * An HTTP handler (config.json `hooks.handlers`) is a gate too, kept under its gate name (`http:ci`):
 * its "content" is its definition as canonical JSON (`handlerDefinitionText`: URL, events, header
 * names and values, the names of the variables that hold its secrets, never their values, and its
 * method, body template and answer when it declares them), its mode
 * 0. A handler added or changed is `untrusted_hook`, one no longer declared for an event
 * `gate_missing`: an agent that can edit config.json cannot point a gate elsewhere unseen.
 *
 * A gate file bound to events by a binding (gates/bindings.ts) is kept under its gate name
 * (`binding:lint`): its "content" is the binding's record as canonical JSON (`bindingRecordText`: its
 * name, the file it names and where that was found, its events and timeout) followed by the file's
 * bytes, its mode the file's. An edit of the file or of the binding is `untrusted_hook`; a binding
 * removed, or its file gone, is `gate_missing` for the events it was trusted for.
 */
import { createHash } from "node:crypto";
import { lstatSync, statSync } from "node:fs";
import path from "node:path";
import {
  chainDirName,
  gateKey,
  isBindingGate,
  isHandlerGate,
  type ChainDiscovery,
  type ChainHook,
  type FileChainHook,
} from "../gates/chain.js";
import type { Binding } from "../gates/bindings.js";
import { HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import { handlerEnabled, type HandlerDef } from "../settings/handlers.js";
import type { TrustErrorKind } from "../contract/hook-run.js";
import { hookCandidatePaths, insecurity, settingsOfBytes } from "../gates/discover.js";
import { describeError, errnoCode } from "../contract/errors.js";
import { problemDetail, readRegularBytes } from "../team/json-file.js";

type TrustProblemKind = TrustErrorKind;

/** One gate as trusted: its content hash and permission bits, and who recorded it when. */
export interface TrustEntry {
  sha256: string;
  /** `st_mode & 0o7777`. */
  mode: number;
  size: number;
  trustedAt: string;
  /** `user@host (pid N, how)`: for people; anyone who can write the file can write this too. */
  trustedBy: string;
  /** A handler's events when it was trusted: the events for which it going missing is `gate_missing`. */
  events?: HookEventName[];
  /**
   * `false`: the gate was trusted as optional (`required=false` on its settings line, which its hash
   * covers): a team may drop it from its events without an approval. Absent: required.
   */
  required?: false;
}

export interface TrustRecord {
  version: 1;
  gates: Record<string, TrustEntry>;
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

/**
 * A handler's definition as the text its trust hash covers and `trust` shows a diff of: pretty JSON
 * with sorted keys (events sorted too: their order means nothing), empty maps left out. `enabled` is
 * not part of it: switching a handler off or on again needs no approval (it is said in every log
 * instead), while any other change to it does. What a
 * handler that speaks another API adds (docs/ci-gates.md) is there only when it says something: a
 * `method` other than POST, a `body` template (its keys sorted at every level), `answer: "held"`;
 * so a handler that declares none of them keeps the hash it was trusted under.
 */
export function handlerDefinitionText(handler: HandlerDef): string {
  const sorted = (map: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined => {
    const entries = Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return entries.length > 0 ? Object.fromEntries(entries) : undefined;
  };
  const definition = {
    answer: handler.answer === "held" ? handler.answer : undefined,
    body: handler.body === undefined ? undefined : sortedKeys(handler.body),
    events: [...handler.events].sort(),
    headers: sorted(handler.headers),
    method: handler.method !== undefined && handler.method !== "POST" ? handler.method : undefined,
    name: handler.name,
    secretHeaders: sorted(handler.secretHeaders),
    signingSecretEnv: handler.signingSecretEnv,
    timeoutMs: handler.timeoutMs,
    url: handler.url,
  };
  return `${JSON.stringify(definition, null, 2)}\n`;
}

/** A JSON value with the keys of every object in it sorted (lists keep their order: it means something). */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  // fromEntries makes own properties, so a key such as `__proto__` stays in what is hashed.
  return Object.fromEntries(entries.map(([key, item]) => [key, sortedKeys(item)]));
}

/** A handler's fingerprint: the hash of its definition's text (mode 0, no owner: it is not a file). */
export function handlerFingerprint(handler: HandlerDef): Fingerprint {
  const content = Buffer.from(handlerDefinitionText(handler), "utf8");
  return {
    sha256: createHash("sha256").update(content).digest("hex"),
    mode: 0,
    size: content.length,
    uid: -1,
    content,
  };
}

/**
 * A file binding's record as the text its trust hash covers (before the file's bytes) and `trust`
 * shows: pretty JSON with sorted keys, events sorted. Who added it and when are not part of it, nor is
 * `enabled` (switched off or on again without an approval, as a handler is).
 */
export function bindingRecordText(binding: Binding, file: string): string {
  const definition = {
    binding: binding.name,
    events: [...binding.events].sort(),
    file: binding.file,
    path: file,
    timeoutMs: binding.settings?.timeoutMs,
  };
  return `${JSON.stringify(definition, null, 2)}\n`;
}

/**
 * A file binding's fingerprint: the hash of its record's text and the file's bytes together (`bytes`:
 * the file as read for the run), the file's mode and owner.
 */
function bindingFingerprint(
  hook: FileChainHook & { bound: Binding },
  file: Fingerprint & { content: Buffer },
): Fingerprint & { content: Buffer } {
  const head = Buffer.from(`${bindingRecordText(hook.bound, hook.hook.hookPath)}--- ${hook.hook.hookPath} ---\n`);
  const content = Buffer.concat([head, file.content]);
  return {
    sha256: createHash("sha256").update(content).digest("hex"),
    mode: file.mode,
    size: content.length,
    uid: file.uid,
    content,
  };
}

/** The fingerprint of whatever a chain hook runs: its file, its handler's definition, or its binding and file. */
export function gateFingerprint(hook: ChainHook, opts: { content?: boolean } = {}): Fingerprint | { problem: string } {
  if (hook.kind === "binding" && hook.bound) {
    const fp = fingerprint(hook.hook.hookPath, { content: true });
    return "problem" in fp
      ? fp
      : bindingFingerprint({ ...hook, bound: hook.bound }, { ...fp, content: fp.content ?? Buffer.alloc(0) });
  }
  if (hook.kind !== "http") return fingerprint(hook.hook.hookPath, opts);
  return hook.handler ? handlerFingerprint(hook.handler) : { problem: "not declared in config.json hooks.handlers" };
}

/** A gate read once for a run: what is hashed, checked and started is these bytes; or why it cannot be read. */
export type GateSnapshot = (Fingerprint & { content: Buffer }) | { problem: string };

/**
 * Every file gate of a chain read once, by path: the trust check hashes these bytes, the settings
 * line is read from them, and the runner starts a private copy of them (runner/run-hook.ts), so that a
 * rename, a symlink flipped or an edit after the check changes nothing of what runs.
 */
export function snapshotChain(chain: ChainDiscovery): Map<string, GateSnapshot> {
  const out = new Map<string, GateSnapshot>();
  for (const hook of chain.hooks) {
    if (hook.kind === "http" || out.has(hook.hook.hookPath)) continue;
    const fp = fingerprint(hook.hook.hookPath, { content: true });
    out.set(hook.hook.hookPath, "problem" in fp ? fp : { ...fp, content: fp.content ?? Buffer.alloc(0) });
  }
  return out;
}

/** Hook files and the record are small; anything bigger is not one of ours. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

type Regular =
  | { kind: "ok"; bytes: Buffer; mode: number; uid: number }
  | { kind: "missing" }
  | { kind: "problem"; problem: string };

/** Reads a regular file without ever blocking on a FIFO or a device in its place (team/json-file.ts). */
export function readRegular(file: string): Regular {
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

/** A trusted optional global gate the team switched off, replaced or deleted: no problem, only said. */
interface DroppedGate {
  path: string;
  /** `disabled by /t/alpha/hooks/on_idle.sh.disabled`, `deleted`, `replaced by …`. */
  detail: string;
}

export interface ChainTrust {
  /** sha256 of each hook that runs, by path. */
  hashes: Map<string, string>;
  /** Optional global gates dropped by the team (no approval needed): said, never refused. */
  dropped: DroppedGate[];
  /** Problems in chain order; empty when everything may run. */
  problems: TrustProblem[];
  /** The changes behind the `untrusted_hook`, `gate_missing` and `gate_not_executable` problems. */
  changes: GateChange[];
}

interface TrustCheckOptions {
  /** null: no record exists yet (nothing is compared; only insecure gates are refused). */
  record: TrustRecord | null;
  /**
   * The gates as the run will run them (snapshotChain): each read once, its bytes what is hashed here
   * and what the runner starts. Without one, a gate is fingerprinted by its path.
   */
  snapshots?: ReadonlyMap<string, GateSnapshot>;
  /** `--allow-insecure-hooks`. */
  allowInsecure: boolean;
  /** The leader's uid (process.getuid()), or null where there is none. */
  uid: number | null;
  /**
   * The hook point's participation (`hooks.events.<event>.participation`): `both` (default) as each
   * gate's `required=` says; `required`, no global gate may be dropped without an approval;
   * `optional`, any global gate of the event may be.
   */
  participation?: "both" | "required" | "optional";
}

/**
 * Compares the chain that would run for `event` with the trust record. `layers` are the dirs the chain
 * was discovered in: only trusted gates inside them count (a gate of a hooks dir the leader is not
 * using is not "missing").
 */
export function checkChainTrust(
  chain: ChainDiscovery,
  event: HookEventName,
  layers: { global: string; team: string | null },
  opts: TrustCheckOptions,
): ChainTrust {
  const hashes = new Map<string, string>();
  const problems: TrustProblem[] = [];
  const changes: GateChange[] = [];
  const dropped: DroppedGate[] = [];
  const gates = opts.record?.gates ?? {};
  for (const hook of chain.hooks) {
    const file = gateKey(hook);
    if (hook.kind === "http") {
      // A handler switched off runs nothing: it is declared (so not missing), and checked once it is on again.
      if (hook.handler && !handlerEnabled(hook.handler)) hashes.set(file, handlerFingerprint(hook.handler).sha256);
      else if (hook.handler)
        checkHandler(file, handlerFingerprint(hook.handler), opts.record, { hashes, problems, changes });
      continue;
    }
    const fp = hookFingerprint(hook, opts.snapshots);
    // A file binding switched off runs nothing, as a handler switched off: checked once it is on again.
    if (hook.kind === "binding" && hook.bound?.settings?.enabled === false && !("problem" in fp)) {
      hashes.set(file, fp.sha256);
      continue;
    }
    if ("problem" in fp) {
      // Gone or unreadable between discovery and now: it cannot run as discovered.
      problems.push({ kind: "gate_missing", path: file, reason: `${file}: ${fp.problem}` });
      continue;
    }
    hashes.set(file, fp.sha256);
    const insecure = opts.allowInsecure ? null : insecurity(fp, opts.uid);
    // A file binding is named with its file: what the lead looks at.
    const named = hook.kind === "binding" ? `${file} (${hook.hook.hookPath})` : file;
    if (insecure)
      problems.push({
        kind: "insecure_hook",
        path: file,
        reason: `${named} is ${insecure}; refused (or: --allow-insecure-hooks)`,
      });
    if (!opts.record) continue;
    const trusted = gates[file];
    const what = hook.kind === "binding" ? "the binding or its file" : "";
    if (!trusted) {
      changes.push({ path: file, change: "new", trusted: null, now: fp, detail: "not trusted yet" });
      problems.push({ kind: "untrusted_hook", path: file, reason: `${named} is a new gate, not trusted yet` });
    } else if (trusted.sha256 !== fp.sha256 || trusted.mode !== fp.mode) {
      const detail = describeChange(trusted, fp);
      changes.push({ path: file, change: "changed", trusted, now: fp, detail });
      const why = what ? `${what} changed since it was trusted` : "changed since it was trusted";
      problems.push({ kind: "untrusted_hook", path: file, reason: `${named} ${why} (${detail})` });
    }
  }
  if (opts.record) {
    const running = new Set(chain.hooks.map(gateKey));
    for (const [file, trusted] of Object.entries(gates)) {
      if (running.has(file)) continue;
      if (isBindingGate(file) || isHandlerGate(file)) {
        if (!handlerTrustedFor(trusted, event)) continue;
        const binding = isBindingGate(file);
        const skip = binding ? chain.skipped.find((s) => s.path === file) : undefined;
        // Its file runs in this chain already, judged as the file it is (gates/chain.ts): nothing is missing.
        if (skip?.code === "runs_already") continue;
        const detail = binding
          ? (skip?.reason ??
            `not bound to ${event} in the team's hook-state/bindings.json (removed, renamed, or its events changed)`)
          : `not declared for ${event} in config.json hooks.handlers or the hooks dir's handlers.json (removed, renamed, or its events changed)`;
        changes.push({ path: file, change: "removed", trusted, now: null, detail });
        const what = binding ? "binding" : "handler";
        problems.push({
          kind: "gate_missing",
          path: file,
          reason: `trusted ${what} ${file} no longer runs: ${detail}`,
        });
        continue;
      }
      if (eventOfGate(file, layers) !== event) continue;
      const why = whyNotRunning(file, chain, layers);
      const optional =
        opts.participation === "optional" || (opts.participation !== "required" && trusted.required === false);
      if (optional && why.dropped && inLayer(file, layers.global)) {
        dropped.push({ path: file, detail: why.detail });
        continue;
      }
      changes.push({ path: file, change: "removed", trusted, now: null, detail: why.detail });
      problems.push({ kind: why.kind, path: file, reason: `trusted gate ${file} no longer runs: ${why.detail}` });
    }
  }
  return { hashes, problems, changes, dropped };
}

/**
 * A file gate's fingerprint as the run will start it: its snapshot (or the file now); a file binding's
 * of its record and that file together.
 */
function hookFingerprint(
  hook: ChainHook,
  snapshots: ReadonlyMap<string, GateSnapshot> | undefined,
): Fingerprint | { problem: string } {
  const file = hook.hook.hookPath;
  if (hook.kind !== "binding" || !hook.bound) return snapshots?.get(file) ?? fingerprint(file);
  const read = snapshots?.get(file) ?? fingerprint(file, { content: true });
  if ("problem" in read) return read;
  return bindingFingerprint({ ...hook, bound: hook.bound }, { ...read, content: read.content ?? Buffer.alloc(0) });
}

/** Whether a gate file lies in a layer: in its dir, or in one of its `on_<event>.d/` dirs. */
function inLayer(file: string, layer: string): boolean {
  const dir = path.dirname(file);
  const root = path.resolve(layer);
  return dir === root || (path.dirname(dir) === root && dir.endsWith(".d"));
}

/** A handler in the chain against the record: new, or changed since it was trusted. */
function checkHandler(
  gate: string,
  fp: Fingerprint,
  record: TrustRecord | null,
  out: Pick<ChainTrust, "hashes" | "problems" | "changes">,
): void {
  out.hashes.set(gate, fp.sha256);
  if (!record) return;
  const trusted = record.gates[gate];
  if (!trusted) {
    out.changes.push({ path: gate, change: "new", trusted: null, now: fp, detail: "not trusted yet" });
    out.problems.push({ kind: "untrusted_hook", path: gate, reason: `handler ${gate} is new, not trusted yet` });
  } else if (trusted.sha256 !== fp.sha256) {
    const detail = describeChange(trusted, fp);
    out.changes.push({ path: gate, change: "changed", trusted, now: fp, detail });
    out.problems.push({
      kind: "untrusted_hook",
      path: gate,
      reason: `handler ${gate} changed since it was trusted (its definition in config.json hooks.handlers: ${detail})`,
    });
  }
}

/**
 * Whether a handler's trust entry covers `event`: the events it names, or, for an entry without
 * events, every event of the contract — the safe reading — except `task_started`, which came later:
 * such an entry was written before a start gate could exist, and reading it as one would deny every
 * claim as `gate_missing`.
 */
export function handlerTrustedFor(entry: Pick<TrustEntry, "events">, event: HookEventName): boolean {
  return entry.events ? entry.events.includes(event) : event !== "task_started";
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

/**
 * Why a trusted gate does not run, and `dropped` when it is an act a team may take on an optional gate:
 * deleted, switched off by its layer's `NAME.disabled`, or replaced by its layer's file of that name.
 */
function whyNotRunning(
  file: string,
  chain: ChainDiscovery,
  layers: { global: string; team: string | null },
): { kind: TrustProblemKind; detail: string; dropped?: true } {
  try {
    lstatSync(file);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return { kind: "gate_missing", detail: "deleted", dropped: true };
  }
  const skip = chain.skipped.find((s) => s.path === file);
  const byTheTeam = skip?.code === "disabled" || skip?.code === "replaced";
  if (skip && byTheTeam) return { kind: "gate_missing", detail: skip.reason, dropped: true };
  if (skip)
    return { kind: /not executable/.test(skip.reason) ? "gate_not_executable" : "gate_missing", detail: skip.reason };
  for (const found of [chain.v1.global, chain.v1.team]) {
    const candidate = found?.candidates.find((c) => c.path === file);
    if (candidate?.status === "skipped")
      return {
        kind: /not executable/.test(candidate.reason ?? "") ? "gate_not_executable" : "gate_missing",
        detail: candidate.reason ?? "skipped",
      };
  }
  // A v1 file not even looked at: an earlier name in the lookup order runs instead.
  const v1 = chain.hooks.find((h) => h.kind === "v1");
  if (v1 && path.dirname(v1.hook.hookPath) === path.dirname(file))
    return { kind: "gate_missing", detail: `shadowed by ${v1.hook.hookPath} (earlier in the lookup order)` };
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

/**
 * A new trust entry for a gate as it is now: a handler's with its events, a file's with `required:
 * false` when its settings line (`gateRequired`) says it is optional.
 */
export function entryFor(
  fp: Fingerprint,
  at: string,
  by: string,
  events?: readonly HookEventName[],
  required = true,
): TrustEntry {
  const optional = required ? {} : { required: false as const };
  return {
    sha256: fp.sha256,
    mode: fp.mode,
    size: fp.size,
    trustedAt: at,
    trustedBy: by,
    events: events && [...events],
    ...optional,
  };
}

/**
 * Whether a gate file's content declares it required: true unless its settings line reads whole and
 * says `required=false` (a line that does not read stops the gate anyway: required, the safe side).
 */
export function gateRequired(content: Buffer, file: string, event: HookEventName): boolean {
  const read = settingsOfBytes(content, event, path.basename(file));
  return !(read.ok && read.settings?.required === false);
}

/** The trust entry of a chain hook of `event` as it is now, or null when it cannot be read (a file gone meanwhile). */
export function entryOf(
  hook: ChainHook,
  at: string,
  by: string,
  event: HookEventName,
): { entry: TrustEntry; content: Buffer | undefined } | null {
  const fp = gateFingerprint(hook, { content: true });
  if ("problem" in fp) return null;
  const events = hook.kind === "http" ? hook.handler?.events : hook.kind === "binding" ? hook.bound?.events : undefined;
  // A binding is the team's own: required, as a handler is.
  const required =
    hook.kind !== "v1" && hook.kind !== "chain"
      ? true
      : !fp.content || gateRequired(fp.content, hook.hook.hookPath, event);
  return { entry: entryFor(fp, at, by, events, required), content: fp.content };
}
