/**
 * The one exception class of the project. Exceptions are for broken preconditions only (a bad flag,
 * a team dir that cannot be read, a lock that never frees); everything a hook does is data.
 * The CLI maps each code to an exit code in one table (cli/main.ts).
 */
export type ErrorCode =
  | "E_USAGE" // bad command line
  | "E_TEAM_DIR" // team dir missing or unreadable
  | "E_HOOKS_DIR" // hooks dir missing or unreadable
  | "E_PATH" // another path a flag or variable names is missing or unusable (--cwd, a teams root)
  | "E_CONFIG" // config.json unreadable or invalid where it must be valid
  | "E_TASK" // a task file is missing or not a task where one is required
  | "E_LOCK_TIMEOUT" // a lock did not free in time
  | "E_IO" // any other file-system failure
  | "E_LEDGER" // the ledger cannot be read or written
  | "E_INTERNAL"; // a bug

export class HooksError extends Error {
  override readonly name = "HooksError";
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export function isHooksError(value: unknown): value is HooksError {
  return value instanceof HooksError;
}

/** Ends every `switch` over a union: a new member becomes a type error here. */
export function unreachable(value: never): never {
  throw new HooksError("E_INTERNAL", `unreachable: ${JSON.stringify(value)}`);
}

/** The errno code of a Node error (`ENOENT`, `EACCES`, …), or undefined. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}

/** A one-line description of anything thrown. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** A short rendering of a value for messages: `"done"`, `42`, `missing`, `an array`, `an object`; long strings cut. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "missing";
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "an object";
  const json = JSON.stringify(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}
