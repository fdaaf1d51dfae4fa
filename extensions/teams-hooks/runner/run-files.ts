/**
 * A run's verdict: the result file the leader made for the run (runner/run-dir.ts), read back bounded,
 * only while it is still the leader's own regular file, and how a verdict from that file or from
 * stdout becomes part of the run's result.
 */
import { lstatSync } from "node:fs";
import type { RunResult } from "../contract/hook-run.js";
import type { ExitCodeMode } from "../settings/team-settings.js";
import {
  DEFERRAL_NOT_SUPPORTED,
  capReason,
  describeInvalidVerdict,
  readVerdict,
  verdictOutcome,
  type LastLine,
} from "../contract/verdict.js";
import { problemDetail, readRegularFile } from "../team/json-file.js";

/** A verdict bigger than this is not a verdict: it is reported as invalid, unread. */
const MAX_RESULT_FILE_BYTES = 64 * 1024;

/**
 * The result file's text; null when the hook did not write one. Anything else at the path — a FIFO
 * the hook made there, a symlink to a device, a directory, a file over the cap — is `refused` unread,
 * saying what it is: read with the one shared reader, it can neither block the leader nor fill its
 * memory.
 */
export function readResultFile(
  file: string,
  created: { ino: number; dev: number; mode: number; uid: number },
): ResultFileRead {
  // The leader made it empty before the start: it counts only while it is still that file, with the
  // owner and mode the leader gave it (no link, no other file renamed over it), read through no link.
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(file);
  } catch {
    return { text: null, refused: "the result file the leader made for the run was removed" };
  }
  if (!st.isFile() || st.ino !== created.ino || st.dev !== created.dev || st.uid !== created.uid) {
    const what = st.isFIFO()
      ? "a FIFO"
      : st.isSymbolicLink()
        ? "a symbolic link"
        : st.isDirectory()
          ? "a directory"
          : st.isFile()
            ? `another file (uid ${st.uid})`
            : "a special file";
    return { text: null, refused: `the result file the leader made for the run was replaced (by ${what})` };
  }
  // A mode changed (a `chmod 444` that keeps a planted verdict from being emptied): not the leader's file any more.
  if ((st.mode & 0o777) !== created.mode)
    return {
      text: null,
      refused: `the result file the leader made for the run had its mode changed (to ${(st.mode & 0o777).toString(8)})`,
    };
  if (st.size === 0) return { text: null, refused: null }; // not written: the common case
  const read = readRegularFile(file, { maxBytes: MAX_RESULT_FILE_BYTES });
  if (read.ok) return { text: read.text, refused: null };
  if (read.problem.kind === "missing") return { text: null, refused: null }; // removed since: none
  return { text: null, refused: problemDetail(read.problem) };
}

export interface ResultFileRead {
  text: string | null;
  /** Why the path holds no readable verdict (`not a regular file (fifo)`); null when it was read or absent. */
  refused: string | null;
}

interface VerdictRules {
  /**
   * Whether the event can be held (contract.ts canDefer: task_completed, task_failed); a defer where it cannot is a
   * denial (contract/verdict.ts verdictOutcome).
   */
  canDefer: boolean;
  /** What the exit code means without a verdict (`hooks.exitCodes`); default `v1`. */
  exitCodes?: ExitCodeMode;
}

/**
 * A valid verdict decides a run that ended by itself (it takes precedence over the exit code); an
 * invalid one makes it a hook error. A run that already is an error (could not start, timed out,
 * killed) stays one whatever it wrote. Without a verdict the exit code decides: under `strict` exit
 * codes 0 allows, 2 denies, 3 denies with the code `deferral_not_supported` (a gate defers with a
 * verdict, never an exit code), and any other code is `unexpected_exit`.
 */
/** `stdout`: its last line that holds more than blanks, as the runner followed it (verdict.ts lastLineTracker). */
export function applyVerdict(
  result: RunResult,
  file: ResultFileRead,
  stdout: LastLine,
  rules: VerdictRules,
): RunResult {
  if (result.outcome === "error") return result;
  if (file.refused !== null) {
    return {
      ...result,
      outcome: "error",
      errorKind: "invalid_verdict",
      error: `invalid verdict in PI_TEAMS_HOOK_RESULT_FILE: ${file.refused}`,
    };
  }
  const read = readVerdict({ fileText: file.text, stdout });
  switch (read.kind) {
    case "none": {
      const judged = strictExit(result, rules.exitCodes ?? "v1");
      // A verdict with a typo decides nothing (the exit code does), and is said.
      return read.unread === undefined ? judged : { ...judged, verdictUnread: read.unread };
    }
    case "invalid":
      return { ...result, outcome: "error", errorKind: "invalid_verdict", error: describeInvalidVerdict(read) };
    case "verdict": {
      const { outcome, verdict } = verdictOutcome(read.verdict, rules.canDefer);
      return { ...result, outcome, verdict: { ...verdict, source: read.source } };
    }
  }
}

/** The exit code that asks for a deferral under strict exit codes: a denial, since only a verdict can hold a gate. */
const STRICT_DEFER_EXIT_CODE = 3;

/**
 * Under strict exit codes, 2 denies, 3 denies as `deferral_not_supported` (a hook runtime's "defer" by
 * exit code, which holds nothing here: a held gate needs a verdict), and any other non-zero code is no
 * judgement: a hook error the failure mode decides.
 */
function strictExit(result: RunResult, mode: ExitCodeMode): RunResult {
  if (mode !== "strict" || result.outcome !== "failed" || result.exitCode === 2) return result;
  if (result.exitCode === STRICT_DEFER_EXIT_CODE) {
    const said = firstLine(result.stderr);
    const reason = capReason(
      `exit code 3 asks to defer, which an exit code cannot: a gate defers with a verdict${said ? `: ${said}` : ""}`,
    );
    return { ...result, verdict: { decision: "deny", code: DEFERRAL_NOT_SUPPORTED, reason, source: "exit_code" } };
  }
  const code = result.exitCode === null ? "no exit code" : `exit code ${result.exitCode}`;
  const rule = "only 0 allows and 2 denies (3: deferral_not_supported)";
  const error = `${code}: under strict exit codes (hooks.exitCodes) ${rule}; the hook did not decide`;
  return { ...result, outcome: "error", errorKind: "unexpected_exit", error };
}

/** The first line of `text` that holds more than blanks, as one line a verdict's reason may hold; "" when none. */
function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim() !== "") ?? "";
  // eslint-disable-next-line no-control-regex
  return line
    .replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ")
    .replaceAll("\uFFFD", "?")
    .trim();
}
