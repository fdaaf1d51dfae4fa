/**
 * A leader in the test's own process (leader/leader.ts `Leader`), for a test that reads its notices as objects
 * rather than as the built `watch`'s output lines (leader-rig.ts): one event at a time, no inbox, a reconcile scan
 * every 200 ms, no polling, no catch-up; `over` changes any of them.
 *
 *   const here = await startLeaderHere(setup, env, { inbox: "observe" }, leaders);
 *   await waitUntil("the gate", () => here.events().length === 1);
 */
import { Leader } from "../../extensions/teams-hooks/leader/leader.js";
import type { EventReport, LeaderNotice, LeaderOptions } from "../../extensions/teams-hooks/leader/notices.js";
import type { TeamSetup } from "../../extensions/teams-hooks/team/setup.js";
import { waitUntil } from "./leader-rig.js";

/** The options of a leader run here, its notices pushed to `notices`. */
export function leaderOptions(
  setup: TeamSetup,
  env: LeaderOptions["env"],
  notices: LeaderNotice[],
  over: Partial<LeaderOptions> = {},
): LeaderOptions {
  return {
    setup,
    env,
    concurrency: 1,
    inbox: "off",
    reconcileMs: 200,
    poll: false,
    pollIntervalMs: 250,
    catchUp: false,
    report: (notice) => notices.push(notice),
    ...over,
  };
}

export interface LeaderHere {
  leader: Leader;
  notices: LeaderNotice[];
  warnings(): string[];
  /** The reports of the events it ran. */
  events(): EventReport[];
}

/** Starts a leader here and waits for its start-up scan (its `ready`); `started` gets it, for the test to stop. */
export async function startLeaderHere(
  setup: TeamSetup,
  env: LeaderOptions["env"],
  over: Partial<LeaderOptions>,
  started: Leader[],
): Promise<LeaderHere> {
  const notices: LeaderNotice[] = [];
  const leader = new Leader(leaderOptions(setup, env, notices, over));
  started.push(leader);
  await leader.start();
  await waitUntil("the start-up scan", () => notices.some((n) => n.kind === "ready"));
  return {
    leader,
    notices,
    warnings: () => notices.flatMap((n) => (n.kind === "warning" ? [n.message] : [])),
    events: () => notices.flatMap((n) => (n.kind === "event" ? [n.report] : [])),
  };
}
