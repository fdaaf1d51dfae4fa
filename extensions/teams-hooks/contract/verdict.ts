/**
 * A hook's structured verdict (contract v1, additive): a JSON object written to the file named by
 * `PI_TEAMS_HOOK_RESULT_FILE`, printed as the last non-empty line of stdout, or (an HTTP handler)
 * the body of a 2xx answer:
 *
 *   { "decision": "allow" | "deny" | "defer" | "patch", "code"?: string, "reason"?: string, "message"?: string,
 *     "patch"?: object }
 *
 * Decision values match without regard to case (`"DENY"` is a denial) and are stored lower case. It
 * takes precedence over the exit code. A verdict that is there but wrong is not a denial: the run is
 * a hook error, so that a typo in a gate never passes for a decision. `defer` holds a task event's
 * gate until a decision arrives (docs/remote-gates.md); `idle` and `task_started` cannot be held
 * (contract.ts `canDefer`), so a defer there is a denial with the code `deferral_not_supported`
 * (`verdictOutcome`). `patch` passes and asks for a JSON merge patch on the task, within the writable
 * fields (contract/merge-patch.ts): its `patch` must be an object of at most `patchBytes` (as JSON)
 * and MAX_PATCH_DEPTH levels, or the verdict is invalid. Pure: the runner reads the file or the
 * answer and hands the text in.
 */
import { z } from "zod";
import { MAX_PATCH_DEPTH, isJsonObject, nestsDeeperThan, type JsonObject } from "./merge-patch.js";

export const VERDICT_LIMITS = Object.freeze({
  codeBytes: 64,
  reasonBytes: 1_024,
  messageBytes: 8_192,
  patchBytes: 16_384,
});

const bytes = (s: string): number => Buffer.byteLength(s, "utf8");
// Control characters (newline and tab included, and the C1 range U+0080–U+009F, which terminals read as
// escapes) have no place in a one-line reason.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** What bytes that are not UTF-8 decode to: a reason that holds it was not valid UTF-8. */
const REPLACEMENT = "\uFFFD";

/**
 * A verdict line on stdout is at most this long, blanks included: more than the longest valid verdict
 * (code, reason and message at their limits, escaped). A longer line that looks like a verdict is an
 * invalid verdict, never ordinary output: otherwise a gate could hide a decision in megabytes of
 * blanks before or after it on its last line.
 */
const VERDICT_LINE_MAX_BYTES = 48 * 1024;

export const DECISIONS = ["allow", "deny", "defer", "patch"] as const;
export type Decision = (typeof DECISIONS)[number];

/** A decision value, matched without regard to case or surrounding blanks, stored lower case. */
const DecisionSchema = z.string().trim().toLowerCase().pipe(z.enum(DECISIONS));

export const VerdictSchema = z
  .looseObject({
    decision: DecisionSchema,
    code: z
      .string()
      .regex(/^[a-z][a-z0-9_.-]*$/, "must start with a lower-case letter and hold only a-z, 0-9, _ . -")
      .refine((s) => bytes(s) <= VERDICT_LIMITS.codeBytes, `must be at most ${VERDICT_LIMITS.codeBytes} bytes`)
      .optional(),
    reason: z
      .string()
      .refine((s) => s.trim() !== "", "must not be blank")
      .refine((s) => bytes(s) <= VERDICT_LIMITS.reasonBytes, `must be at most ${VERDICT_LIMITS.reasonBytes} bytes`)
      .refine(
        (s) => !CONTROL.test(s),
        "must not contain control characters (one line, no tabs, nothing in U+0080–U+009F)",
      )
      .refine(
        (s) => !s.includes(REPLACEMENT),
        "must be valid UTF-8 (it holds U+FFFD, what bytes that are not UTF-8 decode to)",
      )
      .optional(),
    message: z
      .string()
      .refine((s) => bytes(s) <= VERDICT_LIMITS.messageBytes, `must be at most ${VERDICT_LIMITS.messageBytes} bytes`)
      .optional(),
    /** The merge patch of a `patch` verdict (ignored with any other decision). */
    patch: z.unknown().optional(),
  })
  .superRefine((verdict, ctx) => {
    if (verdict.decision !== "patch") return;
    const problem = patchProblem(verdict.patch);
    if (problem) ctx.addIssue({ code: "custom", path: ["patch"], message: problem });
  })
  .transform(({ patch, ...rest }): typeof rest & { patch?: JsonObject } =>
    // Kept only on a patch verdict: with any other decision a `patch` means nothing, and is dropped.
    rest.decision === "patch" && isJsonObject(patch) ? { ...rest, patch } : rest,
  );
type Verdict = z.infer<typeof VerdictSchema>;

/** What is wrong with the `patch` of a patch verdict, or null when it is a usable merge patch. */
function patchProblem(patch: unknown): string | null {
  if (patch === undefined) return "a patch verdict needs a patch (a JSON object)";
  if (!isJsonObject(patch))
    return `must be a JSON object, got ${Array.isArray(patch) ? "an array" : patch === null ? "null" : typeof patch}`;
  if (nestsDeeperThan(patch, MAX_PATCH_DEPTH)) return `must nest at most ${MAX_PATCH_DEPTH} levels`;
  if (bytes(JSON.stringify(patch)) > VERDICT_LIMITS.patchBytes)
    return `must be at most ${VERDICT_LIMITS.patchBytes} bytes as JSON`;
  return null;
}

/**
 * Where a verdict came from: the result file, the last line of stdout, an HTTP handler's answer, or a
 * decision that settled a deferred gate later (`pi-teams-hooks decide`, the API, the expiry), or a
 * Claude Code gate's exit code and output (`format=claude`, contract/claude.ts), or, under strict exit
 * codes, an exit code that is a denial with a code of its own (`exit_code`: exit 3, `deferral_not_supported`).
 */
export const VERDICT_SOURCES = ["file", "stdout", "http", "decision", "claude", "exit_code"] as const;
type VerdictSource = (typeof VERDICT_SOURCES)[number];

type VerdictRead =
  /**
   * `unread`: the last line of stdout starts like a verdict (`{`, and it holds `"decision"`) but is not JSON: no
   * verdict, the exit code decides, and this says why the line was not read and what it was (`verdictNotRead`).
   */
  | { kind: "none"; unread?: string }
  | { kind: "verdict"; source: VerdictSource; verdict: Verdict }
  /** `unsupportedDecision`: the `decision` itself is not one of DECISIONS (an HTTP answer's transport failure). */
  | { kind: "invalid"; source: VerdictSource; problem: string; unsupportedDecision?: boolean };

/**
 * The verdict of one run. `fileText` is the result file's content (null when the hook did not write
 * it); `stdout` is the whole stdout, or what the runner kept of its last line (`lastLineTracker`).
 * The file wins over stdout. On stdout only the last line that holds more than blanks counts, and
 * only when it is a JSON object with a `decision` key: any other last line (including JSON without
 * `decision`, or text that merely starts with `{`) is ordinary output and the exit code decides —
 * unless it is longer than VERDICT_LINE_MAX_BYTES, blanks included, and looks like a verdict (its
 * first character that is not a blank is `{`, or it holds `"decision"`): that is an invalid verdict.
 * A last line that starts with `{` and holds `"decision"` but is not JSON (a typo in a verdict) is no
 * verdict either, but is said: `unread`.
 */
export function readVerdict(input: { fileText: string | null; stdout: string | LastLine }): VerdictRead {
  if (input.fileText !== null && input.fileText.trim() !== "") {
    return check(parseObject(input.fileText.trim()), "file");
  }
  const line = typeof input.stdout === "string" ? lastLineOf(input.stdout) : input.stdout;
  if (line.bytes > VERDICT_LINE_MAX_BYTES) {
    if (line.first !== "{" && !line.mentionsDecision) return { kind: "none" };
    const problem = `the last line is a verdict line of over ${VERDICT_LINE_MAX_BYTES} bytes (the most a verdict line may have)`;
    return { kind: "invalid", source: "stdout", problem };
  }
  const last = line.text.trim();
  if (!last.startsWith("{")) return { kind: "none" };
  const parsed = parseObject(last);
  if (!parsed.ok)
    return line.mentionsDecision ? { kind: "none", unread: unreadLine(parsed.problem, last) } : { kind: "none" };
  if (!Object.hasOwn(parsed.value, "decision")) return { kind: "none" };
  return check(parsed, "stdout");
}

/**
 * The last line of stdout that holds more than blanks (as `trim` defines them), as much of it as the
 * verdict needs: the line itself only while it is within VERDICT_LINE_MAX_BYTES, and for a longer one
 * what decides whether it looks like a verdict. A line ends at `\n`; a `\r` before it is a blank.
 */
export interface LastLine {
  /** The line without its `\n`; "" when there is none, or when it is longer than VERDICT_LINE_MAX_BYTES. */
  text: string;
  /** Its length in UTF-8 bytes, blanks included. */
  bytes: number;
  /** Its first character that is not a blank. */
  first: string;
  /** Whether it holds `"decision"`. */
  mentionsDecision: boolean;
}

interface LastLineTracker {
  /** The next piece of the output, decoded. Costs O(piece); memory stays O(VERDICT_LINE_MAX_BYTES). */
  push(text: string): void;
  /** The last line that holds more than blanks so far (the line still open included). */
  result(): LastLine;
}

const DECISION_KEY = '"decision"';

interface OpenLine extends LastLine {
  /** The end of what was pushed, so that `"decision"` split between two pushes is still seen. */
  carry: string;
}

function openLine(): OpenLine {
  return { text: "", bytes: 0, first: "", mentionsDecision: false, carry: "" };
}

function extend(line: OpenLine, text: string): void {
  if (text === "") return;
  line.bytes += Buffer.byteLength(text, "utf8");
  if (line.first === "") {
    const at = text.search(/\S/);
    if (at >= 0) line.first = text.charAt(at);
  }
  if (!line.mentionsDecision) {
    const probe = line.carry + text;
    line.mentionsDecision = probe.includes(DECISION_KEY);
    line.carry = probe.slice(-(DECISION_KEY.length - 1));
  }
  // Past the cap the text is never read again: only its length and the two marks above matter.
  line.text = line.bytes <= VERDICT_LINE_MAX_BYTES ? line.text + text : "";
}

/**
 * Follows a stream's last line that holds more than blanks, however long the stream and its lines:
 * a verdict cannot hide behind blanks after it on its line, nor behind blank lines after that line.
 */
export function lastLineTracker(): LastLineTracker {
  let open = openLine();
  let last: OpenLine | null = null;
  const close = (): void => {
    if (open.first !== "") last = open;
    open = openLine();
  };
  return {
    push(text: string): void {
      const firstBreak = text.indexOf("\n");
      if (firstBreak === -1) return extend(open, text);
      extend(open, text.slice(0, firstBreak));
      close();
      const lastBreak = text.lastIndexOf("\n");
      if (lastBreak > firstBreak) {
        // Whole lines: of them only the last that holds more than blanks can be the last line.
        const lines = text.slice(firstBreak + 1, lastBreak);
        const end = lines.trimEnd().length;
        if (end > 0) {
          const stop = lines.indexOf("\n", end);
          extend(open, lines.slice(lines.lastIndexOf("\n", end - 1) + 1, stop === -1 ? undefined : stop));
          close();
        }
      }
      extend(open, text.slice(lastBreak + 1));
    },
    result(): LastLine {
      const line = open.first !== "" ? open : (last ?? openLine());
      return { text: line.text, bytes: line.bytes, first: line.first, mentionsDecision: line.mentionsDecision };
    },
  };
}

/** `lastLineTracker` over the whole of `text`. */
export function lastLineOf(text: string): LastLine {
  const tracker = lastLineTracker();
  tracker.push(text);
  return tracker.result();
}

/** At most this many characters of an unread verdict-like line are quoted. */
const UNREAD_QUOTE_CHARS = 200;

/** `not JSON (…): {"decision": "deny", "reason": oops`, the line cut to UNREAD_QUOTE_CHARS. */
function unreadLine(problem: string, line: string): string {
  const chars = [...line];
  const quoted = chars.length > UNREAD_QUOTE_CHARS ? `${chars.slice(0, UNREAD_QUOTE_CHARS).join("")}…` : line;
  return `${problem}: ${quoted}`;
}

type Parsed = { ok: true; value: Record<string, unknown> } | { ok: false; problem: string };

function parseObject(text: string): Parsed {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, problem: `not JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return {
      ok: false,
      problem: `expected a JSON object, got ${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value}`,
    };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

function check(parsed: Parsed, source: VerdictSource): VerdictRead {
  if (!parsed.ok) return { kind: "invalid", source, problem: parsed.problem };
  const result = VerdictSchema.safeParse(parsed.value);
  if (result.success) return { kind: "verdict", source, verdict: result.data };
  const problems = result.error.issues.map(
    (issue) => `${issue.path.map(String).join(".") || "verdict"}: ${issue.message}`,
  );
  const decision = parsed.value.decision;
  if (!DecisionSchema.safeParse(decision).success) {
    return {
      kind: "invalid",
      source,
      problem: `decision: ${JSON.stringify(decision)} is not one of ${DECISIONS.join(", ")}`,
      unsupportedDecision: true,
    };
  }
  return { kind: "invalid", source, problem: problems.join("; ") };
}

/**
 * The verdict in the body of an HTTP handler's 2xx answer. An empty body, or one that is not a JSON
 * object with a `decision`, is no verdict (`none`, which allows), and says which (`empty` or
 * `malformed`, for the log); a `decision` that is not allow, deny, defer or patch is `invalid` with
 * `unsupportedDecision` (a transport failure); other bad fields are an invalid verdict, as in a file.
 */
export function readHttpVerdict(body: string): VerdictRead | { kind: "none"; body: "empty" | "malformed" } {
  const text = body.trim();
  if (text === "") return { kind: "none", body: "empty" };
  const parsed = parseObject(text);
  if (!parsed.ok || !Object.hasOwn(parsed.value, "decision")) return { kind: "none", body: "malformed" };
  return check(parsed, "http");
}

/** The code of the denial a defer becomes where an event cannot be held (`idle`, `task_started`). */
export const DEFERRAL_NOT_SUPPORTED = "deferral_not_supported";

/**
 * What a valid verdict makes of a run: `allow` and `patch` pass, `deny` fails, `defer` holds the gate — except
 * where the event cannot be held (`canDefer` false: `idle`, `task_started`), where a defer is a denial with the code
 * `deferral_not_supported` and the hook's reason kept.
 */
export function verdictOutcome(
  verdict: Verdict,
  canDefer: boolean,
): { outcome: "passed" | "failed" | "deferred"; verdict: Verdict } {
  switch (verdict.decision) {
    case "allow":
    case "patch":
      return { outcome: "passed", verdict };
    case "deny":
      return { outcome: "failed", verdict };
    case "defer":
      if (canDefer) return { outcome: "deferred", verdict };
      return {
        outcome: "failed",
        verdict: {
          ...verdict,
          decision: "deny",
          code: DEFERRAL_NOT_SUPPORTED,
          reason: capReason(`this event cannot be deferred${verdict.reason ? `: ${verdict.reason}` : ""}`),
        },
      };
  }
}

/**
 * `reason` within the reason cap. A cut goes back to the last blank before it: the part of a word it
 * would keep might be the front of a secret, which no redaction can recognise by half.
 */
export function capReason(reason: string): string {
  if (bytes(reason) <= VERDICT_LIMITS.reasonBytes) return reason;
  let cut = reason.slice(0, VERDICT_LIMITS.reasonBytes - 3);
  while (bytes(`${cut}…`) > VERDICT_LIMITS.reasonBytes) cut = cut.slice(0, -1);
  if (!/\s/.test(reason.charAt(cut.length))) cut = cut.replace(/\S+$/, "");
  return `${cut.trimEnd()}…`;
}

const VERDICT_PLACES: Readonly<Record<VerdictSource, string>> = {
  file: "PI_TEAMS_HOOK_RESULT_FILE",
  stdout: "the last line of stdout",
  http: "the handler's answer",
  decision: "the decision",
  claude: "a Claude Code gate's exit code and output",
  exit_code: "the exit code",
};

/** `invalid verdict in PI_TEAMS_HOOK_RESULT_FILE: reason: must not be blank` */
export function describeInvalidVerdict(read: Extract<VerdictRead, { kind: "invalid" }>): string {
  return `invalid verdict in ${VERDICT_PLACES[read.source]}: ${read.problem}`;
}
