/** What every command gets: its parsed arguments and its I/O, plus the small readers of flag values. */
import { HooksError } from "./errors.js";

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
