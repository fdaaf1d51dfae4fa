/**
 * What a real hook's exit code and verdict mean, end to end through runHook and invokeEvent: strict
 * exit codes (`hooks.exitCodes: "strict"`: 0 allows, 2 denies, anything else is a hook error the
 * failure mode decides) next to contract v1 (any non-zero exit denies), and the verdict's hygiene (a
 * decision in any case, a reason with C1 control characters or bytes that are not UTF-8, a verdict line
 * longer than the cap after megabytes of blanks).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { HookCommand } from "../../extensions/teams-hooks/contract/hook-run.js";
import { invokeEvent, type InvokeRequest } from "../../extensions/teams-hooks/event/invoke.js";
import { runHook } from "../../extensions/teams-hooks/runner/run-hook.js";
import { makeInvocation } from "../helpers/invocation.js";
import { eventRequest } from "../helpers/invoke-request.js";
import { makeTask, makeTempTeam, fileTempDir } from "../helpers/temp-team.js";

const tmp = fileTempDir("exit-codes-");

/** A bash hook with `body` as its script. */
function hook(name: string, body: string): HookCommand {
  const file = path.join(tmp, name);
  writeFileSync(file, `#!/usr/bin/env bash\n${body}\n`, { mode: 0o755 });
  return { hookPath: file, command: "bash", args: [file] };
}

const run = (h: HookCommand, exitCodes?: "v1" | "strict") =>
  runHook(h, makeInvocation(), { cwd: tmp, timeoutMs: 10_000, ...(exitCodes ? { exitCodes } : {}) });

describe("exit codes without a verdict", () => {
  it.each<[string, string, "v1" | "strict", object]>([
    ["exit 0 allows (v1)", "exit 0", "v1", { outcome: "passed" }],
    ["exit 0 allows (strict)", "exit 0", "strict", { outcome: "passed" }],
    ["exit 1 denies (v1)", "echo 'lint: 3 errors' >&2; exit 1", "v1", { outcome: "failed", exitCode: 1 }],
    ["exit 2 denies (strict)", "echo 'lint: 3 errors' >&2; exit 2", "strict", { outcome: "failed", exitCode: 2 }],
    [
      "exit 1 is no judgement (strict)",
      "exit 1",
      "strict",
      { outcome: "error", errorKind: "unexpected_exit", exitCode: 1 },
    ],
    [
      "exit 3 denies as deferral_not_supported (strict)",
      "exit 3",
      "strict",
      {
        outcome: "failed",
        exitCode: 3,
        verdict: { decision: "deny", code: "deferral_not_supported", source: "exit_code" },
      },
    ],
    ["exit 3 denies without a code (v1)", "exit 3", "v1", { outcome: "failed", exitCode: 3 }],
    ["127, a command not found, denies (v1)", "no-such-command-here", "v1", { outcome: "failed", exitCode: 127 }],
    [
      "127, a command not found, is a hook error (strict)",
      "no-such-command-here",
      "strict",
      { outcome: "error", errorKind: "unexpected_exit", exitCode: 127 },
    ],
  ])("%s", async (_name, body, mode, expected) => {
    const result = await run(hook(`h-${mode}-${body.length}-${body.charCodeAt(0)}.sh`, body), mode);
    expect(result).toMatchObject(expected);
    if (result.errorKind === "unexpected_exit")
      expect(result.error).toMatch(
        /^exit code \d+: under strict exit codes \(hooks\.exitCodes\) only 0 allows and 2 denies/,
      );
  });

  it("a node gate that throws is a hook error under strict, a denial under v1", async () => {
    const file = path.join(tmp, "throws.mjs");
    writeFileSync(file, 'throw new Error("cannot read config");\n');
    const h: HookCommand = { hookPath: file, command: process.execPath, args: [file] };
    expect(await run(h, "strict")).toMatchObject({ outcome: "error", errorKind: "unexpected_exit", exitCode: 1 });
    expect(await run(h, "v1")).toMatchObject({ outcome: "failed", exitCode: 1 });
  });

  it("a verdict still decides whatever the exit code, under strict too", async () => {
    const result = await run(hook("verdict-exit-1.sh", `echo '{"decision":"allow"}'; exit 1`), "strict");
    expect(result).toMatchObject({ outcome: "passed", verdict: { decision: "allow", source: "stdout" } });
  });

  it("the failure mode decides a crash under strict: open lets the task through, closed fails it; a denial fails it either way", async () => {
    const team = await makeTempTeam({ tasks: [makeTask({ id: "1", status: "completed", owner: "alice" })] });
    try {
      const hooksDir = path.join(tmp, "hooks-dir");
      const request = (failureMode: string, over: Partial<InvokeRequest> = {}) =>
        eventRequest(
          { team, hooksDir, cwd: tmp, settings: { hooks: { exitCodes: "strict", failureMode }, timeoutMs: 10_000 } },
          over,
        );
      mkdirSync(hooksDir, { recursive: true });
      const dir = hooksDir;
      writeFileSync(path.join(dir, "on_task_completed.sh"), "#!/usr/bin/env bash\nno-such-command-here\n", {
        mode: 0o755,
      });
      expect((await invokeEvent(request("open"))).counted).toEqual({ state: "passed" });
      expect((await invokeEvent(request("closed"))).counted).toEqual({ state: "failed" });
      writeFileSync(path.join(dir, "on_task_completed.sh"), "#!/usr/bin/env bash\necho 'tests fail' >&2\nexit 2\n", {
        mode: 0o755,
      });
      const denied = await invokeEvent(request("open", { applyPolicy: true }));
      expect(denied.counted).toEqual({ state: "failed" });
      expect(denied.summary).toBe("exit code 2 • tests fail");
    } finally {
      await team.cleanup();
    }
  });
});

describe("verdict hygiene, from real hooks", () => {
  it('"DENY" denies', async () => {
    expect(await run(hook("upper.sh", `echo '{"decision":"DENY","reason":"tests fail"}'`))).toMatchObject({
      outcome: "failed",
      verdict: { decision: "deny", reason: "tests fail" },
    });
  });

  it("a reason with a C1 control character is an invalid verdict, not a denial", async () => {
    const result = await run(hook("c1.sh", `printf '{"decision":"deny","reason":"tests \\xc2\\x9b31m fail"}\\n'`));
    expect(result).toMatchObject({ outcome: "error", errorKind: "invalid_verdict" });
    expect(result.error).toContain("reason: must not contain control characters");
  });

  it("a reason that is not UTF-8 is an invalid verdict", async () => {
    const result = await run(hook("latin1.sh", `printf '{"decision":"deny","reason":"caf\\xe9 broken"}\\n'`));
    expect(result).toMatchObject({ outcome: "error", errorKind: "invalid_verdict" });
    expect(result.error).toContain("reason: must be valid UTF-8");
  });

  it("a verdict line after 2 MB of blanks is an invalid verdict, not a denial (nor ordinary output)", async () => {
    const result = await run(
      hook("blanks.sh", `head -c 2000000 /dev/zero | tr '\\0' ' '; echo '{"decision":"deny","reason":"hidden"}'`),
    );
    expect(result).toMatchObject({ outcome: "error", errorKind: "invalid_verdict" });
    expect(result.error).toMatch(/the last line is a verdict line of over 49152 bytes/);
  });

  const BLANKS = (n: number): string => `head -c ${n} /dev/zero | tr '\\0' ' '`;
  it.each([
    ["blanks after it", `printf '%s'; ${BLANKS(60000)}; echo`],
    ["blanks after it and no final newline", `printf '%s'; ${BLANKS(60000)}`],
    ["blanks on both sides", `${BLANKS(30000)}; printf '%s'; ${BLANKS(30000)}; echo`],
    ["tabs and no-break spaces after it", `printf '%s'; for i in $(seq 20000); do printf '\\t\\xc2\\xa0'; done; echo`],
  ])("a deny verdict padded past 48 KiB with %s is an invalid verdict, never a pass", async (name, script) => {
    const body = script.replaceAll("%s", '{"decision":"deny","code":"padded","reason":"hidden"}');
    const result = await run(hook(`padded-${name.length}.sh`, `${body}\nexit 0`));
    expect(result).toMatchObject({ outcome: "error", errorKind: "invalid_verdict" });
    expect(result.error).toMatch(/the last line is a verdict line of over 49152 bytes/);
  });

  it("a verdict followed by 2 MB of blank lines is the last non-empty line: it decides", async () => {
    const verdict = `echo '{"decision":"deny","code":"late","reason":"after blank lines"}'`;
    const result = await run(hook("blank-lines.sh", `${verdict}; head -c 2000000 /dev/zero | tr '\\0' '\\n'; exit 0`));
    expect(result).toMatchObject({ outcome: "failed", verdict: { decision: "deny", code: "late", source: "stdout" } });
  });

  it("a long last line that is not a verdict is ordinary output: the exit code decides", async () => {
    expect(await run(hook("long-output.sh", `head -c 2000000 /dev/zero | tr '\\0' 'x'; echo; exit 0`))).toMatchObject({
      outcome: "passed",
    });
  });
});
