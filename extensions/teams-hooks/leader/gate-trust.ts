/**
 * The leader's side of trust (docs/security.md): the record taken on the first start (trust on first
 * use) or read, re-read before each event when its file changed, and every gate change or insecure
 * gate said once here and once to the lead's inbox.
 *
 * The record in force is the approved copy kept outside the team dir (trust/trust-store.ts
 * `approvedFile`): what the leader last wrote or the lead last approved with `trust`, which writes
 * that copy before `trust.json`. So `trust.json` changed by anything else — an agent, an editor,
 * while the leader runs or while it is stopped — differs from the copy: every differing entry is
 * said (output and the lead's inbox), none of it is trusted, and the file is written back as
 * approved. A record that is gone is written back from the copy; with no copy either, a team whose
 * history shows gates ran before fails closed instead of trusting anew what is there now.
 */
import { isDeepStrictEqual } from "node:util";
import { type ChainDiscovery, discoverChain, gateKey, isBindingGate, isHandlerGate } from "../gates/chain.js";
import {
  type ChainTrust,
  type TrustEntry,
  type TrustRecord,
  entryOf,
  eventOfGate,
  handlerTrustedFor,
  octal,
} from "../trust/trust.js";
import {
  type RecordChange,
  approvedFile,
  entryChange,
  keepTrustedCopy,
  readApproved,
  readSeen,
  readTrust,
  recordDiff,
  replaceTrust,
  trustFile,
  trustedBy,
  updateTrust,
  writeApproved,
  writeSeen,
} from "../trust/trust-store.js";
import { hookLogsDir } from "../team/paths.js";
import type { HookEventName } from "../contract/contract.js";
import { listHookLogs, readHookLog } from "../logs/hook-log.js";
import { sentId } from "../team/sent-log.js";
import { droppedGateText, gateSyntaxMessage } from "../text/messages.js";
import type { HookCommand } from "../contract/hook-run.js";
import { gateFileSyntaxError } from "../runner/syntax.js";
import type { LeaderContext } from "./context.js";
import type { Holds } from "../holds/held-events.js";
import type { Ledger } from "./ledger.js";

/**
 * Recorded once the first start has taken the trust record (trust on first use). A ledger with it and
 * no record at all means the record was removed: every gate is then untrusted, rather than trusted
 * anew as it is now (which is what deleting the record would otherwise buy).
 */
const TRUST_TAKEN_KEY = "leader:trust-taken";

const NOTHING: TrustRecord = Object.freeze({ version: 1, gates: Object.freeze({}) }) as TrustRecord;

/**
 * The trust record at start: the approved copy (`trust.json` held to it), else `trust.json` as it is
 * (kept as the approved copy from now on), else taken from the gates as they are on a first start
 * (trust on first use) — unless the team's history says gates ran here before: then nothing is trusted
 * until the lead approves, loudly.
 */
export async function takeTrust(
  ctx: LeaderContext,
  ledger: Ledger,
  chains: ReadonlyArray<{ event: HookEventName; chain: ChainDiscovery }>,
): Promise<void> {
  const { teamDir } = ctx.setup.identity;
  const env = ctx.opts.env;
  const approved = readApproved(teamDir, env);
  const { read } = ctx.trust.refresh();
  let history: string | null = null;
  if (approved.state === "ok") {
    ctx.trust.set(approved.record);
    sayApprovedWhileStopped(ctx, approved.record);
    await holdFileToApproved(ctx, read, "while no leader ran");
  } else if (approved.state === "invalid") {
    ctx.warn(
      `${approved.problem}: every gate is untrusted (its events are held as untrusted_hook) until the team lead records trust again: pi-teams-hooks trust --team-dir ${teamDir} --all`,
    );
    ctx.trust.set(NOTHING);
  } else if (read?.state === "ok") {
    // A leader that never ran on this account (or kept no copy yet: a version before the copy): the
    // file is all there is. Said loudly when a leader gated this team before: its copy was removed.
    ctx.trust.set(read.record);
    await writeApproved(teamDir, read.record, trustedBy("the leader, from trust.json"), env);
    const taken = `trust record ${trustFile(teamDir)} taken as it is (${Object.keys(read.record.gates).length} gate(s)); from now on the leader holds it to its copy in ${approvedFile(teamDir, env)}`;
    const before = ledger.has(TRUST_TAKEN_KEY)
      ? "the ledger shows a leader took the record before"
      : await gateHistory(teamDir);
    if (before === null) ctx.opts.report({ kind: "info", message: taken });
    else {
      const gates = Object.entries(read.record.gates).map(
        ([gate, e]) => `  ${gate}: sha256 ${e.sha256.slice(0, 12)}…, by ${e.trustedBy || "unknown"}`,
      );
      const text = [
        `${taken}, though ${before}: its approved copy is gone (removed, or kept by a version without one), so what the file says is trusted`,
        ...gates,
        `If you did not approve these: pi-teams-hooks trust --team-dir ${teamDir}`,
      ];
      ctx.warn(text.map((line) => line.trim()).join("; "));
      ctx.notes = ctx.notes.then(() =>
        ctx.tellLead(
          sentId("trust-copy-gone", JSON.stringify(read.record.gates), ctx.setup.identity.leadName),
          `pi-teams-hooks: ${text.join("\n")}`,
          "the lead was not told that the approved trust record was gone",
        ),
      );
    }
  } else if (
    read?.state === "invalid" ||
    ledger.has(TRUST_TAKEN_KEY) ||
    (history = await gateHistory(teamDir)) !== null
  ) {
    const why =
      read?.state === "invalid"
        ? read.problem
        : ledger.has(TRUST_TAKEN_KEY)
          ? `${trustFile(teamDir)} is gone`
          : `${trustFile(teamDir)} is gone, and ${history}`;
    const text = `${why}: nothing is trusted anew; every gate is untrusted (its events are held as untrusted_hook) until the team lead records trust again: pi-teams-hooks trust --team-dir ${teamDir} --all`;
    ctx.warn(text);
    ctx.notes = ctx.notes.then(() =>
      ctx.tellLead(
        sentId("trust-gone", why, ctx.setup.identity.leadName),
        `pi-teams-hooks: ${text}`,
        "the lead was not told that the trust record is gone",
      ),
    );
    ctx.trust.set(NOTHING);
  } else {
    const entries = new Map<string, TrustEntry>();
    const at = ctx.now();
    const by = trustedBy("first start of the leader");
    // The handlers of config.json too: a handler is a gate, trusted by its definition (trust/trust.ts).
    for (const { event, chain } of chains) {
      for (const hook of chain.hooks) {
        const found = entryOf(hook, at, by, event);
        if (!found) continue;
        entries.set(gateKey(hook), found.entry);
        if (found.content) keepTrustedCopy(teamDir, found.entry.sha256, found.content);
      }
    }
    ctx.trust.set(await updateTrust(teamDir, entries, { by, env }));
    const names = [...entries.keys()];
    ctx.opts.report({
      kind: "info",
      message: `trusted ${names.length} gate(s) on first use (${trustFile(teamDir)})${names.length ? `: ${names.join(", ")}` : ""}; a gate changed, added or removed from now on holds its events until approved (pi-teams-hooks trust)`,
    });
    // A gate trusted now whose own file does not parse is the lead's to fix: said now, not at its first event.
    const files = new Map<string, HookCommand>();
    for (const { chain } of chains)
      for (const h of chain.hooks) if (h.kind !== "http") files.set(h.hook.hookPath, h.hook);
    for (const [file, command] of files) {
      const error = await gateFileSyntaxError(command);
      if (error === null) continue;
      ctx.warn(`trusted on first use, but ${gateSyntaxMessage(error)}`);
      ctx.notes = ctx.notes.then(() =>
        ctx.tellLead(
          sentId("gate-syntax", `${file}:${entries.get(file)?.sha256 ?? ""}`, ctx.setup.identity.leadName),
          `pi-teams-hooks: ${file} was trusted on first use, but ${gateSyntaxMessage(error)}`,
          `the lead was not told that ${file} does not parse`,
        ),
      );
    }
  }
  if (!ledger.has(TRUST_TAKEN_KEY)) await ledger.baseline([TRUST_TAKEN_KEY], ctx.now());
  // Written when it changed: a start that finds the record it left writes nothing.
  const record = ctx.trust.record;
  if (record) {
    const seen = readSeen(teamDir, env);
    if (seen.state !== "ok" || !isDeepStrictEqual(seen.record, record)) await writeSeen(teamDir, record, env);
  }
}

/**
 * The approved copy against the record this account's last leader held in force (`readSeen`): every
 * gate approved, removed, or made optional while no leader ran — by `trust`, or by anyone who could
 * write both copies — is said on the output and to the lead, with what changed and the name written
 * in it. A team with no seen record yet (its first start, or a version before it) is not compared.
 */
function sayApprovedWhileStopped(ctx: LeaderContext, approved: TrustRecord): void {
  const { teamDir, leadName } = ctx.setup.identity;
  const seen = readSeen(teamDir, ctx.opts.env);
  if (seen.state !== "ok") return;
  const gates = [...new Set([...Object.keys(seen.record.gates), ...Object.keys(approved.gates)])].sort();
  const lines = gates.flatMap((gate) => {
    const change = entryChange(seen.record.gates[gate], approved.gates[gate]);
    if (change === null) return [];
    const by = approved.gates[gate]?.trustedBy;
    return [`  ${gate}: ${change}${by ? ` (by ${by})` : ""}`];
  });
  if (lines.length === 0) return;
  const head = `trust record approved while no leader ran (${approvedFile(teamDir, ctx.opts.env)}), taken as the lead's approval`;
  const tail = `if the lead did not approve this: pi-teams-hooks trust --team-dir ${teamDir}`;
  ctx.warn([head, ...lines.map((line) => line.trim()), tail].join("; "));
  ctx.notes = ctx.notes.then(() =>
    ctx.tellLead(
      sentId("trust-approved-stopped", JSON.stringify(lines), leadName),
      `pi-teams-hooks: ${head}:\n${lines.join("\n")}\n${tail[0]?.toUpperCase()}${tail.slice(1)}.`,
      "the lead was not told of a trust record approved while no leader ran",
    ),
  );
}

/**
 * What shows that a leader gated this team before (a hook log of its: `trigger` not `hand`, or from
 * before logs said), or null for a team where none did: runs by hand (`pi-teams-hooks run`) take no
 * record, so they alone are no sign that one was taken. The newest logs are looked at first.
 */
export async function gateHistory(teamDir: string): Promise<string | null> {
  const logs = await listHookLogs(teamDir).catch(() => []);
  for (const entry of logs.slice(-HISTORY_LOGS).reverse()) {
    const read = await readHookLog(entry.file);
    if (read.ok && read.record.trigger !== "hand")
      return `the hook logs in ${hookLogsDir(teamDir)} show a leader gated this team before (${entry.name})`;
  }
  return null;
}

/** How many of the newest logs gateHistory reads: a leader that ran leaves many. */
const HISTORY_LOGS = 200;

/**
 * `trust.json` as read, held to the record in force: entries it has that were not approved are said
 * (output, lead's inbox) and not trusted, and the file is written back as approved; a file that is
 * gone or unreadable is written back too.
 */
async function holdFileToApproved(
  ctx: LeaderContext,
  first: ReturnType<LeaderContext["trust"]["refresh"]>["read"],
  when: string,
): Promise<void> {
  const { teamDir, leadName } = ctx.setup.identity;
  const inForce = ctx.trust.record ?? NOTHING;
  let read = first ?? readTrust(teamDir);
  if (read.state === "invalid") {
    // Caught in the middle of a write that is not atomic (truncated, then written): a moment later, again.
    // A file that is not there is not being written: no wait (a start where it was removed stays quick).
    await new Promise((resolve) => setTimeout(resolve, 100));
    read = readTrust(teamDir);
  }
  const state = read.state;
  const differs = read.state === "ok" ? recordDiff(inForce, read.record) : [];
  if (state === "ok" && differs.length === 0) return;
  const file = trustFile(teamDir);
  const what =
    state === "none"
      ? `${file} was removed ${when}`
      : state === "invalid"
        ? `${file} was made unreadable ${when}`
        : `${file} was changed ${when}, not through pi-teams-hooks trust`;
  const lines = differs.map((c) => {
    const how =
      c.change === "removed"
        ? "removed from the record"
        : `written as trusted (sha256 ${c.entry?.sha256.slice(0, 12) ?? "?"}…, "by ${c.entry?.trustedBy || "unknown"}")`;
    return `  ${c.path}: ${how}: not approved, not trusted`;
  });
  const head = `${what}: written back as approved (${approvedFile(teamDir, ctx.opts.env)})`;
  const tail = `to approve a gate: pi-teams-hooks trust --team-dir ${teamDir}`;
  const text = [`${head}.`, ...lines, `${tail[0]?.toUpperCase()}${tail.slice(1)}`].join("\n");
  ctx.warn([head, ...lines.map((line) => line.trim()), tail].join("; ")); // one line on the output
  const id = sentId(
    "trust-edited",
    JSON.stringify(differs.map((c) => [c.path, c.entry?.sha256 ?? null])) + state,
    leadName,
  );
  ctx.notes = ctx.notes.then(() =>
    ctx.tellLead(id, `pi-teams-hooks: ${text}`, "the lead was not told that the trust record was edited"),
  );
  try {
    ctx.trust.set(await replaceTrust(teamDir, inForce, ctx.opts.env));
  } catch (error) {
    ctx.warn(
      `${file}: not written back (${error instanceof Error ? error.message : String(error)}); the leader goes by its approved copy`,
    );
  }
}

/**
 * Re-reads the trust record if its file changed, and says what changed (anyone may have written it).
 * An approval (`trust` wrote the approved copy first) is taken and said; any other change is said,
 * not trusted, and undone. True when the record in force changed: events held for approval may be
 * trusted now (holds/held-events.ts).
 */
export function refreshTrust(ctx: LeaderContext): boolean {
  const { read } = ctx.trust.refresh();
  if (read === null) return false;
  const { teamDir } = ctx.setup.identity;
  const approved = readApproved(teamDir, ctx.opts.env);
  const before = ctx.trust.record ?? NOTHING;
  if (read.state === "ok" && approved.state === "ok" && recordDiff(approved.record, read.record).length === 0) {
    const changes = recordDiff(before, read.record);
    ctx.trust.set(read.record);
    for (const c of changes) sayApproved(ctx, c, before.gates[c.path]);
    if (changes.length > 0) void writeSeen(teamDir, read.record, ctx.opts.env);
    return changes.length > 0;
  }
  // Not what was approved: said, not trusted, and written back (after the event at hand: not awaited).
  ctx.notes = ctx.notes.then(() => holdFileToApproved(ctx, read, "while the leader ran"));
  return false;
}

/**
 * One approved change of the record: on the output, and to the lead once (`trust` sent the same note already when it
 * recorded it).
 */
function sayApproved(ctx: LeaderContext, c: RecordChange, before: TrustEntry | undefined): void {
  const { leadName } = ctx.setup.identity;
  const change = entryChange(before, c.entry ?? undefined);
  const what =
    c.change === "approved"
      ? `trust record: ${c.path} approved (sha256 ${c.entry?.sha256.slice(0, 12) ?? "?"}…${isHandlerGate(c.path) ? "" : `, mode ${octal(c.entry?.mode ?? 0)}`}${before && change ? `; ${change}` : ""}, by ${c.entry?.trustedBy || "unknown"})`
      : `trust record: ${c.path} removed (its absence is approved)`;
  ctx.warn(what);
  ctx.notes = ctx.notes.then(() =>
    ctx.tellLead(
      approvalNoteId(c.path, c.entry?.sha256 ?? null, leadName),
      `pi-teams-hooks: ${what}`,
      "the lead was not told of an approval",
    ),
  );
}

/**
 * The sent-log id of the note about one approval: the same from `trust` (which records it) and the leader (which sees
 * it).
 */
export function approvalNoteId(gate: string, sha256: string | null, lead: string): string {
  return sentId("trust-approved", `${gate}:${sha256 ?? "removed"}`, lead);
}

/** The trust record may have changed (a watcher hint, the reconcile scan): re-read, and held events looked at again. */
export async function trustHint(ctx: LeaderContext, holds: Holds): Promise<void> {
  if (refreshTrust(ctx)) await holds.reconsider();
}

/** A gate changed since it was trusted, or is insecure: said once here, and once to the lead's inbox. */
export function reportTrustCheck(ctx: LeaderContext, check: ChainTrust): void {
  const { teamDir, leadName } = ctx.setup.identity;
  for (const problem of check.problems.filter((p) => p.kind === "insecure_hook")) {
    const id = `insecure:${problem.reason}`;
    if (ctx.told.has(id)) continue;
    ctx.told.add(id);
    ctx.warn(problem.reason);
  }
  for (const dropped of check.dropped) {
    const id = `dropped:${dropped.path}:${dropped.detail}`;
    if (ctx.told.has(id)) continue;
    ctx.told.add(id);
    ctx.opts.report({ kind: "info", message: droppedGateText(dropped.path, dropped.detail) });
  }
  for (const change of check.changes) {
    const sha = change.now?.sha256 ?? change.trusted?.sha256 ?? "";
    const id = `${change.change}:${change.path}:${sha}:${change.now?.mode ?? ""}`;
    if (ctx.told.has(id)) continue;
    ctx.told.add(id);
    const what =
      change.change === "new"
        ? "is new (not trusted yet)"
        : change.change === "changed"
          ? `changed since it was trusted (${change.detail})`
          : `no longer runs (${change.detail})`;
    const then = ctx.setup.settings.trustChanges.value
      ? "it runs as it is now (--trust-changes); the log keeps both hashes"
      : `its events are held (${change.change === "removed" ? "gate_missing" : "untrusted_hook"}; not failed, nothing counted) until the team lead approves the change: pi-teams-hooks trust --team-dir ${teamDir} ${change.path}`;
    ctx.warn(`gate ${change.path} ${what}: ${then}`);
    const text = `pi-teams-hooks: quality gate ${change.path} ${what}. ${then[0]?.toUpperCase()}${then.slice(1)}.`;
    ctx.notes = ctx.notes.then(() =>
      ctx.tellLead(sentId("gate-change", id, leadName), text, `the lead was not told of the change of ${change.path}`),
    );
  }
}

/**
 * Whether a start gate is in force: a file or handler runs for `task_started`, or the trust record
 * names a gate of that event (a trusted start gate deleted must fail its claims as `gate_missing`,
 * not switch them off). Looked at when the leader starts, at every reconcile scan and when
 * config.json changes — not per claim: a team without a start gate pays nothing per claim. `say`:
 * a change while the leader runs is reported. `found`: the chain already discovered (the start's).
 */
export async function refreshStartGate(ctx: LeaderContext, say: boolean, found?: ChainDiscovery): Promise<void> {
  const { hooksDir, teamHooksDir, settings } = ctx.setup;
  const chain =
    found ??
    (await discoverChain({
      globalDir: hooksDir,
      teamDir: teamHooksDir,
      event: "task_started",
      handlers: settings.handlers,
    }));
  const layers = { global: hooksDir, team: teamHooksDir };
  const trusted = Object.entries(ctx.trust.record?.gates ?? {}).some(([gate, entry]) =>
    isHandlerGate(gate) || isBindingGate(gate)
      ? handlerTrustedFor(entry, "task_started")
      : eventOfGate(gate, layers) === "task_started",
  );
  const on = chain.hooks.length > 0 || trusted;
  if (on === ctx.startGate) return;
  ctx.startGate = on;
  if (say) {
    ctx.opts.report({
      kind: "info",
      message: on
        ? `start gate in force (${chain.hooks.map((h) => h.name).join(", ") || "a trusted gate of task_started"}): claims from now on are judged; claims seen before are not`
        : "no start gate any more: claims are no longer judged",
    });
  }
}
