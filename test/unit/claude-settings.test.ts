import { describe, expect, it } from "vitest";
import { CLAUDE_EVENT_NAMES, CLAUDE_GATE_EVENTS } from "../../extensions/teams-hooks/contract/claude.js";
import { chainDirName } from "../../extensions/teams-hooks/gates/chain.js";
import { parseHookSettings } from "../../extensions/teams-hooks/settings/hook-line.js";
import {
  claudeSettingsLine,
  claudeWrapperPath,
  planClaudeWrappers,
  type ClaudePlan,
} from "../../extensions/teams-hooks/settings/claude-settings.js";

const FILE = "/p/.claude/settings.json";

function plan(raw: unknown): Extract<ClaudePlan, { kind: "plan" }> {
  const result = planClaudeWrappers(raw, FILE);
  if (result.kind !== "plan") throw new Error(`expected a plan, got ${result.problems.join("; ")}`);
  return result;
}

function problems(raw: unknown): string[] {
  const result = planClaudeWrappers(raw, FILE);
  if (result.kind !== "invalid") throw new Error("expected problems, got a plan");
  return result.problems;
}

const command = (cmd: string, extra: Record<string, unknown> = {}) => ({ type: "command", command: cmd, ...extra });

describe("planClaudeWrappers", () => {
  it("numbers the command hooks per event in file order, across matcher groups, with the chain dir of each event", () => {
    const p = plan({
      hooks: {
        TeammateIdle: [{ hooks: [command("idle-check")] }],
        TaskCompleted: [
          { hooks: [command("a"), { type: "agent", prompt: "x" }] },
          { hooks: [command("b", { timeout: 30 })] },
        ],
      },
    });
    expect(
      p.wrappers.map((w) => [w.relPath, w.claudeEvent, w.event, w.n, w.field, w.command, w.timeoutSeconds]),
    ).toEqual([
      [
        "on_task_completed.d/claude-1.sh",
        "TaskCompleted",
        "task_completed",
        1,
        "hooks.TaskCompleted[0].hooks[0]",
        "a",
        null,
      ],
      [
        "on_task_completed.d/claude-2.sh",
        "TaskCompleted",
        "task_completed",
        2,
        "hooks.TaskCompleted[1].hooks[0]",
        "b",
        30,
      ],
      ["on_idle.d/claude-1.sh", "TeammateIdle", "idle", 1, "hooks.TeammateIdle[0].hooks[0]", "idle-check", null],
    ]);
    expect(p.notes.map((n) => n.message)).toEqual([
      'skipped hooks.TaskCompleted[0].hooks[1]: type "agent" (only command hooks can run here)',
      "note: on_task_completed.d/claude-1.sh, on_idle.d/claude-1.sh: no timeout in the settings, so the hook timeout in force applies (60 s unless set; doctor shows it), where Claude Code would give 600 s",
    ]);
  });

  it("writes the #! line, the settings line, where it came from, and the command verbatim", () => {
    const cmd = 'cd "$CLAUDE_PROJECT_DIR" &&\n  npm test -- --reporter=dot 2>&1 | tail -n 20';
    const [timed, plain] = plan({
      hooks: { TaskCompleted: [{ hooks: [command(cmd, { timeout: 90 }), command("make check\n")] }] },
    }).wrappers;
    expect(timed?.content).toBe(
      `#!/usr/bin/env bash\n# pi-teams-hooks: format=claude timeout=90s\n# Claude Code's TaskCompleted hook 1 from ${FILE}, run unchanged (written by pi-teams-hooks init --from-claude).\n${cmd}\n`,
    );
    expect(plain?.content.split("\n").slice(1)).toEqual([
      "# pi-teams-hooks: format=claude",
      `# Claude Code's TaskCompleted hook 2 from ${FILE}, run unchanged (written by pi-teams-hooks init --from-claude).`,
      "make check",
      "",
    ]);
  });

  it("writes a settings line the runner reads as format=claude with the hook's timeout", () => {
    const [timed, plain] = plan({
      hooks: { TeammateIdle: [{ hooks: [command("a", { timeout: 45 }), command("b")] }] },
    }).wrappers;
    expect(parseHookSettings(timed?.content ?? "", "idle", "claude-1.sh")).toEqual({
      ok: true,
      settings: { line: 2, format: "claude", timeoutMs: 45_000 },
    });
    expect(parseHookSettings(plain?.content ?? "", "idle", "claude-2.sh")).toEqual({
      ok: true,
      settings: { line: 2, format: "claude" },
    });
  });

  it("says when a timeout is longer than the default chain deadline", () => {
    const p = plan({ hooks: { TaskCompleted: [{ hooks: [command("slow", { timeout: 900 })] }] } });
    expect(p.notes.map((n) => [n.kind, n.field])).toEqual([
      ["over_deadline", "hooks.TaskCompleted[0].hooks[0].timeout"],
    ]);
    expect(p.notes[0]?.message).toBe(
      "note: on_task_completed.d/claude-1.sh: its timeout of 900 s is longer than the chain deadline (300 s unless config.json hooks.limits.chainDeadlineMs says otherwise), which cuts it short",
    );
  });

  it("keeps a newline in the settings path inside the comment", () => {
    const result = planClaudeWrappers(
      { hooks: { TaskCompleted: [{ hooks: [command("true")] }] } },
      "/p/odd\nrm -rf x/settings.json",
    );
    expect(result.kind === "plan" && result.wrappers[0]?.content.split("\n")[2]).toBe(
      `# Claude Code's TaskCompleted hook 1 from "/p/odd\\nrm -rf x/settings.json", run unchanged (written by pi-teams-hooks init --from-claude).`,
    );
  });

  it.each([
    [1, "timeout=1s"],
    [0.5, "timeout=1s"],
    [600, "timeout=600s"],
  ])("a timeout of %s seconds is written as %s", (timeout, key) => {
    const [w] = plan({ hooks: { TaskCompleted: [{ hooks: [command("x", { timeout })] }] } }).wrappers;
    expect(w?.content.split("\n")[1]).toBe(`# pi-teams-hooks: format=claude ${key}`);
  });

  it("says what it ignores or changes: a matcher, async, a rounded timeout, disableAllHooks, events that are not gates", () => {
    const p = plan({
      disableAllHooks: true,
      hooks: {
        PreToolUse: [{ matcher: "Bash", hooks: [command("echo pre")] }],
        TaskCompleted: [
          { matcher: "", hooks: [] },
          { matcher: "Edit|Write", hooks: [command("x", { async: true, timeout: 2.5 })] },
        ],
        TaskCreated: [],
      },
    });
    expect(p.notes.map((n) => [n.kind, n.field])).toEqual([
      ["hooks_disabled", "disableAllHooks"],
      ["ignored_matcher", "hooks.TaskCompleted[1].matcher"],
      ["timeout_rounded", "hooks.TaskCompleted[1].hooks[0].timeout"],
      ["async", "hooks.TaskCompleted[1].hooks[0].async"],
      ["not_mapped", "hooks"],
    ]);
    expect(p.notes.at(-1)?.message).toMatch(/^not mapped: PreToolUse, TaskCreated \(/);
    expect(p.wrappers).toHaveLength(1);
  });

  it.each([
    ["no hooks key", {}],
    ["hooks: null", { hooks: null }],
    ["only other events", { hooks: { Stop: [{ hooks: [command("x")] }] } }],
    [
      "only http and prompt hooks",
      {
        hooks: {
          TaskCompleted: [
            {
              hooks: [
                { type: "http", url: "https://x" },
                { type: "prompt", prompt: "p" },
              ],
            },
          ],
        },
      },
    ],
  ])("%s: a plan with no wrapper", (_name, raw) => {
    expect(plan(raw).wrappers).toEqual([]);
  });

  it.each([
    ["not an object", [], `${FILE}: expected an object (Claude Code settings), got an array`],
    [
      "hooks not an object",
      { hooks: "x" },
      `${FILE}: hooks: expected an object (event name → matcher groups), got "x"`,
    ],
    [
      "an event not an array",
      { hooks: { TeammateIdle: {} } },
      `${FILE}: hooks.TeammateIdle: expected an array of matcher groups, got an object`,
    ],
    [
      "a group not an object",
      { hooks: { TaskCompleted: ["x"] } },
      `${FILE}: hooks.TaskCompleted[0]: expected an object ({"hooks": [...]}), got "x"`,
    ],
    [
      "a group without hooks",
      { hooks: { TaskCompleted: [{ matcher: "" }] } },
      `${FILE}: hooks.TaskCompleted[0].hooks: expected an array of hooks, got missing`,
    ],
    [
      "a hook not an object",
      { hooks: { TaskCompleted: [{ hooks: [1] }] } },
      `${FILE}: hooks.TaskCompleted[0].hooks[0]: expected an object ({"type": "command", "command": "..."}), got 1`,
    ],
    [
      "a hook without type",
      { hooks: { TaskCompleted: [{ hooks: [{ command: "x" }] }] } },
      `${FILE}: hooks.TaskCompleted[0].hooks[0].type: expected a string ("command", "http", "prompt" or "agent"), got missing`,
    ],
    [
      "a command that is not a string",
      { hooks: { TaskCompleted: [{ hooks: [command("a"), { type: "command", command: ["npm", "test"] }] }] } },
      `${FILE}: hooks.TaskCompleted[0].hooks[1].command: expected a string, got an array`,
    ],
    [
      "a blank command",
      { hooks: { TaskCompleted: [{ hooks: [command("  ")] }] } },
      `${FILE}: hooks.TaskCompleted[0].hooks[0].command: expected a command, not blank, got "  "`,
    ],
    [
      "a command with a settings line of its own",
      { hooks: { TaskCompleted: [{ hooks: [command("# pi-teams-hooks: timeout=5s\nmake")] }] } },
      `${FILE}: hooks.TaskCompleted[0].hooks[0].command: the wrapper would not run (on_task_completed.d/claude-1.sh:4: a second pi-teams-hooks: line (the first is line 2); give every setting on one line)`,
    ],
    [
      "a timeout as a string",
      { hooks: { TaskCompleted: [{ hooks: [command("x", { timeout: "30" })] }] } },
      `${FILE}: hooks.TaskCompleted[0].hooks[0].timeout: expected a number of seconds, more than 0 and at most 2147483, got "30"`,
    ],
    [
      "a zero timeout",
      { hooks: { TaskCompleted: [{ hooks: [command("x", { timeout: 0 })] }] } },
      `${FILE}: hooks.TaskCompleted[0].hooks[0].timeout: expected a number of seconds, more than 0 and at most 2147483, got 0`,
    ],
    [
      "a timeout longer than a timer can wait",
      { hooks: { TaskCompleted: [{ hooks: [command("x", { timeout: 2147484 })] }] } },
      `${FILE}: hooks.TaskCompleted[0].hooks[0].timeout: expected a number of seconds, more than 0 and at most 2147483, got 2147484`,
    ],
  ])("%s is refused, naming the file and the JSON path", (_name, raw, message) => {
    expect(problems(raw)).toEqual([message]);
  });

  it("reports every problem, not only the first, and ignores the shape of events it does not map", () => {
    const found = problems({
      hooks: {
        TaskCompleted: [{ hooks: [{ type: "command", command: 1 }] }],
        TeammateIdle: "x",
        PreToolUse: "not checked",
      },
    });
    expect(found).toEqual([
      `${FILE}: hooks.TaskCompleted[0].hooks[0].command: expected a string, got 1`,
      `${FILE}: hooks.TeammateIdle: expected an array of matcher groups, got "x"`,
    ]);
  });
});

describe("claudeSettingsLine", () => {
  it.each([
    [null, "# pi-teams-hooks: format=claude"],
    [45, "# pi-teams-hooks: format=claude timeout=45s"],
  ])("timeout %s → %s", (timeout, line) => {
    expect(claudeSettingsLine(timeout)).toBe(line);
  });
});

describe("CLAUDE_GATE_EVENTS", () => {
  it("maps TaskCompleted and TeammateIdle, and nothing else, both ways", () => {
    expect(CLAUDE_GATE_EVENTS).toEqual({ TaskCompleted: "task_completed", TeammateIdle: "idle" });
    expect(CLAUDE_EVENT_NAMES).toEqual({ task_completed: "TaskCompleted", idle: "TeammateIdle" });
  });
});

describe("claudeWrapperPath", () => {
  it.each(Object.values(CLAUDE_GATE_EVENTS))("puts the wrappers of %s in the chain dir the runner reads", (event) => {
    expect(claudeWrapperPath(event, 3)).toBe(`${chainDirName(event)}/claude-3.sh`);
  });
});
