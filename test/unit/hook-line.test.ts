/**
 * A gate's settings line (settings/hook-line.ts): what it may say, what stops the gate (named by file,
 * line and key), and how its matchers choose events.
 */
import { describe, expect, it } from "vitest";
import {
  describeSettings,
  globMatches,
  parseDuration,
  parseHookSettings,
  unmatched,
} from "../../extensions/teams-hooks/settings/hook-line.js";

const parse = (text: string, event: "task_completed" | "task_failed" | "idle" | "task_started" = "task_completed") =>
  parseHookSettings(text, event, "on_task_completed.sh");

describe("the settings line", () => {
  it("reads verdict=exit (the exit status alone decides), refuses another value, and refuses it with format=claude", () => {
    const exitOnly = parse("# pi-teams-hooks: env=PI_TEAMS_GATE_CMD verdict=exit\n");
    expect(exitOnly).toEqual({ ok: true, settings: { line: 1, env: ["PI_TEAMS_GATE_CMD"], verdict: "exit" } });
    if (exitOnly.ok && exitOnly.settings)
      expect(describeSettings(exitOnly.settings)).toBe("env=PI_TEAMS_GATE_CMD verdict=exit");
    expect(parse("# pi-teams-hooks: verdict=any\n")).toEqual({ ok: true, settings: { line: 1, verdict: "any" } });
    expect(parse("# pi-teams-hooks: verdict=stdout\n")).toEqual({
      ok: false,
      error: "on_task_completed.sh:1: verdict=stdout: expected any or exit",
    });
    expect(parse("// pi-teams-hooks: format=claude verdict=exit\n")).toEqual({
      ok: false,
      error:
        "on_task_completed.sh:1: verdict=exit with format=claude: a Claude Code gate answers on stdout, which verdict=exit does not read",
    });
  });

  it("is read in shell and JavaScript comments, within the first 10 lines", () => {
    expect(
      parse(
        "#!/usr/bin/env bash\n# pi-teams-hooks: timeout=300s members=impl-*,qa owner=* subject=*api* labels=backend mode=shadow\necho hi\n",
      ),
    ).toEqual({
      ok: true,
      settings: {
        line: 2,
        timeoutMs: 300_000,
        mode: "shadow",
        match: { members: ["impl-*", "qa"], owner: ["*"], subject: ["*api*"], labels: ["backend"] },
      },
    });
    expect(parse('// pi-teams-hooks: format=claude paths=src/**,"docs/a b.md"\n')).toEqual({
      ok: true,
      settings: { line: 1, format: "claude", match: { paths: ["src/**", "docs/a b.md"] } },
    });
    expect(parse(`${"\n".repeat(10)}# pi-teams-hooks: timeout=1s\n`)).toEqual({
      ok: true,
      settings: null,
      notes: ["on_task_completed.sh:11: looks like a settings line, but is not read (it is past line 10)"],
    });
    expect(parse("echo '# pi-teams-hooks: timeout=1s'\n# PI-TEAMS-HOOKS: mode=shadow\n")).toEqual({
      ok: true,
      settings: null,
      notes: [
        "on_task_completed.sh:1: looks like a settings line, but is not read (only a line that starts `# pi-teams-hooks:` or `// pi-teams-hooks:`, in lower case, is read)",
        "on_task_completed.sh:2: looks like a settings line, but is not read (only a line that starts `# pi-teams-hooks:` or `// pi-teams-hooks:`, in lower case, is read)",
      ],
    });
    expect(parse("\uFEFF# pi-teams-hooks: mode=shadow\r\necho\r\n")).toEqual({
      ok: true,
      settings: { line: 1, mode: "shadow" },
    });
    const optional = parse("# pi-teams-hooks: required=false mode=shadow\n");
    expect(optional).toEqual({ ok: true, settings: { line: 1, mode: "shadow", required: false } });
    if (optional.ok && optional.settings)
      expect(describeSettings(optional.settings)).toBe("mode=shadow required=false");
  });

  it.each([
    [
      "# pi-teams-hooks: timout=30s",
      'on_task_completed.sh:1: unknown setting "timout" (did you mean timeout?) (settings: timeout, members, owner, subject, labels, paths, mode, format, required, sandbox, sandbox-write, env, run-as, contract, verdict)',
    ],
    [
      "# pi-teams-hooks: timeout=soon",
      "on_task_completed.sh:1: timeout=soon: expected a duration such as 90s, 5m, 1500ms or 2h",
    ],
    [
      "# pi-teams-hooks: timeout=0s",
      "on_task_completed.sh:1: timeout=0s: out of range: 1ms to 2147483647ms, as for the global timeout",
    ],
    ["# pi-teams-hooks: mode=dry", "on_task_completed.sh:1: mode=dry: expected enforce or shadow"],
    ["# pi-teams-hooks: required=no", "on_task_completed.sh:1: required=no: expected true or false"],
    ["# pi-teams-hooks: mode=shadow mode=enforce", "on_task_completed.sh:1: mode is given twice"],
    ["# pi-teams-hooks: members=", "on_task_completed.sh:1: members has no value (members=…)"],
    [
      "# pi-teams-hooks: members=a,,b",
      "on_task_completed.sh:1: members=a,,b: an empty glob in the list (globs are separated by commas)",
    ],
    ['# pi-teams-hooks: subject="open', "on_task_completed.sh:1: a double quote is not closed"],
    [
      "# pi-teams-hooks: mode=shadow\n# pi-teams-hooks: timeout=1s",
      "on_task_completed.sh:2: a second pi-teams-hooks: line (the first is line 1); give every setting on one line",
    ],
  ])("%s stops the gate", (text, error) => {
    expect(parse(text)).toEqual({ ok: false, error });
  });

  it("format=claude only where Claude Code has the event", () => {
    expect(parse("# pi-teams-hooks: format=claude", "idle")).toMatchObject({
      ok: true,
      settings: { format: "claude" },
    });
    expect(parse("# pi-teams-hooks: format=claude", "task_failed")).toEqual({
      ok: false,
      error:
        "on_task_completed.sh:1: format=claude: Claude Code has no event for task_failed (format=claude is for on_task_completed, as TaskCompleted, and on_idle, as TeammateIdle)",
    });
  });

  it("durations and their description", () => {
    expect([
      parseDuration("90s"),
      parseDuration("5m"),
      parseDuration("1500ms"),
      parseDuration("2h"),
      parseDuration("30"),
      parseDuration("1.5s"),
      parseDuration("-1s"),
    ]).toEqual([90_000, 300_000, 1500, 7_200_000, 30_000, 1500, null]);
    const read = parse("# pi-teams-hooks: mode=shadow timeout=1500ms owner=a*");
    expect(read.ok && read.settings ? describeSettings(read.settings) : null).toBe(
      "timeout=1500ms owner=a* mode=shadow",
    );
  });
});

describe("matchers", () => {
  const task = (over: Record<string, unknown> = {}) => ({
    owner: "impl-1",
    subject: "Fix the API docs",
    metadata: {},
    ...over,
  });

  it("all given must match, any glob of one", () => {
    expect(unmatched({ members: ["impl-*", "qa"] }, { member: "qa", task: task() })).toBeNull();
    expect(unmatched({ members: ["impl-*"] }, { member: "qa", task: task() })).toBe(
      "members=impl-*: member qa does not match",
    );
    expect(unmatched({ members: ["*"] }, { member: null, task: null })).toBe("members=*: the event has no member");
    expect(unmatched({ owner: ["*"] }, { member: "qa", task: task({ owner: null }) })).toBe(
      "owner=*: the task has no owner",
    );
    expect(unmatched({ owner: ["impl-?"], members: ["qa"] }, { member: "qa", task: task() })).toBeNull();
    expect(unmatched({ subject: ["*api*"] }, { member: null, task: task() })).toBeNull(); // case is ignored
    expect(unmatched({ subject: ["*ui*"] }, { member: null, task: task() })).toBe(
      "subject=*ui*: the subject does not match",
    );
    expect(unmatched({ subject: ["*"] }, { member: "a", task: null })).toBe("subject=*: the event has no task");
  });

  it("labels from metadata.labels, a list or a comma string", () => {
    expect(
      unmatched({ labels: ["backend"] }, { member: null, task: task({ metadata: { labels: ["ui", "backend"] } }) }),
    ).toBeNull();
    expect(
      unmatched({ labels: ["back*"] }, { member: null, task: task({ metadata: { labels: "ui, backend" } }) }),
    ).toBeNull();
    expect(unmatched({ labels: ["backend"] }, { member: null, task: task({ metadata: { labels: ["ui"] } }) })).toBe(
      "labels=backend: labels ui do not match",
    );
    expect(unmatched({ labels: ["backend"] }, { member: null, task: task() })).toBe(
      "labels=backend: the task has no metadata.labels",
    );
  });

  it("paths on metadata.files; a task that recorded none runs the gate", () => {
    const files = (list: unknown) => ({ member: null, task: task({ metadata: { files: list } }) });
    expect(unmatched({ paths: ["src/**"] }, files(["docs/a.md", "src/x/y.ts"]))).toBeNull();
    expect(unmatched({ paths: ["*.ts"] }, files(["src/x/y.ts"]))).toBeNull();
    expect(unmatched({ paths: ["src/*.ts"] }, files(["src/x/y.ts"]))).toBe(
      "paths=src/*.ts: none of the 1 file(s) in metadata.files match",
    );
    expect(unmatched({ paths: ["src/**"] }, { member: null, task: task() })).toBeNull();
    expect(unmatched({ paths: ["src/**"] }, files([]))).toBeNull(); // nothing recorded: run
    expect(unmatched({ paths: ["src/**"] }, files(5))).toBeNull();
    expect(unmatched({ paths: ["src/**"] }, files(["./src/a.ts"]))).toBeNull();
  });

  it("globs: * ? [..], and for paths ** across folders", () => {
    expect(globMatches("a*c", "a/b/c")).toBe(true);
    expect(globMatches("a*c", "a/b/c", { pathLike: true })).toBe(false);
    expect(globMatches("a/**/c", "a/c", { pathLike: true })).toBe(true);
    expect(globMatches("a/**/c", "a/b/d/c", { pathLike: true })).toBe(true);
    expect(globMatches("src/**", "./src/x/y.ts", { pathLike: true })).toBe(true);
    expect(globMatches("**/*.md", "docs/a/b.md", { pathLike: true })).toBe(true);
    expect(globMatches("**/*.md", "docs/a/b.ts", { pathLike: true })).toBe(false);
    expect(globMatches("v[0-9]", "v7")).toBe(true);
    expect(globMatches("v[!0-9]", "v7")).toBe(false);
    expect(globMatches("a.b(c)", "a.b(c)")).toBe(true);
    expect(globMatches("a.b", "axb")).toBe(false);
    expect(globMatches("[abc", "[abc")).toBe(true); // no ], no class
    expect(globMatches("?", "😀")).toBe(true); // one code point
    expect(globMatches("*API*", "fix the api", { fold: true })).toBe(true);
  });

  it("a class written backwards stops the gate at its settings line, for subject after case folding too", () => {
    expect(parse("# pi-teams-hooks: owner=[z-a]*")).toEqual({
      ok: false,
      error: "on_task_completed.sh:1: owner=[z-a]*: [z-a]: the range z-a is written backwards",
    });
    expect(parse("# pi-teams-hooks: subject=[Z-a]*")).toEqual({
      ok: false,
      error: "on_task_completed.sh:1: subject=[Z-a]*: [z-a]: the range z-a is written backwards",
    });
  });

  it("stays linear on hostile text: a long subject or path against many stars", () => {
    // A backtracking regular expression takes seconds to minutes on these; the matcher takes milliseconds.
    const subject = "fix ".repeat(200_000);
    expect(unmatched({ subject: ["*fix*api*"] }, { member: null, task: task({ subject }) })).toBe(
      "subject=*fix*api*: the subject does not match",
    );
    expect(globMatches("*a*a*a*a*b", "a".repeat(50_000))).toBe(false);
    const deep = `${"d/".repeat(20_000)}x.ts`;
    expect(globMatches("**/d/**/d/**/y.ts", deep, { pathLike: true })).toBe(false);
  });
});
