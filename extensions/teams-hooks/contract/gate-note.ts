/**
 * The gate's note in a reopened task's description: what failed, written by the leader at the reopen
 * at the head of the description, between two marker lines, and replaced at the next one (removed
 * once a gate passes). A worker that builds its prompt from the task's subject and description when it
 * takes the task up again (pi-agent-teams' does, before it reads its messages) reads why on its first
 * redo. A gate never sees it: the document it is given has the description without the note
 * (contract/contract.ts), so the work it judges is the worker's alone. Pure.
 */

export const GATE_NOTE_START = "<!-- pi-teams-hooks: quality gate -->";
export const GATE_NOTE_END = "<!-- /pi-teams-hooks: quality gate -->";
/** The note's own text is cut to this many characters: a reason, not a log. */
const GATE_NOTE_MAX_CHARS = 2_000;

/** The description without the gate's note (as it was before the first reopen). */
export function withoutGateNote(description: string): string {
  const start = description.indexOf(GATE_NOTE_START);
  if (start !== 0) return description;
  const end = description.indexOf(GATE_NOTE_END, start);
  if (end < 0) return description;
  return description.slice(end + GATE_NOTE_END.length).replace(/^\n+/, "");
}

/** The description with the gate's note of this reopen at its head (any earlier note replaced). */
export function withGateNote(description: string, note: string): string {
  const text = note.length > GATE_NOTE_MAX_CHARS ? `${note.slice(0, GATE_NOTE_MAX_CHARS - 1)}…` : note;
  const rest = withoutGateNote(description);
  return `${GATE_NOTE_START}\n${text}\n${GATE_NOTE_END}\n\n${rest}`;
}

/** The note's text for a reopen: the round, the gate, what it said, and what is asked. */
export function gateNoteText(opts: { hook: string; round: number; summary: string }): string {
  return `Quality gate: ${opts.hook} did not pass this task (round ${opts.round}): ${opts.summary}\nFix what it reports, then complete the task again. (This note is the quality gate's; it goes once the gate passes.)`;
}
