/**
 * What `/gates status`, the dashboard's "Needs attention" and `doctor` show of `hook-state/holds.json`:
 * the events the leader last said it holds, less those whose task's file shows its gate judged since
 * (policy/gate-life.ts gateStateOf: a hand `run --apply-policy`, a newer completion judged, while no
 * leader ran to write the list again).
 */
import { type GatePlace, gateStateOf, isJudged } from "../policy/gate-life.js";
import { taskFile } from "../team/paths.js";
import { readTask } from "../team/tasks.js";
import { type HeldEvent, readHoldsFile } from "./holds-file.js";

export type { HeldEvent };

/**
 * The list a leader last wrote, less the holds whose task's gate was judged since; empty when there is
 * none (no leader held anything) or it cannot be read.
 */
export async function readHolds(teamDir: string): Promise<{ holds: HeldEvent[]; problem: string | null }> {
  const { taskListId, holds, problem } = await readHoldsFile(teamDir);
  if (taskListId === null) return { holds, problem };
  const since = await Promise.all(holds.map((h) => judgedSince(teamDir, taskListId, h).catch(() => false)));
  return { holds: holds.filter((_, i) => !since[i]), problem: null };
}

/**
 * Whether the held event's task shows its gate judged since the hold: its current event (the held one,
 * or a newer completion) is judged, or held for a decision. A task whose file cannot be read, or that
 * records no gate for its current event (its record lost or edited away), says nothing: the hold stays.
 */
async function judgedSince(teamDir: string, taskListId: string, hold: HeldEvent): Promise<boolean> {
  if (hold.taskId === null) return false;
  const read = await readTask(taskFile(teamDir, taskListId, hold.taskId));
  if (!read.ok) return false;
  const now: GatePlace = gateStateOf(read.value);
  return isJudged(now) || (now.state === "held" && now.cause === "deferral");
}
