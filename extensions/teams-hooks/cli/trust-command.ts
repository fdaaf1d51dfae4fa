/**
 * `pi-teams-hooks trust`: shows every gate that changed, appeared or stopped running since it was
 * trusted (old and new hash, and a diff for text files and for handler definitions), and with `--all`
 * or paths (a handler by its gate name, `http:ci`), records the change — the approved copy outside the
 * team dir, then `hook-state/trust.json` — so that the leader runs those gates again.
 *
 * An approval is a person's: at a terminal it is shown and asked for (`[y/N]`); without one it needs
 * `--yes`, and says so; pi's `/gates trust` is typed by the person in the session. Every approval is
 * told to the lead's inbox, saying which of the three it was.
 */
import path from "node:path";
import { type ChainHook, discoverChains, gateKey, isBindingGate, isHandlerGate } from "../gates/chain.js";
import { handlerGateName, type HandlerDef } from "../settings/handlers.js";
import { type CliIo, type ParsedArgs, paint, personApproval, runtimeOf, str, wantsColour } from "./io.js";
import type { Runtime } from "../runner/runtime.js";
import type { HookEventName } from "../contract/contract.js";
import { HooksError, unreachable } from "../contract/errors.js";
import { type TeamSetup, resolveTeamSetup } from "../team/setup.js";
import { looksLikeText, unifiedDiff } from "../text/diff.js";
import {
  type GateChange,
  type TrustEntry,
  type TrustRecord,
  checkChainTrust,
  entryFor,
  fingerprint,
  gateFingerprint,
  gateRequired,
  bindingRecordText,
  handlerDefinitionText,
  handlerFingerprint,
  octal,
} from "../trust/trust.js";
import {
  keepTrustedCopy,
  readTrust,
  readTrustInForce,
  readTrustedCopy,
  recordDiff,
  replaceTrust,
  trustFile,
  trustedBy,
  updateTrust,
} from "../trust/trust-store.js";
import type { SettingChange } from "../settings/weakening.js";
import { loadTeamConfig } from "../team/config-file.js";
import { writeApprovedSettings } from "../team/approved-settings.js";
import { approvalNoteId } from "../leader/gate-trust.js";
import { sendOnce } from "../event/remediate.js";
import { sentId } from "../team/sent-log.js";
import type { TeamIdentity } from "../contract/team-files.js";
import type { HookCommand } from "../contract/hook-run.js";
import { gateFileSyntaxError } from "../runner/syntax.js";
import { gateSyntaxMessage } from "../text/messages.js";
import { allHandlers } from "../gates/global-handlers.js";

interface Shown extends GateChange {
  /** The first of `events`. */
  event: HookEventName;
  /** The events whose chains show the change (a handler's change shows in each of its events, once here). */
  events: HookEventName[];
  diff: string[] | null;
  /** The handler as declared now, for a handler's `new` or `changed`. */
  handler: HandlerDef | null;
  /** How the gate file starts now (null: a handler, or a gate no longer there). */
  command: HookCommand | null;
  /** A file binding as it runs now, for its `new` or `changed`: its record and file are trusted together. */
  bound: ChainHook | null;
}

export async function trustCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  const all = v.all === true;
  if (all && args.positionals.length > 0) throw new HooksError("E_USAGE", "give --all or paths, not both");
  const setup = await resolveTeamSetup({
    teamDir: str(v["team-dir"]),
    team: str(v.team),
    hooksDir: str(v["hooks-dir"]),
    env: io.env,
    processCwd: io.cwd,
  });
  const { teamDir } = setup.identity;
  const read = readTrustInForce(teamDir, io.env);
  // trust.json edited by anything but this command: what it says that was not approved is shown, never taken.
  const file = readTrust(teamDir);
  const unapproved =
    read.source === "approved" && read.state === "ok" && file.state === "ok"
      ? recordDiff(read.record, file.record)
      : [];
  const selecting = all || args.positionals.length > 0;
  if (read.state === "invalid" && !all)
    throw new HooksError("E_CONFIG", `${read.problem}; fix or remove it, or record every gate anew with --all`);
  if (read.state === "invalid")
    io.stderr(`warning: ${read.problem}: replaced by a record of the gates as they are now (--all)\n`);
  const record: TrustRecord = read.state === "ok" ? read.record : { version: 1, gates: {} };

  const changes = await findChanges(setup, record, teamDir);
  // `settings`: the changes of config.json held for approval (settings/weakening.ts), approved together.
  const gatePaths = args.positionals.filter((p) => p !== SETTINGS_WORD);
  const named = gatePaths.map((p) => (isHandlerGate(p) || isBindingGate(p) ? p : path.resolve(io.cwd, p)));
  const chosen = selecting && (all || gatePaths.length > 0) ? choose(changes, all, named, teamDir) : [];
  const held = setup.heldSettings;
  const settingsChosen = held.length > 0 && (all || args.positionals.includes(SETTINGS_WORD));
  if (!v.json) for (const c of held) io.stdout(renderSetting(c, wantsColour(io)));
  if (settingsChosen && chosen.length === 0) {
    const how = await approval(io, v.yes === true, held.length);
    if (how === null) {
      io.stdout(`not recorded: ${held.length} change(s) of the settings not approved\n`);
      return 1;
    }
    await approveSettings(teamDir, io.env, how, held.length);
    io.stdout(
      `approved ${held.length} change(s) of ${setup.configFile} (${how}): a running leader uses them from now on\n`,
    );
    await tellLeadSettings(runtimeOf(io), setup.identity, held, how);
    return changes.length > 0 ? 1 : 0;
  }

  let recorded: Shown[] = [];
  let how: string | null = null;
  let unparsed: Array<{ path: string; error: string }> = [];
  if (chosen.length > 0) {
    for (const change of chosen) if (!v.json) io.stdout(renderChange(change, wantsColour(io)));
    how = await approval(io, v.yes === true, chosen.length);
    if (how === null) {
      io.stdout(`not recorded: ${chosen.length} change(s) not approved\n`);
      return 1;
    }
    recorded = await record_(
      teamDir,
      chosen,
      read.state === "invalid",
      trustedBy(`pi-teams-hooks trust, ${how}`),
      io.env,
    );
    await tellLead(runtimeOf(io), setup.identity, recorded, how);
    unparsed = await reportUnparsed(setup.identity, recorded, io);
    if (settingsChosen) {
      await approveSettings(teamDir, io.env, how, held.length);
      if (!v.json)
        io.stdout(
          `approved ${held.length} change(s) of ${setup.configFile} (${how}): a running leader uses them from now on\n`,
        );
      await tellLeadSettings(runtimeOf(io), setup.identity, held, how);
    }
  }

  if (v.json) {
    const out = {
      teamDir,
      trustFile: trustFile(teamDir),
      changes: changes.map(jsonChange),
      recorded: recorded.map((c) => c.path),
      unparsed,
    };
    io.stdout(`${JSON.stringify(out)}\n`);
  } else {
    const colour = wantsColour(io);
    if (changes.length === 0) {
      io.stdout(
        `every gate of ${teamDir} is trusted as it is (${Object.keys(record.gates).length} gate(s) in ${trustFile(teamDir)})\n`,
      );
    }
    for (const change of unapproved) {
      const what =
        change.change === "removed"
          ? "removed from it"
          : `written as trusted (sha256 ${change.entry?.sha256.slice(0, 12) ?? "?"}…)`;
      io.stdout(
        `${paint("edited  ", "red", colour)} ${trustFile(teamDir)}: ${change.path} ${what}, not through this command: not approved, not trusted\n`,
      );
    }
    // The chosen ones were shown before the question.
    for (const change of changes) if (!chosen.includes(change)) io.stdout(renderChange(change, colour));
    if (recorded.length > 0)
      io.stdout(
        `recorded ${recorded.length} change(s) in ${trustFile(teamDir)} (approved ${how}): a running leader runs the events they held at once, and uses them from now on\n`,
      );
    else if (changes.length > 0) {
      io.stdout(
        `${changes.length} change(s) not trusted: their events are held until approved: pi-teams-hooks trust --team-dir ${teamDir} --all (or name the paths)\n`,
      );
    }
  }
  return changes.length > recorded.length || (held.length > 0 && !settingsChosen) ? 1 : 0;
}

/** The word that names the held changes of config.json among `trust`'s paths. */
const SETTINGS_WORD = "settings";

/** One held change of config.json, as `trust` shows it. */
function renderSetting(c: SettingChange, colour: boolean): string {
  return `${paint("settings", "yellow", colour)} ${c.path}: ${c.from} → ${c.to} (can weaken a gate's verdict; held until approved: pi-teams-hooks trust settings)\n`;
}

/**
 * Records config.json's settings as they are now as approved, and rewrites the trust record as it is, so
 * that a running leader (which watches it) reads its settings again at once.
 */
async function approveSettings(teamDir: string, env: CliIo["env"], how: string, count: number): Promise<void> {
  const config = await loadTeamConfig(teamDir);
  await writeApprovedSettings(
    teamDir,
    config.hooks,
    trustedBy(`pi-teams-hooks trust, ${how}, ${count} change(s)`),
    env,
  );
  const current = readTrustInForce(teamDir, env);
  if (current.state === "ok") await replaceTrust(teamDir, current.record);
}

/** Tells the lead, once per approval, which settings changed (the reason a verdict may now differ). */
async function tellLeadSettings(
  runtime: Runtime,
  identity: TeamIdentity,
  held: readonly SettingChange[],
  how: string,
): Promise<void> {
  const changes = held.map((c) => `${c.path} ${c.from} → ${c.to}`).join("; ");
  const text = `pi-teams-hooks: ${held.length} change(s) of config.json approved (${how}): ${changes}`;
  await noteToLead(runtime, identity, sentId("settings-approved", changes, identity.leadName), text);
}

/**
 * Every change of every event's chain against the record, in event order. A file belongs to one
 * event; a handler to several, and its change is one change (shown once, recorded once): `new` or
 * `changed` when it still runs for some event (its entry then holds its events now), else `removed`.
 */
async function findChanges(setup: TeamSetup, record: TrustRecord, teamDir: string): Promise<Shown[]> {
  const { hooksDir, teamHooksDir } = setup;
  const { handlers } = setup.settings;
  const out: Shown[] = [];
  const layers = { global: path.resolve(hooksDir), team: path.resolve(teamHooksDir) };
  const known = allHandlers(hooksDir, handlers);
  for (const { event, chain } of await discoverChains(hooksDir, teamHooksDir, handlers)) {
    const participation = setup.settings.events[event].participation.value;
    const check = checkChainTrust(chain, event, layers, { record, allowInsecure: true, uid: null, participation });
    for (const change of check.changes) {
      const bound = chain.hooks.find((h) => h.kind === "http" && h.hook.hookPath === change.path);
      const handler = isHandlerGate(change.path)
        ? ((bound?.kind === "http" ? bound.handler : null) ??
          known.find((h) => handlerGateName(h.name) === change.path) ??
          null)
        : null;
      const binding = chain.hooks.find((h) => h.kind === "binding" && gateKey(h) === change.path);
      const boundNow = change.change !== "removed" && binding ? binding : null;
      const same = out.find((c) => c.path === change.path);
      if (same) {
        same.events.push(event);
        if (same.change === "removed" && change.change !== "removed")
          Object.assign(same, {
            ...change,
            event: same.event,
            events: same.events,
            diff: diffOf(change, teamDir, handler, boundNow),
            handler,
            command: boundNow?.hook ?? null,
            bound: boundNow,
          });
        continue;
      }
      const file = chain.hooks.find((h) => h.kind !== "http" && gateKey(h) === change.path);
      const command = change.change !== "removed" && file ? file.hook : null;
      const diff = diffOf(change, teamDir, handler, boundNow);
      out.push({ ...change, event, events: [event], diff, handler, command, bound: boundNow });
    }
  }
  return out;
}

function diffOf(
  change: GateChange,
  teamDir: string,
  handler: HandlerDef | null,
  bound: ChainHook | null,
): string[] | null {
  if (change.change !== "changed" || !change.trusted || change.trusted.sha256 === change.now?.sha256) return null;
  const before = readTrustedCopy(teamDir, change.trusted.sha256);
  const now = nowFingerprint(change.path, handler, bound);
  if (before === null || "problem" in now || !now.content)
    return ["(no copy of the trusted content was kept: no diff)"];
  if (!looksLikeText(before) || !looksLikeText(now.content)) return ["(binary file: no diff)"];
  return unifiedDiff(before.toString("utf8"), now.content.toString("utf8"), {
    before: `trusted ${change.trusted.trustedAt}`,
    after: "now",
  });
}

/** What a change's gate is now: a handler's definition, a file binding's record and file, or a file. */
function nowFingerprint(
  gate: string,
  handler: HandlerDef | null,
  bound: ChainHook | null,
): ReturnType<typeof gateFingerprint> {
  if (handler) return handlerFingerprint(handler);
  if (bound) return gateFingerprint(bound, { content: true });
  return isBindingGate(gate) ? { problem: "the binding no longer runs" } : fingerprint(gate, { content: true });
}

function choose(changes: Shown[], all: boolean, paths: string[], teamDir: string): Shown[] {
  if (all) return changes;
  return paths.map((file) => {
    const found = changes.find((c) => c.path === file);
    if (!found)
      throw new HooksError(
        "E_USAGE",
        `nothing to trust at ${file}: it is trusted as it is, or it is not a gate of this team (see: pi-teams-hooks trust --team-dir ${teamDir})`,
      );
    return found;
  });
}

/** How a person approves the changes just shown (cli/io.ts `personApproval`), or null, saying what it would need. */
async function approval(io: CliIo, yes: boolean, count: number): Promise<string | null> {
  const answer = await personApproval(io, yes, `Approve ${count} change(s) as trusted? [y/N] `);
  switch (answer.kind) {
    case "approved":
      return answer.how;
    case "declined":
      return null;
    case "no_terminal":
      io.stderr(
        "pi-teams-hooks trust: approving a gate is a person's act: run it at a terminal (it asks), or give --yes to approve without one (the lead's inbox is told so)\n",
      );
      return null;
    default:
      return unreachable(answer);
  }
}

/**
 * The gates just trusted whose own file does not parse (runner/syntax.ts): said at once, naming the
 * author's file and line, on stderr and to the lead; trusted all the same (the approval is the lead's),
 * their events are held (`E_GATE_SYNTAX`) until the file is fixed.
 */
async function reportUnparsed(
  identity: TeamIdentity,
  recorded: Shown[],
  io: CliIo,
): Promise<Array<{ path: string; error: string }>> {
  const out: Array<{ path: string; error: string }> = [];
  for (const change of recorded) {
    if (!change.command) continue;
    const error = await gateFileSyntaxError(change.command);
    if (error === null) continue;
    out.push({ path: change.path, error });
    io.stderr(`warning: trusted, but ${gateSyntaxMessage(error)}\n`);
    await noteToLead(
      runtimeOf(io),
      identity,
      sentId("gate-syntax", `${change.path}:${change.now?.sha256 ?? ""}`, identity.leadName),
      `pi-teams-hooks: ${change.path} was trusted, but ${gateSyntaxMessage(error)}`,
    );
  }
  return out;
}

/** Each approval to the lead's inbox, once (the running leader, seeing the record change, sends the same note). */
async function tellLead(runtime: Runtime, identity: TeamIdentity, recorded: Shown[], how: string): Promise<void> {
  const by = trustedBy(`pi-teams-hooks trust, ${how}`);
  for (const change of recorded) {
    const sha = change.change === "removed" ? null : (change.now?.sha256 ?? null);
    const what =
      change.change === "removed"
        ? `trust record: ${change.path} removed (its absence is approved)`
        : `trust record: ${change.path} approved (sha256 ${sha?.slice(0, 12) ?? "?"}…, by ${by})`;
    await noteToLead(runtime, identity, approvalNoteId(change.path, sha, identity.leadName), `pi-teams-hooks: ${what}`);
  }
}

/**
 * One note of a person's act (an approval, a decision) to the lead's inbox, once for its `id` (the sent
 * log): what an agent did in the lead's name is always told. Returns why it was not sent, or null.
 */
export async function noteToLead(
  runtime: Runtime,
  identity: TeamIdentity,
  id: string,
  text: string,
): Promise<string | null> {
  const sent = await sendOnce(runtime.sentLog(identity.teamDir), {
    teamDir: identity.teamDir,
    namespace: "team",
    to: identity.leadName,
    id,
    message: {
      from: "pi-teams-hooks",
      text,
      timestamp: runtime.now().toISOString(),
      read: false,
      qualityGateNoteId: id,
    },
    isIt: (m) => m.qualityGateNoteId === id,
  });
  return sent.error ?? null;
}

/** Records the chosen changes, each as it was shown: a gate that changed again meanwhile is refused. */
async function record_(
  teamDir: string,
  chosen: Shown[],
  replaceInvalid: boolean,
  by: string,
  env: CliIo["env"],
): Promise<Shown[]> {
  const entries = new Map<string, TrustEntry | null>();
  const at = new Date().toISOString();
  for (const change of chosen) {
    if (change.change === "removed") {
      entries.set(change.path, null);
      continue;
    }
    const fp = nowFingerprint(change.path, change.handler, change.bound);
    if ("problem" in fp || fp.sha256 !== change.now?.sha256 || fp.mode !== change.now.mode) {
      throw new HooksError(
        "E_USAGE",
        `${change.path} changed again while it was shown: nothing recorded; run pi-teams-hooks trust again`,
      );
    }
    const bound = change.bound?.kind === "binding" ? change.bound.bound : undefined;
    const required =
      change.handler || bound || !fp.content ? true : gateRequired(fp.content, change.path, change.event);
    entries.set(change.path, entryFor(fp, at, by, change.handler?.events ?? bound?.events, required));
    if (fp.content) keepTrustedCopy(teamDir, fp.sha256, fp.content);
  }
  await updateTrust(teamDir, entries, { replaceInvalid, by, env });
  return chosen;
}

function renderChange(change: Shown, colour: boolean): string {
  const word = change.change.padEnd(8);
  const head = `${paint(word, change.change === "removed" ? "red" : "yellow", colour)} ${change.path} (${change.events.join(", ")})`;
  // A handler has no mode: its definition is all there is.
  const mode = (m: number): string => (isHandlerGate(change.path) ? "" : ` mode ${octal(m)}`);
  const lines: string[] = [];
  if (change.change === "new" && change.now)
    lines.push(`${head}: sha256 ${change.now.sha256}${mode(change.now.mode).replace(" mode", ", mode")}`);
  else if (change.change === "removed")
    lines.push(`${head}: ${change.detail}; trusted since ${change.trusted?.trustedAt ?? "?"}`);
  else lines.push(`${head}: ${change.detail}`);
  if (change.change === "changed" && change.trusted && change.now) {
    lines.push(
      `         trusted ${change.trusted.sha256}${mode(change.trusted.mode)} (${change.trusted.trustedAt} by ${change.trusted.trustedBy || "unknown"})`,
    );
    lines.push(`         now     ${change.now.sha256}${mode(change.now.mode)}`);
  }
  // A new handler is shown whole: what is about to be trusted.
  if (change.change === "new" && change.handler)
    for (const line of handlerDefinitionText(change.handler).trimEnd().split("\n")) lines.push(`         ${line}`);
  // A new file binding: its record, and the file it runs (its content is the file's, shown by `cat`).
  if (change.change === "new" && change.bound?.kind === "binding" && change.bound.bound)
    for (const line of bindingRecordText(change.bound.bound, change.bound.hook.hookPath).trimEnd().split("\n"))
      lines.push(`         ${line}`);
  for (const line of change.diff ?? []) {
    const painted =
      line.startsWith("+") && !line.startsWith("+++")
        ? paint(line, "green", colour)
        : line.startsWith("-") && !line.startsWith("---")
          ? paint(line, "red", colour)
          : line;
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
