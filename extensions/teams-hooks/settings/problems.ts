/**
 * One problem as `config --json` and `doctor --json` give it to a script: `{ kind, path, message }`,
 * with `kind` from a closed set (docs/cli.md, "Problems as data"). `path` says what the problem is
 * about: a field of config.json as a dotted path from the file's top (`hooks.limits.maxHooksPerEvent`,
 * `hooks.handlers.0.enabled`), an environment variable's name, a file's absolute path, a gate's
 * name (`http:ci`), or a field of a task API request (`template`, `parameters.branch`, a query
 * field's name); `""` when it is about nothing narrower than the team. `message` is the line a
 * person reads, as the text output says it. A kind added later is an addition a reader must expect;
 * a kind is never renamed or given another meaning. The task API's 400 answers list theirs the same
 * way. Pure: data only.
 */

export const PROBLEM_KINDS = [
  /** config.json cannot be read, is not JSON, or its `hooks` is no object: defaults (or the last valid block) apply. */
  "config_unreadable",
  /** A config.json field outside `hooks` that cannot be used (a team id of the wrong type…): its default applies. */
  "config_field",
  /** A value of the `hooks` block is invalid: the block is refused whole. */
  "setting_invalid",
  /** A limit outside its range: capped to its ceiling or floor; the rest of the block stays in force. */
  "setting_capped",
  /** A value that is taken but does nothing (a writable field that is never writable, a projection of no gate…). */
  "setting_ignored",
  /** An environment variable's value is not valid: the next level (or the default) applies. */
  "env_ignored",
  /** A gate is new or changed since it was trusted: its events are held (`untrusted_hook`). */
  "gate_untrusted",
  /** A trusted gate no longer runs (`gate_missing`, `gate_not_executable`): its events are held. */
  "gate_missing",
  /** A gate others could rewrite (`insecure_hook`): refused. */
  "gate_insecure",
  /** A gate's settings line cannot be read whole (the gate does not run), or looks meant as one and is not read. */
  "gate_settings",
  /** A file that looks like a gate and does not run (no execute bit, a bad name, a stray `on_*` name…). */
  "gate_unusable",
  /** An HTTP handler's environment: a secret variable not set, plain http to another machine. */
  "handler_env",
  /** The hooks dir or the team's hooks layer: missing, unreadable, world-writable, empty. */
  "hooks_dir",
  /** The team dir's own files: not writable, a task or message that is not one, an inbox that cannot be read. */
  "team_files",
  /** Who else could change the gates or the leader's state (doctor's access check). */
  "access",
  /** A lock file left behind, stale or held long. */
  "lock",
  /** A field of a task API request (body or query): unknown, missing, given twice, of the wrong kind, unreadable. */
  "request_field",
  /** A template's parameter in a task API request: unknown, given twice, of the wrong kind, required and missing. */
  "request_parameter",
] as const;
export type ProblemKind = (typeof PROBLEM_KINDS)[number];

/** One problem, for a script. */
export interface Problem {
  kind: ProblemKind;
  path: string;
  message: string;
}

/** The variable a warning about one names at its start (`PI_TEAMS_HOOKS_FAILURE_MODE: "ajar" …`), or "". */
export function variableNamed(message: string): string {
  return /^(PI_TEAMS_[A-Z0-9_]+)\b/.exec(message)?.[1] ?? "";
}
