/**
 * The dashboard's login URLs through the built bin: `serve keys create` with logs:read prints one
 * (at `--url`, else serve's default address) before the key, which stays on the last line;
 * `serve keys login NAME` prints a new one on its last line, replacing the unused one, and refuses a
 * key that cannot log in; the help names both.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, runBin } from "../helpers/leader-rig.js";
import { makeTeamsRoot } from "../helpers/serve-rig.js";

let root: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  await ensureBuilt();
  ({ root, cleanup } = await makeTeamsRoot({ alpha: {} }));
}, 240_000);

afterAll(async () => {
  await cleanup?.();
});

const keys = (args: string[]) => runBin(["serve", "keys", ...args, "--teams-root", root]);
const TOKEN = "pthl_[0-9a-f]{12}_[A-Za-z0-9_-]{43}";

/** The `login` record the keys file holds for `name`. */
async function storedLogin(name: string): Promise<{ hash: string; expiresAt: string } | undefined> {
  const file = JSON.parse(await readFile(path.join(root, ".pi-teams-hooks", "keys.json"), "utf8")) as {
    keys: Array<{ name: string; login?: { hash: string; expiresAt: string } }>;
  };
  return file.keys.find((k) => k.name === name)?.login;
}

/** The time after "until" on the line before the URL, in ms. */
function until(stdout: string): number {
  return Date.parse(/it works once, until (\S+) /.exec(stdout)?.[1] ?? "");
}

describe("keys create with logs:read", () => {
  it("prints a one-time login URL at --url, says until when, and keeps the key alone on the last line", async () => {
    const started = Date.now();
    const { code, stdout } = await keys([
      "create",
      "--name",
      "web",
      "--scopes",
      "logs:read",
      "--teams",
      "alpha",
      "--url",
      "https://dash.example.com:8443",
    ]);
    const ended = Date.now();
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split("\n");
    expect(lines.at(-1)).toMatch(/^pth_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(stdout).toMatch(/^scopes logs:read; teams alpha;/m);
    expect(stdout).toMatch(
      /^dashboard login URL for "web": it works once, until \S+Z \(a new one: pi-teams-hooks serve keys login web\)$/m,
    );
    expect(stdout).toMatch(new RegExp(`^https://dash\\.example\\.com:8443/login\\?token=${TOKEN}$`, "m"));
    // 15 minutes from when it was made, which was while the command ran.
    expect(until(stdout)).toBeGreaterThanOrEqual(started + 15 * 60_000);
    expect(until(stdout)).toBeLessThanOrEqual(ended + 15 * 60_000);
    const token = new RegExp(TOKEN).exec(stdout)?.[0] ?? "";
    expect(await readFile(path.join(root, ".pi-teams-hooks", "keys.json"), "utf8")).not.toContain(token.slice(18));
    const list = await keys(["list"]);
    expect(list.stdout).toMatch(/^web +pth_[0-9a-f]{12} +logs:read +alpha/m);
  });

  it("without --url, the URL is at serve's default address; a key without logs:read prints none", async () => {
    const web = await keys([
      "create",
      "--name",
      "web2",
      "--scopes",
      "tasks:read,logs:read",
      "--teams",
      "alpha",
      "--all-templates",
    ]);
    expect(web.stdout).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:7420/login\\?token=${TOKEN}$`, "m"));
    const api = await keys([
      "create",
      "--name",
      "api",
      "--scopes",
      "tasks:read",
      "--teams",
      "alpha",
      "--all-templates",
    ]);
    expect(api.code).toBe(0);
    expect(api.stdout).not.toMatch(/login/);
  });

  it("refuses --url for a key without logs:read, and a --url that is not an origin (exit 2, no key made)", async () => {
    const noScope = await keys([
      "create",
      "--name",
      "x1",
      "--scopes",
      "tasks:read",
      "--teams",
      "alpha",
      "--all-templates",
      "--url",
      "http://h",
    ]);
    expect(noScope).toMatchObject({ code: 2 });
    expect(noScope.stderr).toContain("--url: only a key with the scope logs:read gets a dashboard login URL");
    for (const url of ["ftp://h", "https://h/dash", "http://h/?a=1", "not a url"]) {
      const bad = await keys(["create", "--name", "x2", "--scopes", "logs:read", "--teams", "alpha", "--url", url]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`--url "${url}" must be http://HOST[:PORT] or https://HOST[:PORT]`);
    }
    expect((await keys(["list"])).stdout).not.toMatch(/^x[12] /m);
  });
});

describe("keys login NAME", () => {
  it("prints a new URL on its last line and replaces the unused one", async () => {
    const before = await storedLogin("web");
    const { code, stdout } = await keys(["login", "web", "--url", "http://localhost:9000"]);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^dashboard login URL for "web": it works once, until \S+Z/);
    expect(lines[1]).toMatch(new RegExp(`^http://localhost:9000/login\\?token=${TOKEN}$`));
    const after = await storedLogin("web");
    expect(after?.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(after?.hash).not.toBe(before?.hash);
    expect(stdout).toContain(`until ${after?.expiresAt ?? "?"} `);
  });

  it("refuses a key without logs:read, an unknown name, a missing one (exit 2), and leaves the file alone", async () => {
    const file = await readFile(path.join(root, ".pi-teams-hooks", "keys.json"), "utf8");
    const api = await keys(["login", "api"]);
    expect(api).toMatchObject({ code: 2, stdout: "" });
    expect(api.stderr).toContain('key "api" does not have the scope logs:read, so it cannot log in to the dashboard');
    const nobody = await keys(["login", "nobody"]);
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toContain('no key named "nobody"');
    const missing = await keys(["login"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("serve keys login: missing the key's NAME");
    expect((await keys(["login", "web", "--name", "x"])).stderr).toContain("--name does not apply to serve keys login");
    expect(await readFile(path.join(root, ".pi-teams-hooks", "keys.json"), "utf8")).toBe(file);
  });

  it("--help names keys login, --url and the scope logs:read", async () => {
    const { code, stdout } = await runBin(["serve", "--help"]);
    expect(code).toBe(0);
    for (const text of [
      "pi-teams-hooks serve keys login NAME [--url BASE] [--teams-root DIR]",
      "[--rate-limit N/PERIOD] [--url BASE]",
      "logs:read (runs, the dashboard)",
      "--url BASE",
      "works once, for 15 minutes",
    ]) {
      // The help wraps at its width: a phrase may go on at the next line's indent.
      expect(stdout.replace(/\s+/g, " ")).toContain(text);
    }
  });
});
