/**
 * The leader's side of trust (docs/security.md): the record taken on the first start (trust on first
 * use) or read, re-read before each event when its file changed, and every gate change or insecure
 * gate said once here and once to the lead's inbox.
 */
import { type ChainDiscovery, discoverChain, isHandlerGate } from "../runner/chain.js";
import { type ChainTrust, type TrustEntry, entryOf, eventOfGate, handlerTrustedFor, octal } from "../runner/trust.js";
import { keepTrustedCopy, trustFile, trustedBy, updateTrust } from "../runner/trust-store.js";
import { sentId } from "../team/sent-log.js";
import type { LeaderContext } from "./context.js";
import type { Ledger } from "./ledger.js";

/**
 * Recorded once the first start has taken the trust record (trust on first use). A ledger with it and
 * no `hook-state/trust.json` means the record was removed: every gate is then untrusted, rather than
 * trusted anew as it is now (which is what deleting the record would otherwise buy).
 */
const TRUST_TAKEN_KEY = "leader:trust-taken";

/**
 * The trust record at start: taken from the gates as they are on a first start (trust on first use),
 * read otherwise. A record that is gone or unreadable after it was taken makes every gate untrusted.
 */
export async function takeTrust(ctx: LeaderContext, ledger: Ledger, chains: ReadonlyArray<{ chain: ChainDiscovery }>): Promise<void> {
  const { teamDir } = ctx.setup.identity;
  const { read } = ctx.trust.refresh();
  if (read?.state === "ok") {
    ctx.trust.set(read.record);
  } else if (read?.state === "invalid" || ledger.has(TRUST_TAKEN_KEY)) {
    const why = read?.state === "invalid" ? read.problem : `${trustFile(teamDir)} is gone`;
    ctx.warn(`${why}: every gate is untrusted (its events are held as untrusted_hook) until the team lead records trust again: pi-teams-hooks trust --team-dir ${teamDir} --all`);
    ctx.trust.set({ version: 1, gates: {} });
  } else {
    const entries = new Map<string, TrustEntry>();
    const at = ctx.now();
    const by = trustedBy("first start of the leader");
    // The handlers of config.json too: a handler is a gate, trusted by its definition (runner/trust.ts).
    for (const { chain } of chains) {
      for (const hook of chain.hooks) {
        const found = entryOf(hook, at, by);
        if (!found) continue;
        entries.set(hook.hook.hookPath, found.entry);
        if (found.content) keepTrustedCopy(teamDir, found.entry.sha256, found.content);
      }
    }
    ctx.trust.set(await updateTrust(teamDir, entries));
    const names = [...entries.keys()];
    ctx.opts.report({
      kind: "info",
      message: `trusted ${names.length} gate(s) on first use (${trustFile(teamDir)})${names.length ? `: ${names.join(", ")}` : ""}; a gate changed, added or removed from now on holds its events until approved (pi-teams-hooks trust)`,
    });
  }
  if (!ledger.has(TRUST_TAKEN_KEY)) await ledger.baseline([TRUST_TAKEN_KEY], ctx.now());
}

/**
 * Re-reads the trust record if its file changed, and says what changed (anyone may have written it).
 * True when it changed: events held for approval may be trusted now (leader/holds.ts).
 */
export function refreshTrust(ctx: LeaderContext): boolean {
  const { read, changes } = ctx.trust.refresh();
  if (read === null) return false;
  const { teamDir } = ctx.setup.identity;
  if (read.state === "ok") {
    ctx.trust.set(read.record);
    for (const c of changes) {
      ctx.warn(
        c.change === "approved"
          ? `trust record: ${c.path} approved (sha256 ${c.entry?.sha256.slice(0, 12) ?? "?"}…${isHandlerGate(c.path) ? "" : `, mode ${octal(c.entry?.mode ?? 0)}`}, by ${c.entry?.trustedBy || "unknown"})`
          : `trust record: ${c.path} removed (its absence is approved)`,
      );
    }
    return changes.length > 0;
  }
  const why = read.state === "invalid" ? read.problem : `${trustFile(teamDir)} was removed`;
  ctx.warn(`${why}: every gate is untrusted until the team lead records trust again: pi-teams-hooks trust --team-dir ${teamDir} --all`);
  ctx.trust.set({ version: 1, gates: {} });
  return true;
}

/** The trust record may have changed (a watcher hint, the reconcile scan): re-read, and held events looked at again. */
export async function trustHint(ctx: LeaderContext): Promise<void> {
  if (refreshTrust(ctx)) await ctx.holds?.reconsider();
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
  for (const change of check.changes) {
    const sha = change.now?.sha256 ?? change.trusted?.sha256 ?? "";
    const id = `${change.change}:${change.path}:${sha}:${change.now?.mode ?? ""}`;
    if (ctx.told.has(id)) continue;
    ctx.told.add(id);
    const what = change.change === "new" ? "is new (not trusted yet)" : change.change === "changed" ? `changed since it was trusted (${change.detail})` : `no longer runs (${change.detail})`;
    const then = ctx.opts.trustChanges
      ? "it runs as it is now (--trust-changes); the log keeps both hashes"
      : `its events are held (${change.change === "removed" ? "gate_missing" : "untrusted_hook"}; not failed, nothing counted) until the team lead approves the change: pi-teams-hooks trust --team-dir ${teamDir} ${change.path}`;
    ctx.warn(`gate ${change.path} ${what}: ${then}`);
    const text = `pi-teams-hooks: quality gate ${change.path} ${what}. ${then[0]?.toUpperCase()}${then.slice(1)}.`;
    ctx.notes = ctx.notes.then(() => ctx.tellLead(sentId("gate-change", id, leadName), text, `the lead was not told of the change of ${change.path}`));
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
  const chain = found ?? (await discoverChain({ globalDir: hooksDir, teamDir: teamHooksDir, event: "task_started", handlers: settings.handlers }));
  const layers = { global: hooksDir, team: teamHooksDir };
  const trusted = Object.entries(ctx.trust.record?.gates ?? {}).some(([gate, entry]) =>
    isHandlerGate(gate) ? handlerTrustedFor(entry, "task_started") : eventOfGate(gate, layers) === "task_started",
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
