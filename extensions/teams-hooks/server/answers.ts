/**
 * What the task API answers: every answer is JSON, and every refusal is
 * `{ "error": { "code": "...", "message": "..." } }` with a code from the one table below (a 400 adds
 * `problems`, one `{kind, path, message}` per bad parameter or field, as `config --json` gives its
 * own). Handlers return an `Answer` or throw an `ApiError`; only server/server.ts writes to the socket.
 */
import type { Problem, ProblemKind } from "../settings/problems.js";

/** Every refusal the API gives, with its HTTP status. */
export const API_ERRORS = Object.freeze({
  invalid_json: 400,
  invalid_request: 400,
  invalid_parameters: 400,
  invalid_idempotency_key: 400,
  invalid_decision: 400,
  unauthorized: 401,
  scope_not_allowed: 403,
  team_not_allowed: 403,
  template_not_allowed: 403,
  not_found: 404,
  team_not_found: 404,
  task_not_found: 404,
  template_not_found: 404,
  run_not_found: 404,
  binding_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  idempotency_conflict: 409,
  already_decided: 409,
  binding_exists: 409,
  defer_expired: 409,
  payload_too_large: 413,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  unavailable: 503,
} as const);
export type ApiErrorCode = keyof typeof API_ERRORS;

/** One answer: status, JSON body and extra headers. */
export interface Answer {
  status: number;
  body: unknown;
  headers?: Readonly<Record<string, string>>;
}

/** A refusal, thrown by a handler and turned into its answer by the server. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly code: ApiErrorCode;
  readonly problems: readonly Problem[] | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(
    code: ApiErrorCode,
    message: string,
    extra: { problems?: readonly Problem[]; headers?: Readonly<Record<string, string>> } = {},
  ) {
    super(message);
    this.code = code;
    this.problems = extra.problems;
    this.headers = extra.headers;
  }
}

/** How many problems one answer lists: 64 KiB of unknown names must not come back as megabytes. */
const MAX_PROBLEMS = 20;

/**
 * `problems` as an answer lists them: the first MAX_PROBLEMS, then one more, `and N more` (of the kind
 * of the first one left out, about nothing narrower: path `""`).
 */
export function listProblems(problems: readonly Problem[]): Problem[] {
  const left = problems[MAX_PROBLEMS];
  return left === undefined
    ? [...problems]
    : [
        ...problems.slice(0, MAX_PROBLEMS),
        { kind: left.kind, path: "", message: `and ${problems.length - MAX_PROBLEMS} more` },
      ];
}

/** The refusal's `message`: its problems' lines, joined. */
export function problemLines(problems: readonly Problem[]): string {
  return problems.map((p) => p.message).join("; ");
}

/** A problem from its line `<field>: <text>`, its path the field; a line without one is about nothing narrower. */
export function problemOfLine(kind: ProblemKind, line: string): Problem {
  const colon = line.indexOf(": ");
  return { kind, path: colon > 0 ? line.slice(0, colon) : "", message: line };
}

/** The answer for a refusal. */
export function errorAnswer(error: ApiError): Answer {
  const body = {
    error: { code: error.code, message: error.message, problems: error.problems && [...error.problems] },
  };
  return { status: API_ERRORS[error.code], body, headers: error.headers };
}

/** `401`, one answer for a missing, malformed, unknown, revoked or disabled key: which one is nobody's business. */
export function unauthorized(): ApiError {
  return new ApiError(
    "unauthorized",
    "a valid API key is required: Authorization: Bearer <key> (pi-teams-hooks serve keys create)",
    {
      headers: { "WWW-Authenticate": 'Bearer realm="pi-teams-hooks"' },
    },
  );
}

/** Headers on every answer: JSON, never cached, never sniffed as anything else. */
export const JSON_HEADERS = Object.freeze({
  "Content-Type": "application/json; charset=utf-8",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
});
