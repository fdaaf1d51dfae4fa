/**
 * The defaults of contract v1 that a team's settings may change: the hook timeout and the fields a
 * patch verdict may write. Data only, so that the settings table (settings/table.ts), which the
 * command table reads on every call, takes them without loading anything.
 */

/** A hook's timeout when neither `--timeout-ms` nor `PI_TEAMS_HOOK_TIMEOUT_MS` says otherwise. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** The writable fields when `hooks.writableFields` is not set. */
export const DEFAULT_WRITABLE_FIELDS: readonly string[] = Object.freeze(["metadata"]);
