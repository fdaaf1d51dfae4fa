/**
 * Human-facing text: warnings, summary lines, help. Library modules report through an injected `log`
 * and build their words here, so wording lives in one place. Add functions in your own section.
 */
import type { HookEventName } from "./contract.js";

/** `tasks/main/3.json: status: expected …, got "done" — task skipped` */
export function fileProblem(file: string, field: string, problem: string, consequence: string): string {
  return `${file}: ${field ? `${field}: ` : ""}${problem} — ${consequence}`;
}

export function eventLabel(event: HookEventName, taskId: string | null | undefined): string {
  return taskId ? `${event} #${taskId}` : event;
}

/** `1.2s` above a second, else `340ms`. */
export function formatDuration(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms)}ms`;
}
