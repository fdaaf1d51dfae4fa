/**
 * A gate's own settings line, end to end through invokeEvent with real hooks and real team files:
 * matchers that skip (logged, never run) and matchers that run, a per-hook timeout that ends a gate
 * long before the global one, a shadow gate that denies and changes nothing but its shadow fields and
 * its log, a line that cannot be read (a closed error naming the key and the line), and trust, which
 * covers the line because it covers the file.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { invokeEvent, type InvokeRequest } from "../../extensions/teams-hooks/event/invoke.js";
import { readHookSettings } from "../../extensions/teams-hooks/gates/discover.js";
import { readLogs } from "../helpers/leader-rig.js";
import { entryFor, fingerprint } from "../../extensions/teams-hooks/trust/trust.js";
import { listTaskFiles, readTask } from "../../extensions/teams-hooks/team/tasks.js";
import { eventRequest } from "../helpers/invoke-request.js";
import type { SettingsFor } from "../helpers/team-settings.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const POLICY = { failureAction: "reopen_followup", maxReopensPerTask: 3, followupOwner: "member" };

let team: TempTeam;
let hooksDir: string;
let marks: string;

beforeEach(async () => {
  team = await makeTempTeam({
    teamId: "settings",
    tasks: [
      makeTask({
        id: "1",
        status: "completed",
        owner: "alice",
        subject: "Fix the API client",
        metadata: { labels: ["backend"], files: ["src/api/client.ts"] },
      }),
    ],
  });
  hooksDir = path.join(team.teamsRoot, "_hooks");
  marks = path.join(team.teamsRoot, "ran.txt");
  fs.mkdirSync(path.join(hooksDir, "on_task_completed.d"), { recursive: true });
});
afterEach(async () => {
  await team.cleanup();
});

/** A bash gate whose second line is `settings` (when given); it notes its name in ran.txt when it runs. */
function gate(name: string, settings: string | null, body = "exit 0"): string {
  const file = path.join(hooksDir, name);
  const line = settings === null ? "" : `# pi-teams-hooks: ${settings}\n`;
  fs.writeFileSync(
    file,
    `#!/usr/bin/env bash\n${line}echo ${path.basename(name)} >> ${JSON.stringify(marks)}\n${body}\n`,
    { mode: 0o755 },
  );
  return file;
}

function ran(): string[] {
  return fs.existsSync(marks) ? fs.readFileSync(marks, "utf8").split("\n").filter(Boolean) : [];
}

function request({
  hooks,
  timeoutMs = 20_000,
  allowInsecureHooks,
  ...over
}: Partial<InvokeRequest> & SettingsFor = {}): InvokeRequest {
  return eventRequest(
    { team, hooksDir, settings: { hooks, timeoutMs, allowInsecureHooks }, key: "task_completed:1:a" },
    over,
  );
}

async function logs(): Promise<Array<Record<string, unknown>>> {
  return (await readLogs(team.teamDir)).map((log) => log.result as Record<string, unknown>);
}

async function task1() {
  const read = await readTask(team.taskFile("1"));
  if (!read.ok) throw new Error(read.problem.message);
  return read.value;
}

describe("matchers", () => {
  it("a gate whose matchers do not match is skipped and logged, one whose matchers match runs", async () => {
    gate("on_task_completed.sh", "members=impl-*,qa");
    gate("on_task_completed.d/10-backend.sh", "owner=al* labels=backend paths=src/** subject=*api*");
    gate("on_task_completed.d/20-docs.sh", "paths=docs/**");
    const outcome = await invokeEvent(request({ applyPolicy: true, hooks: POLICY }));
    expect(ran()).toEqual(["10-backend.sh"]);
    expect(outcome.runs.map((r) => [r.hook.name, r.result.ran, r.result.skipped ?? null])).toEqual([
      ["on_task_completed.sh", false, "members=impl-*,qa: member alice does not match"],
      ["10-backend.sh", true, null],
      ["20-docs.sh", false, "paths=docs/**: none of the 1 file(s) in metadata.files match"],
    ]);
    expect(outcome).toMatchObject({ counted: { state: "passed" }, hook: { name: "10-backend.sh" } });
    const logged = await logs();
    expect(logged).toHaveLength(3);
    expect(
      logged
        .filter((r) => r.skipped !== undefined)
        .map((r) => [path.basename(String(r.hookPath)), r.outcome, r.hookSettings]),
    ).toEqual(
      expect.arrayContaining([
        ["on_task_completed.sh", "passed", "members=impl-*,qa"],
        ["20-docs.sh", "passed", "paths=docs/**"],
      ]),
    );
  });

  it("when every gate is skipped, nothing is enforced: no policy, the task untouched, the logs say why", async () => {
    gate("on_task_completed.sh", "owner=bob", "exit 1");
    const before = fs.readFileSync(team.taskFile("1"), "utf8");
    const outcome = await invokeEvent(request({ applyPolicy: true, hooks: POLICY }));
    expect(ran()).toEqual([]);
    expect(outcome).toMatchObject({
      counted: { state: "passed" },
      policyApplied: null,
      summary: "no gate in force: on_task_completed skipped (owner=bob: owner alice does not match)",
    });
    expect(fs.readFileSync(team.taskFile("1"), "utf8")).toBe(before);
    expect(await logs()).toMatchObject([{ ran: false, skipped: "owner=bob: owner alice does not match" }]);
  });
});

describe("a per-hook timeout", () => {
  it("ends its gate before the global one, and says whose timeout it was", async () => {
    gate("on_task_completed.sh", "timeout=1s", "sleep 30");
    const outcome = await invokeEvent(request({ timeoutMs: 25_000 }));
    expect(outcome.result).toMatchObject({
      outcome: "error",
      errorKind: "timeout",
      timedOut: true,
      error: "timeout after 1000ms (the gate's own timeout, line 2)",
      hookSettings: "timeout=1s",
    });
    expect(outcome.result?.durationMs).toBeLessThan(25_000);
    expect(outcome.summary).toBe("timeout after 1000ms (the gate's own timeout, line 2)");
  });
});

describe("shadow mode", () => {
  it("a shadow gate that denies changes nothing but the shadow fields and its log", async () => {
    gate("on_task_completed.sh", "mode=shadow", "echo 'lint: 3 errors' >&2; exit 1");
    const before = await task1();
    const outcome = await invokeEvent(request({ applyPolicy: true, hooks: POLICY }));
    expect(ran()).toEqual(["on_task_completed.sh"]);
    expect(outcome).toMatchObject({
      counted: { state: "passed" },
      policyApplied: null,
      actions: ["shadow: on_task_completed would have denied"],
    });
    const after = await task1();
    const { qualityGateShadowAt, ...shadowFields } = Object.fromEntries(
      Object.entries(after.metadata ?? {}).filter(([k]) => k.startsWith("qualityGateShadow")),
    );
    expect(typeof qualityGateShadowAt).toBe("string");
    expect(shadowFields).toEqual({
      qualityGateShadowHook: "on_task_completed",
      qualityGateShadowOutcome: "failed",
      qualityGateShadowSummary: "exit code 1 • lint: 3 errors",
      qualityGateShadowKey: "task_completed:1:a",
      qualityGateShadowCount: 1,
    });
    // Everything else as it was: status, owner, no reopen, no follow-up task, no message.
    const rest = (t: typeof after) => ({
      ...t,
      metadata: Object.fromEntries(
        Object.entries(t.metadata ?? {}).filter(([k]) => !k.startsWith("qualityGateShadow")),
      ),
    });
    expect(rest(after)).toEqual(rest(before));
    expect((await listTaskFiles(team.teamDir, team.taskListId)).length).toBe(1);
    expect(fs.existsSync(path.join(team.teamDir, "inboxes"))).toBe(false);
    expect(await logs()).toMatchObject([
      { outcome: "passed", exitCode: 1, shadow: { outcome: "failed", wouldDeny: true }, hookSettings: "mode=shadow" },
    ]);

    // The same event again (a retry) counts once; a new event counts again.
    await invokeEvent(request({ applyPolicy: true, hooks: POLICY }));
    expect((await task1()).metadata?.qualityGateShadowCount).toBe(1);
    await invokeEvent(request({ applyPolicy: true, hooks: POLICY, key: "task_completed:1:b" }));
    expect((await task1()).metadata?.qualityGateShadowCount).toBe(2);
  });

  it("a shadow gate that defers holds nothing, and its summary is its reason", async () => {
    gate(
      "on_task_completed.sh",
      "mode=shadow",
      `echo '{"decision":"defer","code":"ci.pending","reason":"waiting for CI"}'`,
    );
    const outcome = await invokeEvent(request({ applyPolicy: true, hooks: POLICY }));
    expect(outcome).toMatchObject({ counted: { state: "passed" }, deferral: null, policyApplied: null });
    expect((await task1()).metadata).toMatchObject({
      qualityGateShadowOutcome: "deferred",
      qualityGateShadowSummary: "deferred (ci.pending): waiting for CI",
    });
    expect(fs.existsSync(path.join(team.teamDir, "hook-state", "deferrals"))).toBe(false);
  });

  it("an enforced gate beside a shadow gate still decides, and a shadow gate's patch is never written", async () => {
    gate("on_task_completed.sh", "mode=shadow", `echo '{"decision":"patch","patch":{"metadata":{"x":1}}}'`);
    gate("on_task_completed.d/10-tests.sh", null, "echo 'tests fail' >&2; exit 1");
    const outcome = await invokeEvent(request({ applyPolicy: true, hooks: POLICY }));
    expect(outcome).toMatchObject({ counted: { state: "failed" }, hook: { name: "10-tests.sh" } });
    // the shadow gate last
    expect(outcome.runs.map((r) => r.hook.name)).toEqual(["10-tests.sh", "on_task_completed.sh"]);
    expect(outcome.runs[1]?.result).toMatchObject({
      outcome: "passed",
      shadow: { outcome: "passed", wouldDeny: false },
      patchIgnored: "a shadow gate's patch is never written",
    });
    const after = await task1();
    expect(after.metadata?.x).toBeUndefined();
    expect(after.metadata?.qualityGateShadowHook).toBeUndefined();
    expect(outcome.actions).toContain("follow-up #2 for alice"); // the enforced gate's policy
  });
});

describe("shadow gates run after the enforced ones", () => {
  it("a slow shadow gate first in the chain cannot spend the enforced gate's deadline, and still runs after a denial", async () => {
    gate("on_task_completed.sh", "mode=shadow", "sleep 30");
    gate("on_task_completed.d/10-tests.sh", null, "exit 0");
    const passed = await invokeEvent(
      request({ applyPolicy: true, hooks: { ...POLICY, limits: { chainDeadlineMs: 1_500 } } }),
    );
    expect(passed.runs.map((r) => r.hook.name)).toEqual(["10-tests.sh", "on_task_completed.sh"]);
    expect(passed).toMatchObject({ counted: { state: "passed" }, hook: { name: "10-tests.sh" } });
    expect(passed.runs[1]?.result).toMatchObject({
      outcome: "passed",
      shadow: { outcome: "error", errorKind: "limit", wouldDeny: true },
    });

    gate("on_task_completed.sh", "mode=shadow", "exit 1");
    gate("on_task_completed.d/10-tests.sh", null, "exit 1");
    fs.rmSync(marks, { force: true });
    const denied = await invokeEvent(request({ applyPolicy: true, hooks: POLICY, key: "task_completed:1:b" }));
    expect(ran()).toEqual(["10-tests.sh", "on_task_completed.sh"]);
    expect(denied).toMatchObject({ counted: { state: "failed" }, hook: { name: "10-tests.sh" } });
    expect(denied.runs[1]?.result.shadow).toMatchObject({ outcome: "failed", wouldDeny: true });
  });

  it("a gate its matchers skip is skipped even once the chain's deadline has passed", async () => {
    // idle runs every gate of its chain, also after one fails: the second is reached past the deadline.
    gate("on_idle.sh", null, "sleep 30");
    fs.mkdirSync(path.join(hooksDir, "on_idle.d"));
    gate("on_idle.d/10-bob.sh", "members=bob");
    gate("on_idle.d/20-all.sh", null);
    const outcome = await invokeEvent(
      request({ event: "idle", key: "idle:alice:1", taskId: null, hooks: { limits: { chainDeadlineMs: 1_000 } } }),
    );
    expect(outcome.runs.map((r) => [r.hook.name, r.result.errorKind ?? null, r.result.skipped ?? null])).toEqual([
      ["on_idle.sh", "limit", null],
      ["10-bob.sh", null, "members=bob: member alice does not match"],
      ["20-all.sh", "limit", null],
    ]);
  });
});

describe("a settings line that cannot be read", () => {
  it("stops the gate with a closed error naming the key and the line, even where errors are open", async () => {
    gate("on_idle.sh", "members=qa timout=5s");
    const outcome = await invokeEvent(
      request({ event: "idle", key: "idle:alice:1", taskId: null, hooks: { failureMode: "open" } }),
    );
    expect(ran()).toEqual([]);
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(outcome.result).toMatchObject({
      ran: false,
      outcome: "error",
      errorKind: "hook_settings",
      error:
        'on_idle.sh:2: unknown setting "timout" (did you mean timeout?) (settings: timeout, members, owner, subject, labels, paths, mode, format, required, sandbox, sandbox-write, env, run-as, contract, verdict): the gate did not run',
    });
  });
});

describe("reading the line from the file", () => {
  it("never reads half a line: one cut by the end of the 8 KiB head is not read", () => {
    const file = path.join(hooksDir, "on_task_completed.sh");
    const long = `#${"x".repeat(8_180)}\n`;
    fs.writeFileSync(file, `${long}# pi-teams-hooks: members=impl-a,impl-b\nexit 0\n`);
    expect(readHookSettings(file, "task_completed")).toEqual({ ok: true, settings: null });
    fs.writeFileSync(file, `#!/usr/bin/env bash\n# pi-teams-hooks: members=impl-a,impl-b\n${long}`);
    expect(readHookSettings(file, "task_completed")).toEqual({
      ok: true,
      settings: { line: 2, match: { members: ["impl-a", "impl-b"] } },
    });
  });

  it("a FIFO where the gate was is no settings, at once", () => {
    const fifo = path.join(hooksDir, "on_idle.sh");
    execFileSync("mkfifo", [fifo]);
    expect(readHookSettings(fifo, "idle")).toEqual({ ok: true, settings: null });
  });
});

describe("trust", () => {
  it("covers the settings line: a trusted gate whose line changed is refused until trusted again", async () => {
    const file = gate("on_task_completed.sh", "members=alice", "exit 1");
    const fp = fingerprint(file);
    if ("problem" in fp) throw new Error(fp.problem);
    const record = { version: 1 as const, gates: { [file]: entryFor(fp, new Date().toISOString(), "test") } };
    const trust = { record };
    expect((await invokeEvent(request({ trust, allowInsecureHooks: true }))).counted).toEqual({ state: "failed" });
    // An agent switches the gate off for everyone but a member who does not exist: refused, not skipped.
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("members=alice", "members=nobody"));
    const outcome = await invokeEvent(request({ trust, allowInsecureHooks: true, key: "task_completed:1:b" }));
    expect(outcome.result).toMatchObject({ ran: false, errorKind: "untrusted_hook" });
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(ran()).toEqual(["on_task_completed.sh"]);
  });
});
