/** What every command gets: its parsed arguments and its I/O, plus the small readers of flag values. */
import { HooksError } from "./errors.js";
import type { EventReport } from "./leader.js";
import { formatDuration } from "./messages.js";

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** True when stdout is a terminal (colour, progress). */
  isTTY: boolean;
  /** Resolves when the user asks to stop (SIGINT / SIGTERM); long-running commands race it. */
  stopSignal: Promise<string>;
}

export type FlagValue = string | boolean | Array<string | boolean> | undefined;
export type ParsedArgs = { values: Record<string, FlagValue>; positionals: string[] };
export type CommandFn = (args: ParsedArgs, io: CliIo) => Promise<number>;

/** A string flag's value, or undefined when not given. */
export function str(value: FlagValue): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** A whole-number flag (`--concurrency 2`): `fallback` when absent; E_USAGE naming the flag when bad. */
export function wholeNumber(value: FlagValue, flag: string, fallback: number, min: number): number {
  const raw = str(value);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw new HooksError("E_USAGE", `${flag} "${raw}" must be a whole number ≥ ${min}`);
  }
  return Number(raw);
}

/** `10:31:07 task_completed #3 alice on_task_completed.sh failed 1.2s: exit code 1 → reopened (1/3), nudge alice` */
export function eventLine(r: EventReport): string {
  const time = r.time.slice(11, 19);
  const who = r.member ? ` ${r.member}` : "";
  const label = r.taskId ? `${r.event} #${r.taskId}` : r.event;
  if (r.outcome === "no_hook") return `${time} ${label}${who}: no hook`;
  const verdict = r.outcome === "passed" ? "passed" : r.timedOut ? "timed out" : r.outcome === "error" ? "error" : "failed";
  const detail = r.outcome === "passed" ? "" : `: ${r.summary}`;
  const actions = r.actions.length && r.actions.join("") !== "none" ? ` → ${r.actions.join(", ")}` : "";
  return `${time} ${label}${who} ${r.hook ?? ""} ${verdict} ${formatDuration(r.durationMs)}${detail}${actions}${r.retry ? " (retry)" : ""}`;
}
