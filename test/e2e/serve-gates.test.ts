/**
 * A team's gate readiness (`GET …/gates`, gates:read) and its runs (`GET …/runs`, logs:read), through
 * the built bin and a real `serve` on 127.0.0.1: trust as `trust` records it, a file that cannot
 * start, a refused settings line, a refused `hooks` block, each making its event or the team not
 * ready; the runs filtered as `logs` filters them, paged 50 at a time by a cursor, a confidential
 * team's without what the gates said; and the refusals every route gives.
 */
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { ensureBuilt, readLogs, runBin } from "../helpers/leader-rig.js";
import { type ServeProcess, api, codeOf, createKey, teamKey, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";

const FAIL = `#!/usr/bin/env bash
echo "lint: 2 problems in src/payroll.ts" >&2
echo '{"decision":"deny","code":"lint.errors","reason":"payroll is not formatted"}'
`;
const PASS = "#!/usr/bin/env bash\nexit 0\n";
const HANDLER_URL = "http://127.0.0.1:9/gate";

let root: string;
let cleanup: () => Promise<void>;
let serve: ServeProcess;
const keys: Record<string, string> = {};
const hooks = () => path.join(root, "_hooks");
const team = (name: string) => path.join(root, name);

beforeAll(async () => {
  await ensureBuilt();
  ({ root, cleanup } = await makeTeamsRoot({
    alpha: {},
    // A handler on a closed port of this machine: the runs below stop at the file gate's denial anyway.
    secret: { hooks: { confidential: true, handlers: [{ name: "ci", events: ["task_completed"], url: HANDLER_URL }] } },
    quiet: {},
    broken: { hooks: { failureAction: "explode" } },
  }));
  await mkdir(hooks(), { recursive: true });
  await writeFile(path.join(hooks(), "on_task_completed.sh"), PASS, { mode: 0o755 });
  keys.ops = await createKey(root, [
    "--name",
    "ops",
    "--scopes",
    "gates:read,logs:read",
    "--teams",
    "alpha,secret,quiet,broken,gone",
  ]);
  keys.gatesOnly = await createKey(root, ["--name", "gates-only", "--scopes", "gates:read", "--teams", "alpha"]);
  keys.logsOnly = await createKey(root, ["--name", "logs-only", "--scopes", "logs:read", "--teams", "alpha"]);
  keys.reader = await teamKey(root, "reader", "tasks:read", "alpha");
  keys.beta = await createKey(root, ["--name", "beta", "--scopes", "gates:read,logs:read", "--teams", "beta"]);
  serve = await startServe(root);
}, 120_000);

afterAll(async () => {
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  await cleanup?.();
});

interface GateJson {
  [field: string]: unknown;
  trustDetail: string | null;
  problems: string[];
}
interface GatesJson {
  ready: boolean;
  trustRecord: string;
  settings: { valid: boolean; problems: string[] };
  events: Record<string, { ready: boolean; gates: GateJson[]; skipped: unknown[] }>;
}
type Json = Record<string, unknown>;

async function gates(name: string, key = keys.ops): Promise<GatesJson> {
  const answer = await api(serve.url, "GET", `/api/v1/teams/${name}/gates`, { key });
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return answer.json as unknown as GatesJson;
}

describe("GET …/gates: readiness", () => {
  it("no trust record yet: the gate is ready (a first start trusts it); events without a gate are ready", async () => {
    const answer = await gates("alpha");
    expect(answer).toMatchObject({
      team: "alpha",
      ready: true,
      settings: { valid: true, problems: [] },
      trustRecord: "none",
    });
    expect(answer.events.task_completed).toEqual({
      ready: true,
      gates: [
        {
          name: "on_task_completed.sh",
          gate: "on_task_completed",
          kind: "v1",
          layer: "global",
          trust: "no_record",
          trustDetail: null,
          executable: true,
          settingsValid: true,
          settings: null,
          insecure: null,
          ready: true,
          problems: [],
        },
      ],
      missing: [],
      skipped: [],
    });
    expect(Object.keys(answer.events).sort()).toEqual(["idle", "task_completed", "task_failed", "task_started"]);
    for (const event of ["idle", "task_failed", "task_started"])
      expect(answer.events[event]).toEqual({ ready: true, gates: [], missing: [], skipped: [] });
  });

  it("trust as recorded: trusted is ready; a changed gate is not, with what changed", async () => {
    expect((await runBin(["trust", "--team-dir", team("quiet"), "--all", "--yes"])).code).toBe(0);
    expect((await gates("quiet")).events.task_completed?.gates[0]).toMatchObject({ trust: "trusted", ready: true });
    await writeFile(path.join(hooks(), "on_task_completed.sh"), `${PASS}# changed\n`, { mode: 0o755 });
    try {
      const answer = await gates("quiet");
      expect(answer.ready).toBe(false);
      expect(answer.trustRecord).toBe("ok");
      const gate = answer.events.task_completed?.gates[0];
      expect(gate).toMatchObject({ trust: "changed", ready: false, executable: true, settingsValid: true });
      expect(gate?.trustDetail).toMatch(/sha256/);
      expect(gate?.problems).toEqual([
        expect.stringMatching(/changed since it was approved.*held until the lead approves it/),
      ]);
    } finally {
      await writeFile(path.join(hooks(), "on_task_completed.sh"), PASS, { mode: 0o755 });
    }
    expect((await gates("quiet")).ready).toBe(true);
  });

  it("a gate that cannot start, a settings line refused, a file that cannot run: each says why", async () => {
    const chain = path.join(team("alpha"), "hooks", "on_task_failed.d");
    await mkdir(chain, { recursive: true });
    // Executable, but no #! line and no extension: the system cannot start it (ENOEXEC).
    await writeFile(path.join(chain, "10-no-shebang"), "echo hi\n", { mode: 0o755 });
    await writeFile(
      path.join(chain, "20-settings.sh"),
      "#!/usr/bin/env bash\n# pi-teams-hooks: timeout=soon\nexit 0\n",
      { mode: 0o755 },
    );
    // No execute bit and no extension: not run at all.
    await writeFile(path.join(chain, "30-not-executable"), "#!/usr/bin/env bash\nexit 0\n", { mode: 0o644 });
    try {
      const answer = await gates("alpha");
      expect(answer.ready).toBe(false);
      const failed = answer.events.task_failed;
      expect(failed?.ready).toBe(false);
      const [noShebang, settings] = failed?.gates ?? [];
      expect(noShebang).toMatchObject({
        name: "on_task_failed.d/10-no-shebang",
        layer: "team",
        kind: "chain",
        executable: false,
        ready: false,
      });
      expect(noShebang?.problems.join("\n")).toMatch(/no #! line/);
      expect(settings).toMatchObject({
        name: "on_task_failed.d/20-settings.sh",
        executable: true,
        settingsValid: false,
        ready: false,
      });
      expect(settings?.problems.join("\n")).toMatch(/settings line refused.*timeout/);
      expect(failed?.skipped).toEqual([
        expect.objectContaining({ name: "on_task_failed.d/30-not-executable", layer: "team", code: "unusable" }),
      ]);
      expect(answer.events.task_completed?.ready).toBe(true);
    } finally {
      await rm(path.join(team("alpha"), "hooks"), { recursive: true, force: true });
    }
    expect((await gates("alpha")).ready).toBe(true);
  });

  it("a hooks block refused whole: settings not valid, the team not ready", async () => {
    const answer = await gates("broken");
    expect(answer.settings.valid).toBe(false);
    expect(answer.settings.problems.join("\n")).toContain("failureAction");
    expect(answer.ready).toBe(false);
    expect(answer.events.task_completed?.ready).toBe(true);
  });

  it("a confidential team's readiness is the same (no task content in it); a handler is no file to start", async () => {
    const answer = await gates("secret");
    expect(answer).toMatchObject({ team: "secret", ready: true, events: { task_completed: { ready: true } } });
    expect(answer.events.task_completed?.gates.map((g) => [g.name, g.kind, g.executable, g.ready])).toEqual([
      ["on_task_completed.sh", "v1", true, true],
      ["http:ci", "http", null, true],
    ]);
  });
});

describe("GET …/runs: the logs filters, paged", () => {
  const runTask = async (name: string, id: string, script: string) => {
    await writeFile(path.join(hooks(), "on_task_completed.sh"), script, { mode: 0o755 });
    const task = {
      id,
      subject: `Task ${id}`,
      description: "payroll export",
      owner: "ada",
      status: "completed",
      blocks: [],
      blockedBy: [],
      metadata: { completedAt: new Date().toISOString() },
      createdAt: "t",
      updatedAt: "t",
    };
    await mkdir(path.join(team(name), "tasks", name), { recursive: true });
    await writeFile(path.join(team(name), "tasks", name, `${id}.json`), `${JSON.stringify(task)}\n`);
    return runBin(["run", "task_completed", "--team-dir", team(name), "--task", id, "--apply-policy"]);
  };

  beforeAll(async () => {
    await runTask("alpha", "1", PASS);
    await runTask("alpha", "2", FAIL);
    await runTask("alpha", "3", PASS);
    await runTask("alpha", "4", FAIL);
    await runTask("secret", "1", FAIL);
    await writeFile(path.join(hooks(), "on_task_completed.sh"), PASS, { mode: 0o755 });
  }, 60_000);

  it("outcome=failed: only failed runs, newest first, with id, times, code, summary, stderr and actions", async () => {
    const answer = await api(serve.url, "GET", "/api/v1/teams/alpha/runs?outcome=failed", { key: keys.ops });
    expect(answer.status).toBe(200);
    const logs = (await readLogs(team("alpha")))
      .filter((l) => l.result.outcome === "failed")
      .sort((a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt));
    expect(answer.json).toMatchObject({ team: "alpha", next: null, unreadable: 0 });
    const runs = answer.json.runs as Json[];
    expect(runs.map((r) => r.taskId)).toEqual(["4", "2"]);
    expect(runs[0]).toEqual({
      runId: logs[0]?.result.runId,
      log: path.basename(logs[0]?.file ?? ""),
      event: "task_completed",
      taskId: "4",
      member: "ada",
      hook: "on_task_completed.sh",
      outcome: "failed",
      errorKind: null,
      exitCode: 0,
      code: "lint.errors",
      summary: expect.stringContaining("payroll is not formatted"),
      stderr: "lint: 2 problems in src/payroll.ts",
      actions: [expect.stringMatching(/nudge ada/)],
      trigger: "hand",
      durationMs: logs[0]?.result.durationMs,
      startedAt: logs[0]?.startedAt,
      endedAt: new Date(
        Date.parse(logs[0]?.startedAt ?? "") + Math.round(logs[0]?.result.durationMs ?? 0),
      ).toISOString(),
      cursor: expect.stringMatching(/^\d+~alpha~/),
    });
    const all = await api(serve.url, "GET", "/api/v1/teams/alpha/runs", { key: keys.ops });
    expect((all.json.runs as Json[]).map((r) => r.taskId)).toEqual(["4", "3", "2", "1"]);
    const task2 = await api(serve.url, "GET", "/api/v1/teams/alpha/runs?task=%232&event=task_completed", {
      key: keys.logsOnly,
    });
    expect((task2.json.runs as Json[]).map((r) => r.taskId)).toEqual(["2"]);
  });

  it("since: an age or an ISO time; a bad one, an unknown field or a foreign cursor is a 400 naming each", async () => {
    expect(
      ((await api(serve.url, "GET", "/api/v1/teams/alpha/runs?since=1h", { key: keys.ops })).json.runs as Json[])
        .length,
    ).toBe(4);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect(
      (await api(serve.url, "GET", `/api/v1/teams/alpha/runs?since=${encodeURIComponent(future)}`, { key: keys.ops }))
        .json.runs,
    ).toEqual([]);
    const bad = await api(
      serve.url,
      "GET",
      "/api/v1/teams/alpha/runs?since=yesterday&outcome=broken&color=red&before=x",
      { key: keys.ops },
    );
    expect(bad.status).toBe(400);
    expect(codeOf(bad)).toBe("invalid_request");
    expect((bad.json.error as { problems?: unknown }).problems).toEqual([
      {
        kind: "request_field",
        path: "color",
        message: "color: unknown field (fields: event, outcome, task, member, hook, since, trigger, before)",
      },
      {
        kind: "request_field",
        path: "before",
        message: "before: not a cursor of this team's runs (give the cursor of a run, or next as answered)",
      },
      {
        kind: "request_field",
        path: "outcome",
        message: 'outcome: "broken" must be one of passed, failed, timed_out, error, deferred',
      },
      { kind: "request_field", path: "since", message: expect.stringMatching(/^since: "yesterday" must be an age/) },
    ]);
  });

  it("pages of 50, newest first: next carries the filters and the last cursor; no run is given twice", async () => {
    const [sample] = (await readLogs(team("alpha"))).filter((l) => l.result.outcome === "passed");
    if (!sample) throw new Error("no passed log");
    const { file: _file, ...record } = sample;
    const base = Date.parse("2026-01-01T00:00:00.000Z");
    for (let i = 0; i < 120; i++) {
      await writeHookLog(team("alpha"), {
        ...record,
        startedAt: new Date(base + i * 1000).toISOString(),
        result: { ...record.result, runId: `page-run-${String(i).padStart(3, "0")}` },
      });
    }
    const seen: string[] = [];
    let route: string | null = "/api/v1/teams/alpha/runs?outcome=passed&since=2026-01-01";
    let pages = 0;
    while (route !== null) {
      const page = await api(serve.url, "GET", route, { key: keys.ops });
      expect(page.status).toBe(200);
      const runs = page.json.runs as Json[];
      expect(runs.length).toBeLessThanOrEqual(50);
      seen.push(...runs.map((r) => String(r.runId)));
      route = page.json.next as string | null;
      if (route !== null)
        expect(route).toMatch(/^\/api\/v1\/teams\/alpha\/runs\?outcome=passed&since=2026-01-01&before=\d+%7Ealpha%7E/);
      pages += 1;
    }
    expect(pages).toBe(3);
    const expected = [...(await readLogs(team("alpha")))]
      .filter((l) => l.result.outcome === "passed")
      .sort((a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt))
      .map((l) => l.result.runId);
    expect(seen).toEqual(expected);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("a confidential team: each run's lifecycle, not what the gate said", async () => {
    const answer = await api(serve.url, "GET", "/api/v1/teams/secret/runs", { key: keys.ops });
    expect(answer.status).toBe(200);
    const [run] = answer.json.runs as Json[];
    expect(run).toMatchObject({
      taskId: "1",
      outcome: "failed",
      member: "ada",
      code: null,
      summary: null,
      stderr: null,
      actions: [expect.stringMatching(/nudge ada/)],
    });
    expect(JSON.stringify(answer.json)).not.toMatch(/payroll|lint/);
  });
});

describe("the refusals of every route", () => {
  it("401 without a key; 403 without the scope or for another team; 404 for a folder not there; 405", async () => {
    for (const route of ["/api/v1/teams/alpha/gates", "/api/v1/teams/alpha/runs"]) {
      expect(codeOf(await api(serve.url, "GET", route))).toBe("unauthorized");
      expect(codeOf(await api(serve.url, "GET", route, { key: keys.reader }))).toBe("scope_not_allowed");
      expect(codeOf(await api(serve.url, "GET", route.replace("alpha", "beta"), { key: keys.ops }))).toBe(
        "team_not_allowed",
      );
      expect(codeOf(await api(serve.url, "GET", route.replace("alpha", "nowhere"), { key: keys.ops }))).toBe(
        "team_not_allowed",
      );
      expect(codeOf(await api(serve.url, "GET", route.replace("alpha", "gone"), { key: keys.ops }))).toBe(
        "team_not_found",
      );
      expect(codeOf(await api(serve.url, "GET", route.replace("alpha", "beta"), { key: keys.beta }))).toBe(
        "team_not_found",
      );
      const post = await api(serve.url, "POST", route, { key: keys.ops, body: {} });
      expect([post.status, post.headers.get("allow")]).toEqual([405, "GET"]);
    }
    expect(codeOf(await api(serve.url, "GET", "/api/v1/teams/alpha/runs", { key: keys.gatesOnly }))).toBe(
      "scope_not_allowed",
    );
    expect(codeOf(await api(serve.url, "GET", "/api/v1/teams/alpha/gates", { key: keys.logsOnly }))).toBe(
      "scope_not_allowed",
    );
  });

  it("a config.json that is not JSON: 503, as for every route", async () => {
    const file = path.join(team("quiet"), "config.json");
    const before = await readFile(file, "utf8");
    await writeFile(file, "{ not json");
    try {
      for (const route of ["/api/v1/teams/quiet/gates", "/api/v1/teams/quiet/runs"])
        expect(codeOf(await api(serve.url, "GET", route, { key: keys.ops }))).toBe("unavailable");
    } finally {
      await writeFile(file, before);
      await chmod(file, 0o644);
    }
  });
});
