/**
 * A key's templates, through the built bin and a real `serve` on 127.0.0.1: `keys create` needs
 * `--templates` or `--all-templates` for a key that templates limit; an empty or missing allowlist
 * allows no template; `--all-templates` is said in `keys list` and in each team's lead inbox; a key
 * written before the allowlist was required (templates null, nothing else) keeps working, marked.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, runBin } from "../helpers/leader-rig.js";
import { type ServeProcess, api, codeOf, createKey, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";

const TEMPLATES = {
  deploy: { subject: "Deploy {{parameters.branch}}", parameters: { branch: { type: "string", required: true } } },
  review: { subject: "Review {{parameters.pr}}", parameters: { pr: { type: "number", required: true } } },
};
const DEPLOY = { template: "deploy", parameters: { branch: "main" } };
const REVIEW = { template: "review", parameters: { pr: 7 } };
const TASKS = "/api/v1/teams/alpha/tasks";

let root: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  await ensureBuilt();
  ({ root, cleanup } = await makeTeamsRoot({ alpha: { leadName: "boss", hooks: { templates: TEMPLATES } } }));
}, 120_000);

afterAll(async () => {
  await cleanup?.();
});

const create = (args: string[]) => runBin(["serve", "keys", "create", "--teams-root", root, ...args]);

/** A key record as a version before the allowlist wrote it (or a person by hand): a real key and its salted hash. */
function handWritten(name: string, fields: Record<string, unknown>): { key: string; record: Record<string, unknown> } {
  const id = randomBytes(6).toString("hex");
  const key = `pth_${id}_${randomBytes(32).toString("base64url")}`;
  const salt = randomBytes(16);
  const hash = createHash("sha256").update(salt).update(key, "utf8").digest("hex");
  const record = {
    name,
    id,
    salt: salt.toString("hex"),
    hash,
    scopes: ["tasks:create", "tasks:read"],
    teams: ["alpha"],
    ...fields,
    rateLimit: null,
    createdAt: "2026-11-01T00:00:00.000Z",
  };
  return { key, record };
}

describe("keys create: the templates a key may use", () => {
  it("tasks:* or gates:decide needs --templates or --all-templates (exit 2); both is a usage error too", async () => {
    for (const scopes of ["tasks:create", "tasks:read", "gates:decide"]) {
      const refused = await create([
        "--name",
        `none-${scopes.replace(":", "-")}`,
        "--scopes",
        scopes,
        "--teams",
        "alpha",
      ]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`--templates is required for a key with ${scopes}`);
      expect(refused.stderr).toContain("--all-templates");
    }
    const both = await create([
      "--name",
      "both",
      "--scopes",
      "tasks:read",
      "--teams",
      "alpha",
      "--templates",
      "deploy",
      "--all-templates",
    ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--templates and --all-templates: give one of them");
    const list = await runBin(["serve", "keys", "list", "--teams-root", root, "--json"]);
    expect(JSON.parse(list.stdout || "[]")).toEqual([]); // nothing was written
  });

  it("a dashboard key (logs:read only) needs neither, and allows no template", async () => {
    const made = await create(["--name", "web", "--scopes", "logs:read", "--teams", "alpha"]);
    expect(made.code).toBe(0);
    expect(made.stdout).toContain("templates (none)");
  });

  it("--all-templates: each lead is told in its inbox, keys list says (all); a team with no folder too", async () => {
    const made = await create([
      "--name",
      "wide",
      "--scopes",
      "tasks:create,tasks:read",
      "--teams",
      "alpha,later",
      "--all-templates",
    ]);
    expect(made.code).toBe(0);
    const inbox = path.join(root, "alpha", "mailboxes", "team", "inboxes", "boss.json");
    expect(made.stdout).toContain(`every template of team alpha: its lead boss was told in ${inbox}`);
    expect(made.stderr).toContain(
      `warning: every template of team later: its lead was not told (${path.join(root, "later")} is not a team folder yet)`,
    );
    const messages = JSON.parse(await readFile(inbox, "utf8")) as Array<Record<string, unknown>>;
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      from: "pi-teams-hooks",
      read: false,
      qualityGateMessage: "api-key-all-templates",
    });
    expect(messages[0]?.text).toMatch(/^API key "wide" \(pth_[0-9a-f]{12}\) may use every template of team alpha/);
    expect(messages[0]?.text).toContain("pi-teams-hooks serve keys revoke wide");
    // A key limited to templates tells no one.
    expect(
      (
        await create([
          "--name",
          "narrow",
          "--scopes",
          "tasks:create,tasks:read",
          "--teams",
          "alpha",
          "--templates",
          "Deploy",
        ])
      ).code,
    ).toBe(0);
    expect(JSON.parse(await readFile(inbox, "utf8"))).toHaveLength(1);
    const list = await runBin(["serve", "keys", "list", "--teams-root", root], { env: { COLUMNS: "200" } });
    expect(list.stdout).toMatch(/^wide +\S+ +tasks:create,tasks:read +alpha,later +\(all\) /m);
    expect(list.stdout).toMatch(/^narrow +\S+ +tasks:create,tasks:read +alpha +deploy /m);
    expect(list.stdout).toMatch(/^web +\S+ +logs:read +alpha +\(none\) /m);
    const json = JSON.parse((await runBin(["serve", "keys", "list", "--teams-root", root, "--json"])).stdout) as Array<
      Record<string, unknown>
    >;
    expect(json.find((k) => k.name === "wide")).toMatchObject({ templates: null, allTemplates: "all-templates" });
    expect(json.find((k) => k.name === "narrow")).toMatchObject({ templates: ["deploy"], allTemplates: null });
    expect(json.find((k) => k.name === "web")).toMatchObject({ templates: [], allTemplates: null });
  });
});

describe("serve: what each kind of key may do", () => {
  let serve: ServeProcess;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    keys.all = await createKey(root, [
      "--name",
      "all",
      "--scopes",
      "tasks:create,tasks:read",
      "--teams",
      "alpha",
      "--all-templates",
    ]);
    keys.deploy = await createKey(root, [
      "--name",
      "deploy-only",
      "--scopes",
      "tasks:create,tasks:read",
      "--teams",
      "alpha",
      "--templates",
      "deploy",
    ]);
    // Records as a version before the allowlist wrote them, or as a person wrote them by hand.
    const file = path.join(root, ".pi-teams-hooks", "keys.json");
    const current = JSON.parse(await readFile(file, "utf8")) as { version: 1; keys: unknown[] };
    const legacy = handWritten("legacy", { templates: null });
    const empty = handWritten("empty", { templates: [] });
    const missing = handWritten("missing", {});
    keys.legacy = legacy.key;
    keys.empty = empty.key;
    keys.missing = missing.key;
    await mkdir(path.dirname(file), { recursive: true });
    const written = { ...current, keys: [...current.keys, legacy.record, empty.record, missing.record] };
    await writeFile(file, `${JSON.stringify(written, null, 2)}\n`, { mode: 0o600 });
    serve = await startServe(root);
  }, 120_000);

  afterAll(async () => {
    if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  });

  it("--all-templates creates from every template; --templates only from its own", async () => {
    for (const body of [DEPLOY, REVIEW])
      expect((await api(serve.url, "POST", TASKS, { key: keys.all, body })).status).toBe(202);
    expect((await api(serve.url, "POST", TASKS, { key: keys.deploy, body: DEPLOY })).status).toBe(202);
    expect(codeOf(await api(serve.url, "POST", TASKS, { key: keys.deploy, body: REVIEW }))).toBe(
      "template_not_allowed",
    );
  });

  it("an empty or missing allowlist allows no template: to create from, or to read a task of", async () => {
    const made = await api(serve.url, "POST", TASKS, { key: keys.all, body: DEPLOY });
    for (const key of [keys.empty, keys.missing]) {
      expect(codeOf(await api(serve.url, "POST", TASKS, { key, body: DEPLOY }))).toBe("template_not_allowed");
      expect(codeOf(await api(serve.url, "GET", `${TASKS}/${String(made.json.taskId)}`, { key }))).toBe(
        "template_not_allowed",
      );
    }
  });

  it("a key from before the allowlist (templates null) keeps every template; serve and keys list mark it", async () => {
    for (const body of [DEPLOY, REVIEW]) {
      const made = await api(serve.url, "POST", TASKS, { key: keys.legacy, body });
      expect(made.status).toBe(202);
      expect((await api(serve.url, "GET", `${TASKS}/${String(made.json.taskId)}`, { key: keys.legacy })).status).toBe(
        200,
      );
    }
    expect(serve.stderr()).toContain('warning: key "legacy" (pth_');
    expect(serve.stderr()).toContain(
      "may use every template of its teams: it was made before --templates was required",
    );
    expect(serve.stderr()).not.toMatch(/key "(all|empty|missing)"/);
    const list = await runBin(["serve", "keys", "list", "--teams-root", root], { env: { COLUMNS: "240" } });
    expect(list.stdout).toMatch(/^legacy .* \(all: made before --templates was required\) /m);
    expect(list.stdout).toMatch(/^empty .* \(none\) /m);
    expect(list.stdout).toMatch(/^missing .* \(none\) /m);
    const json = JSON.parse((await runBin(["serve", "keys", "list", "--teams-root", root, "--json"])).stdout) as Array<
      Record<string, unknown>
    >;
    expect(json.find((k) => k.name === "legacy")).toMatchObject({ templates: null, allTemplates: "legacy" });
  });

  it("a rewrite of the keys file (revoking another key) keeps the legacy key as it was", async () => {
    expect((await runBin(["serve", "keys", "revoke", "empty", "--teams-root", root])).code).toBe(0);
    const file = JSON.parse(await readFile(path.join(root, ".pi-teams-hooks", "keys.json"), "utf8")) as {
      keys: Array<Record<string, unknown>>;
    };
    const legacy = file.keys.find((k) => k.name === "legacy");
    expect(legacy?.templates).toBeNull();
    expect(legacy).not.toHaveProperty("allTemplates");
    expect(file.keys.find((k) => k.name === "missing")).not.toHaveProperty("templates");
    expect(file.keys.find((k) => k.name === "all")).toMatchObject({ templates: null, allTemplates: true });
    expect((await api(serve.url, "POST", TASKS, { key: keys.legacy, body: REVIEW })).status).toBe(202);
  });
});
