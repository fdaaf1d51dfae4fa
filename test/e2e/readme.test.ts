/**
 * The README's commands, run as a reader runs them: each line of its shell blocks, in order, with bash,
 * in a temporary HOME (so `~/.pi/agent/teams` is a fresh teams root) and a project folder holding the
 * checkout's examples/ and a Claude Code settings file, the built `pi-teams-hooks` on PATH. Each exits
 * 0, or as listed below with why; where the README shows output under a block, the real output of that
 * block starts with those lines (the home folder, times, durations and run ids normalised; a run id
 * the README shows stands for the one the real run printed, in later commands too). Left out, each
 * with its reason: what needs a running server or the checkout's own build and tests.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, REPO_ROOT, ensureBuilt, waitUntil } from "../helpers/leader-rig.js";

/** README commands not run, and why. */
const LEFT_OUT: ReadonlyArray<{ command: RegExp; why: string }> = [
  { command: /^npm /, why: "builds and tests this checkout: what the test suite itself is" },
  { command: /^git clone /, why: "fetches the repository from the network: the test runs in this checkout" },
  {
    command: /^pi install /,
    why: "writes the user's pi settings (and fetches from git or npm): test/e2e/pi-session.test.ts loads the extension into a real pi",
  },
  {
    command: /^pi-teams-hooks serve --teams-root /,
    why: "a running server, on the fixed port 7420 (test/e2e/serve.test.ts runs one on a free port)",
  },
  {
    command: /^pi-teams-hooks decide /,
    why: "settles a gate an HTTP handler held: needs that handler's server, and the run id it was sent",
  },
];
/** README commands that exit other than 0, as the README says they do. */
const EXITS: ReadonlyArray<{ command: RegExp; code: number; why: string }> = [
  {
    command: /^pi-teams-hooks run task_completed .*--task 2 /,
    code: 1,
    why: "brian's draft fails the gate, which is what the example shows",
  },
  {
    command: /^pi-teams-hooks trust /,
    code: 1,
    why: "the gate init --from-claude wrote is new since the leader trusted the others: listed, not approved",
  },
];
/** Commands that run until stopped: each gets SIGINT once it has printed the lines the README shows (or one). */
const UNTIL_STOPPED = [/^pi-teams-hooks watch (?!.*--once)/, /^pi-teams-hooks logs .*--follow/];

interface Block {
  /** README line number of each command. */
  commands: Array<{ line: number; text: string }>;
  /** The output the README shows under the block, up to a line "…". */
  shown: string[] | null;
}

/** The README's shell blocks (not a script: a block whose first line is `#!`), each with the output shown under it. */
function readmeBlocks(readme: string): Block[] {
  const lines = readme.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```bash") continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end] !== "```") end++;
    const body = lines.slice(start, end);
    i = end;
    if (body[0]?.startsWith("#!")) continue;
    const commands = body.flatMap((text, k) =>
      text.trim() === "" || text.trimStart().startsWith("#") ? [] : [{ line: start + k + 1, text: text.trim() }],
    );
    let next = end + 1;
    while (next < lines.length && lines[next] === "") next++;
    let shown: string[] | null = null;
    if (lines[next] === "```") {
      let close = next + 1;
      while (close < lines.length && lines[close] !== "```") close++;
      const output = lines.slice(next + 1, close);
      const cut = output.indexOf("…");
      shown = cut >= 0 ? output.slice(0, cut) : output;
    }
    blocks.push({ commands, shown });
  }
  return blocks;
}

const README = readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
const BLOCKS = readmeBlocks(README);

/** A run id as lines show it: 8 hex digits. */
const RUN_ID = /\b[0-9a-f]{8}\b/g;

describe("the README's commands, on the example team", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "pi-teams-readme-"));
  const home = path.join(root, "home");
  const project = path.join(root, "project");
  const bin = path.join(root, "bin");
  let env: Record<string, string> = {};
  /** README run id → the real one, learnt from output the README shows. */
  const ids = new Map<string, string>();
  const skipped = new Set<RegExp>();
  const exitsSeen = new Set<RegExp>();

  beforeAll(async () => {
    await ensureBuilt();
    await mkdir(home, { recursive: true });
    await mkdir(path.join(project, ".claude"), { recursive: true });
    await mkdir(bin);
    await symlink(BIN, path.join(bin, "pi-teams-hooks"));
    await symlink(path.join(REPO_ROOT, "examples"), path.join(project, "examples"));
    // The project's Claude Code hooks, for `init --from-claude`.
    const lint = { type: "command", command: "npm run lint --if-present" };
    const claude = { hooks: { TaskCompleted: [{ hooks: [lint] }] } };
    await writeFile(path.join(project, ".claude", "settings.json"), `${JSON.stringify(claude)}\n`);
    for (const [key, value] of Object.entries(process.env)) {
      if (value !== undefined && !key.startsWith("PI_TEAMS_")) env[key] = value;
    }
    const PATH = [bin, path.dirname(process.execPath), env.PATH ?? ""].join(path.delimiter);
    env = { ...env, HOME: home, PATH, NO_COLOR: "1", TZ: "UTC", COLUMNS: "200" };
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  /** A line as compared: home, times, durations and whitespace runs made alike. */
  const normal = (line: string): string =>
    line
      .split(home)
      .join("/home/me")
      .replace(/\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?Z?/g, "<time>")
      .replace(/\b\d\d:\d\d:\d\d\b/g, "<clock>")
      .replace(/\b\d+(\.\d+)?(ms|s)\b/g, "<duration>")
      .replace(/\s+/g, " ")
      .trimEnd();

  /** Runs one README line with bash; the environment it leaves (an `export`) is the next line's. */
  async function runLine(
    text: string,
    stopAfterLines: number | null,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const envFile = path.join(root, "env");
    const script =
      stopAfterLines === null ? `${text}\nstatus=$?\nenv -0 > "$README_TEST_ENV"\nexit $status` : `exec ${text}`;
    const child = spawn("bash", ["-c", script], {
      cwd: project,
      env: { ...env, README_TEST_ENV: envFile },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    if (stopAfterLines !== null) {
      let done = false;
      void exited.then(() => (done = true));
      await waitUntil(`${stopAfterLines} line(s) of "${text}"`, () => stdout.split("\n").length > stopAfterLines, {
        timeoutMs: 20_000,
        abort: () => (done ? `it exited early:\n${stdout}${stderr}` : null),
      });
      child.kill("SIGINT");
      return { code: await exited, stdout, stderr };
    }
    const code = await exited;
    const left: Record<string, string> = {};
    for (const entry of (await readFile(envFile, "utf8")).split("\0")) {
      const at = entry.indexOf("=");
      if (at > 0) left[entry.slice(0, at)] = entry.slice(at + 1);
    }
    for (const key of ["PWD", "OLDPWD", "SHLVL", "_", "README_TEST_ENV"]) delete left[key];
    env = left;
    return { code, stdout, stderr };
  }

  it("finds the commands to run", () => {
    const commands = BLOCKS.flatMap((b) => b.commands).filter((c) => c.text.includes("pi-teams-hooks "));
    expect(commands.length).toBeGreaterThanOrEqual(20);
    expect(BLOCKS.filter((b) => b.shown !== null).length).toBeGreaterThanOrEqual(3);
  });

  for (const [b, block] of BLOCKS.entries()) {
    const label = block.commands.map((c) => `README line ${c.line}`).join(", ");
    const prints = block.shown ? ", and prints what it shows" : "";
    it(`block ${b + 1} (${label}): exits as the README says${prints}`, async () => {
      let output = "";
      for (const command of block.commands) {
        const leftOut = LEFT_OUT.find((l) => l.command.test(command.text));
        if (leftOut) {
          skipped.add(leftOut.command);
          continue;
        }
        let text = command.text;
        for (const [shown, real] of ids) text = text.split(shown).join(real);
        const last = command === block.commands[block.commands.length - 1];
        const untilStopped = UNTIL_STOPPED.some((r) => r.test(text));
        const stop = untilStopped ? Math.max(1, last ? (block.shown?.length ?? 0) : 0) : null;
        const result = await runLine(text, stop);
        const expected = EXITS.find((e) => e.command.test(command.text));
        if (expected) exitsSeen.add(expected.command);
        const what = `README line ${command.line}: ${command.text}\n${result.stdout}${result.stderr}`;
        expect(result.code, what).toBe(expected?.code ?? 0);
        output += result.stdout;
      }
      if (!block.shown) return;
      const real = output.split("\n");
      for (const [i, shownLine] of block.shown.entries()) {
        const realLine = real[i] ?? "";
        // Run ids: the README's stand for the ones this run printed in their place, learnt where first shown.
        const shownIds = shownLine.match(RUN_ID) ?? [];
        const realIds = realLine.match(RUN_ID) ?? [];
        if (shownIds.length === realIds.length) {
          shownIds.forEach((id, k) => ids.has(id) || ids.set(id, realIds[k] ?? id));
        }
        let expectedLine = shownLine;
        for (const [shown, got] of ids) expectedLine = expectedLine.split(shown).join(got);
        const where = `line ${i + 1} of the output shown under README line ${block.commands[0]?.line}`;
        expect(normal(realLine), where).toBe(normal(expectedLine));
      }
    });
  }

  it("left out only what the list says, and every exit other than 0 was seen", () => {
    expect([...skipped].map(String).sort()).toEqual(LEFT_OUT.map((l) => String(l.command)).sort());
    expect([...exitsSeen].map(String).sort()).toEqual(EXITS.map((e) => String(e.command)).sort());
  });
});
