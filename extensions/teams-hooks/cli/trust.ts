/**
 * `pi-teams-hooks trust`: shows every gate that changed, appeared or stopped running since it was
 * trusted (old and new hash, and a diff for text files and for handler definitions), and with `--all`
 * or paths (a handler by its gate name, `http:ci`), records the change in `hook-state/trust.json`, so
 * that the leader runs those gates again.
 */
import path from "node:path";
import { discoverChains, isHandlerGate } from "../runner/chain.js";
import { handlerGateName, type HandlerDef } from "../settings/handlers.js";
import { type CliIo, type ParsedArgs, paint, str, wantsColour } from "./io.js";
import type { HookEventName } from "../contract/contract.js";
import { HooksError } from "../contract/errors.js";
import { resolveTeamSetup } from "../team/setup.js";
import { looksLikeText, unifiedDiff } from "../text/diff.js";
import { type GateChange, type TrustEntry, type TrustRecord, checkChainTrust, entryFor, fingerprint, handlerDefinitionText, handlerFingerprint, octal } from "../runner/trust.js";
import { keepTrustedCopy, readTrust, readTrustedCopy, trustFile, trustedBy, updateTrust } from "../runner/trust-store.js";

interface Shown extends GateChange {
  /** The first of `events`. */
  event: HookEventName;
  /** The events whose chains show the change (a handler's change shows in each of its events, once here). */
  events: HookEventName[];
  diff: string[] | null;
  /** The handler as declared now, for a handler's `new` or `changed`. */
  handler: HandlerDef | null;
}

export async function trustCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  const all = v.all === true;
  if (all && args.positionals.length > 0) throw new HooksError("E_USAGE", "give --all or paths, not both");
  const setup = await resolveTeamSetup({ teamDir: str(v["team-dir"]), team: str(v.team), hooksDir: str(v["hooks-dir"]), env: io.env, processCwd: io.cwd });
  const { teamDir } = setup.identity;
  const read = readTrust(teamDir);
  const selecting = all || args.positionals.length > 0;
  if (read.state === "invalid" && !all) throw new HooksError("E_CONFIG", `${read.problem}; fix or remove it, or record every gate anew with --all`);
  if (read.state === "invalid") io.stderr(`warning: ${read.problem}: replaced by a record of the gates as they are now (--all)\n`);
  const record: TrustRecord = read.state === "ok" ? read.record : { version: 1, gates: {} };

  const changes = await findChanges(setup.hooksDir, setup.teamHooksDir, setup.settings.handlers, record, teamDir);
  const named = args.positionals.map((p) => (isHandlerGate(p) ? p : path.resolve(io.cwd, p)));
  const chosen = selecting ? choose(changes, all, named, teamDir) : [];

  let recorded: Shown[] = [];
  if (chosen.length > 0) recorded = await record_(teamDir, chosen, read.state === "invalid");

  if (v.json) {
    io.stdout(`${JSON.stringify({ teamDir, trustFile: trustFile(teamDir), changes: changes.map(jsonChange), recorded: recorded.map((c) => c.path) })}\n`);
  } else {
    const colour = wantsColour(io);
    if (changes.length === 0) {
      io.stdout(`every gate of ${teamDir} is trusted as it is (${Object.keys(record.gates).length} gate(s) in ${trustFile(teamDir)})\n`);
    }
    for (const change of changes) io.stdout(renderChange(change, colour));
    if (recorded.length > 0) io.stdout(`recorded ${recorded.length} change(s) in ${trustFile(teamDir)}: a running leader uses them from its next event\n`);
    else if (changes.length > 0) {
      io.stdout(`${changes.length} change(s) not trusted: their events are held until approved: pi-teams-hooks trust --team-dir ${teamDir} --all (or name the paths)\n`);
    }
  }
  return changes.length > recorded.length ? 1 : 0;
}

/**
 * Every change of every event's chain against the record, in event order. A file belongs to one
 * event; a handler to several, and its change is one change (shown once, recorded once): `new` or
 * `changed` when it still runs for some event (its entry then holds its events now), else `removed`.
 */
async function findChanges(hooksDir: string, teamHooksDir: string, handlers: readonly HandlerDef[], record: TrustRecord, teamDir: string): Promise<Shown[]> {
  const out: Shown[] = [];
  const layers = { global: path.resolve(hooksDir), team: path.resolve(teamHooksDir) };
  for (const { event, chain } of await discoverChains(hooksDir, teamHooksDir, handlers)) {
    const check = checkChainTrust(chain, event, layers, { record, allowInsecure: true, uid: null });
    for (const change of check.changes) {
      const handler = isHandlerGate(change.path) ? (handlers.find((h) => handlerGateName(h.name) === change.path) ?? null) : null;
      const same = out.find((c) => c.path === change.path);
      if (same) {
        same.events.push(event);
        if (same.change === "removed" && change.change !== "removed") Object.assign(same, { ...change, event: same.event, events: same.events, diff: diffOf(change, teamDir, handler), handler });
        continue;
      }
      out.push({ ...change, event, events: [event], diff: diffOf(change, teamDir, handler), handler });
    }
  }
  return out;
}

function diffOf(change: GateChange, teamDir: string, handler: HandlerDef | null): string[] | null {
  if (change.change !== "changed" || !change.trusted || change.trusted.sha256 === change.now?.sha256) return null;
  const before = readTrustedCopy(teamDir, change.trusted.sha256);
  const now = handler ? handlerFingerprint(handler) : fingerprint(change.path, { content: true });
  if (before === null || "problem" in now || !now.content) return ["(no copy of the trusted content was kept: no diff)"];
  if (!looksLikeText(before) || !looksLikeText(now.content)) return ["(binary file: no diff)"];
  return unifiedDiff(before.toString("utf8"), now.content.toString("utf8"), { before: `trusted ${change.trusted.trustedAt}`, after: "now" });
}

function choose(changes: Shown[], all: boolean, paths: string[], teamDir: string): Shown[] {
  if (all) return changes;
  return paths.map((file) => {
    const found = changes.find((c) => c.path === file);
    if (!found) throw new HooksError("E_USAGE", `nothing to trust at ${file}: it is trusted as it is, or it is not a gate of this team (see: pi-teams-hooks trust --team-dir ${teamDir})`);
    return found;
  });
}

/** Records the chosen changes, each as it was shown: a gate that changed again meanwhile is refused. */
async function record_(teamDir: string, chosen: Shown[], replaceInvalid: boolean): Promise<Shown[]> {
  const entries = new Map<string, TrustEntry | null>();
  const at = new Date().toISOString();
  const by = trustedBy("pi-teams-hooks trust");
  for (const change of chosen) {
    if (change.change === "removed") {
      entries.set(change.path, null);
      continue;
    }
    const fp = change.handler ? handlerFingerprint(change.handler) : fingerprint(change.path, { content: true });
    if ("problem" in fp || fp.sha256 !== change.now?.sha256 || fp.mode !== change.now.mode) {
      throw new HooksError("E_USAGE", `${change.path} changed again while it was shown: nothing recorded; run pi-teams-hooks trust again`);
    }
    entries.set(change.path, entryFor(fp, at, by, change.handler?.events));
    if (fp.content) keepTrustedCopy(teamDir, fp.sha256, fp.content);
  }
  await updateTrust(teamDir, entries, { replaceInvalid });
  return chosen;
}

function renderChange(change: Shown, colour: boolean): string {
  const word = change.change.padEnd(8);
  const head = `${paint(word, change.change === "removed" ? "red" : "yellow", colour)} ${change.path} (${change.events.join(", ")})`;
  // A handler has no mode: its definition is all there is.
  const mode = (m: number): string => (isHandlerGate(change.path) ? "" : ` mode ${octal(m)}`);
  const lines: string[] = [];
  if (change.change === "new" && change.now) lines.push(`${head}: sha256 ${change.now.sha256}${mode(change.now.mode).replace(" mode", ", mode")}`);
  else if (change.change === "removed") lines.push(`${head}: ${change.detail}; trusted since ${change.trusted?.trustedAt ?? "?"}`);
  else lines.push(`${head}: ${change.detail}`);
  if (change.change === "changed" && change.trusted && change.now) {
    lines.push(`         trusted ${change.trusted.sha256}${mode(change.trusted.mode)} (${change.trusted.trustedAt} by ${change.trusted.trustedBy || "unknown"})`);
    lines.push(`         now     ${change.now.sha256}${mode(change.now.mode)}`);
  }
  // A new handler is shown whole: what is about to be trusted.
  if (change.change === "new" && change.handler) for (const line of handlerDefinitionText(change.handler).trimEnd().split("\n")) lines.push(`         ${line}`);
  for (const line of change.diff ?? []) {
    const painted = line.startsWith("+") && !line.startsWith("+++") ? paint(line, "green", colour) : line.startsWith("-") && !line.startsWith("---") ? paint(line, "red", colour) : line;
    lines.push(`         ${painted}`);
  }
  return `${lines.join("\n")}\n`;
}

function jsonChange(change: Shown): Record<string, unknown> {
  return {
    path: change.path,
    event: change.event,
    events: change.events,
    change: change.change,
    detail: change.detail,
    trusted: change.trusted,
    now: change.now ? { sha256: change.now.sha256, mode: change.now.mode, size: change.now.size } : null,
    diff: change.diff,
  };
}
