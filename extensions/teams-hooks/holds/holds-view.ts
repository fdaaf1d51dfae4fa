/**
 * What `/gates status`, the dashboard's "Needs attention" and `doctor` show of `hook-state/holds.json`:
 * every event the leader last said it holds. One whose task's file shows its gate judged since
 * (policy/gate-life.ts gateStateOf: a hand `run --apply-policy`, a newer completion judged while no leader
 * ran to write the list again, or a worker's own edit of its task) stays listed, its reason saying what
 * the task's file claims: the list is the leader's word, and a field any worker can write never hides it.
 */
import { type GatePlace, gateStateOf, isJudged } from "../policy/gate-life.js";
import { taskFile } from "../team/paths.js";
import { readTask } from "../team/tasks.js";
import { type HeldEvent, readHoldsFile } from "./holds-file.js";

export type { HeldEvent };

/**
 * The list a leader last wrote, each hold whose task's file shows its gate judged since said so in its
 * reason; empty when there is none (no leader held anything) or it cannot be read.
 */
export async function readHolds(teamDir: string): Promise<{ holds: HeldEvent[]; problem: string | null }> {
  const { taskListId, holds, problem } = await readHoldsFile(teamDir);
  if (taskListId === null) return { holds, problem };
  const since = await Promise.all(holds.map((h) => judgedSince(teamDir, taskListId, h).catch(() => null)));
  return {
    holds: holds.map((h, i) => {
      const claimed = since[i];
      if (!claimed) return h;
      const says = `its task's file says its gate is ${claimed} since; the leader has not confirmed it`;
      return { ...h, reason: `${h.reason} (${says})` };
    }),
    problem: null,
  };
}

/**
 * The state the held event's task shows its gate in when judged since the hold (its current event, the
 * held one or a newer completion, is judged, or held for a decision); null when it shows nothing of the
 * kind: a task whose file cannot be read, or that records no gate for its current event.
 */
async function judgedSince(teamDir: string, taskListId: string, hold: HeldEvent): Promise<string | null> {
  if (hold.taskId === null) return null;
  const read = await readTask(taskFile(teamDir, taskListId, hold.taskId));
  if (!read.ok) return null;
  const now: GatePlace = gateStateOf(read.value);
  if (now.state === "held" && now.cause === "deferral") return "held for a decision";
  return isJudged(now) ? now.state : null;
}
