/**
 * A hook's structured verdict (contract v1, additive): a JSON object written to the file named by
 * `PI_TEAMS_HOOK_RESULT_FILE`, or printed as the last non-empty line of stdout:
 *
 *   { "decision": "allow" | "deny", "code"?: string, "reason"?: string, "message"?: string }
 *
 * It takes precedence over the exit code. A verdict that is there but wrong is not a denial: the run is
 * a hook error, so that a typo in a gate never passes for a decision. Pure: the runner reads the file
 * and hands the text in.
 */
import { z } from "zod";

export const VERDICT_LIMITS = Object.freeze({ codeBytes: 64, reasonBytes: 1_024, messageBytes: 8_192 });

const bytes = (s: string): number => Buffer.byteLength(s, "utf8");
// Control characters (newline and tab included) have no place in a one-line reason.
const CONTROL = /[\u0000-\u001f\u007f]/;

export const VerdictSchema = z.looseObject({
  decision: z.enum(["allow", "deny"]),
  code: z
    .string()
    .regex(/^[a-z][a-z0-9_.-]*$/, "must start with a lower-case letter and hold only a-z, 0-9, _ . -")
    .refine((s) => bytes(s) <= VERDICT_LIMITS.codeBytes, `must be at most ${VERDICT_LIMITS.codeBytes} bytes`)
    .optional(),
  reason: z
    .string()
    .refine((s) => s.trim() !== "", "must not be blank")
    .refine((s) => bytes(s) <= VERDICT_LIMITS.reasonBytes, `must be at most ${VERDICT_LIMITS.reasonBytes} bytes`)
    .refine((s) => !CONTROL.test(s), "must not contain control characters (one line, no tabs)")
    .optional(),
  message: z
    .string()
    .refine((s) => bytes(s) <= VERDICT_LIMITS.messageBytes, `must be at most ${VERDICT_LIMITS.messageBytes} bytes`)
    .optional(),
});
export type Verdict = z.infer<typeof VerdictSchema>;

export type VerdictSource = "file" | "stdout";

export type VerdictRead =
  | { kind: "none" }
  | { kind: "verdict"; source: VerdictSource; verdict: Verdict }
  | { kind: "invalid"; source: VerdictSource; problem: string };

/**
 * The verdict of one run. `fileText` is the result file's content (null when the hook did not write
 * it); `stdoutTail` is the end of its stdout. The file wins over stdout. On stdout only a last line
 * that is a JSON object with a `decision` key counts: any other last line (including JSON without
 * `decision`, or text that merely starts with `{`) is ordinary output and the exit code decides.
 */
export function readVerdict(input: { fileText: string | null; stdoutTail: string }): VerdictRead {
  if (input.fileText !== null && input.fileText.trim() !== "") {
    return check(parseObject(input.fileText.trim()), "file");
  }
  const last = lastLine(input.stdoutTail);
  if (!last.startsWith("{")) return { kind: "none" };
  const parsed = parseObject(last);
  if (!parsed.ok || !Object.hasOwn(parsed.value, "decision")) return { kind: "none" };
  return check(parsed, "stdout");
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
    return { ok: false, problem: `expected a JSON object, got ${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value}` };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

function check(parsed: Parsed, source: VerdictSource): VerdictRead {
  if (!parsed.ok) return { kind: "invalid", source, problem: parsed.problem };
  const result = VerdictSchema.safeParse(parsed.value);
  if (result.success) return { kind: "verdict", source, verdict: result.data };
  const problems = result.error.issues.map((issue) => `${issue.path.map(String).join(".") || "verdict"}: ${issue.message}`);
  return { kind: "invalid", source, problem: problems.join("; ") };
}

function lastLine(text: string): string {
  const lines = text.split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = (lines[i] ?? "").trim();
    if (line !== "") return line;
  }
  return "";
}

/** `invalid verdict in PI_TEAMS_HOOK_RESULT_FILE: reason: must not be blank` */
export function describeInvalidVerdict(read: Extract<VerdictRead, { kind: "invalid" }>): string {
  const where = read.source === "file" ? "PI_TEAMS_HOOK_RESULT_FILE" : "the last line of stdout";
  return `invalid verdict in ${where}: ${read.problem}`;
}
