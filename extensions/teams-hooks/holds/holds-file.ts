/**
 * `hook-state/holds.json`: the events a running leader holds because their gate could not judge the
 * work (the lead's approval, or a retry after our own fault), written by the leader whenever the list
 * changes (holds/held-events.ts) and read by `/gates status`, the dashboard's "Needs attention" and
 * `doctor`. For people: the leader itself goes by its ledger, so a list edited or deleted changes
 * nothing it does. What people are shown of it is holds/holds-view.ts `readHolds`.
 */
import { z } from "zod";
import { HOOK_EVENTS } from "../contract/contract.js";
import { readJsonFile, writeJsonAtomic } from "../team/json-file.js";
import { holdsFile } from "../team/paths.js";

const HeldEventSchema = z.looseObject({
  key: z.string(),
  event: z.enum(HOOK_EVENTS),
  taskId: z.string().nullable(),
  member: z.string().nullable(),
  /**
   * `approval`: the gate waits for the lead (untrusted, missing, insecure, cannot start); `fault`: our own part failed
   * under it.
   */
  cause: z.enum(["approval", "fault"]),
  /** The run's error kind (`untrusted_hook`, `spawn`, `internal`…). */
  kind: z.string().nullable(),
  /** The gate that could not judge the work, as policy writes name it. */
  hook: z.string().nullable(),
  /** Why, for the lead (the approval command included). */
  reason: z.string(),
  since: z.string(),
  runId: z.string().nullable(),
  log: z.string().nullable(),
});
export type HeldEvent = z.infer<typeof HeldEventSchema>;

const HoldsFileSchema = z.looseObject({
  version: z.literal(1),
  updatedAt: z.string(),
  /** The task list the held events' tasks are in (absent in a list written before it was kept). */
  taskListId: z.string().optional(),
  holds: z.array(HeldEventSchema),
});

/**
 * The list a leader last wrote (holds/holds-view.ts reads it for people, saying of each hold whether its
 * task's file claims it judged since); empty when there is none (no leader held anything) or it cannot be
 * read.
 */
export async function readHoldsFile(
  teamDir: string,
): Promise<{ taskListId: string | null; holds: HeldEvent[]; problem: string | null }> {
  const read = await readJsonFile(holdsFile(teamDir), HoldsFileSchema);
  if (!read.ok)
    return { taskListId: null, holds: [], problem: read.problem.kind === "missing" ? null : read.problem.message };
  return { taskListId: read.value.taskListId ?? null, holds: read.value.holds, problem: null };
}

export async function writeHolds(
  teamDir: string,
  taskListId: string,
  holds: readonly HeldEvent[],
  updatedAt: string,
): Promise<void> {
  await writeJsonAtomic(holdsFile(teamDir), { version: 1, updatedAt, taskListId, holds });
}
