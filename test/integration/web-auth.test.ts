/**
 * The dashboard's access control (server/web-auth.ts) against real files in a temp teams root, with
 * real keys: loopback mode and its Host guard; with --allow-remote, bearer keys and sessions from
 * one-time login tokens (used once, expiring, spent once even by processes racing for them); signed
 * cookies that a change, a revoked key or time undoes; and a keys file written before any of it.
 */
import { spawn } from "node:child_process";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  KeyStore,
  createKey,
  keySpec,
  keysFile,
  listKeys,
  revokeKey,
} from "../../extensions/teams-hooks/server/keys.js";
import {
  type WebAuthContext,
  createLoginToken,
  sessionSecretFile,
  webAccess,
  webLogin,
} from "../../extensions/teams-hooks/server/web-auth.js";
import { type CompiledModules, compileModules } from "../fixtures/workers/modules.js";
import { makeTeamsRoot } from "../helpers/serve-rig.js";

const T0 = new Date("2026-12-04T10:00:00.000Z");
const MINUTE = 60_000;
const HOST = "127.0.0.1:7420";

let root: string;
let cleanup: () => Promise<void>;
const logged: string[] = [];
const keys: Record<string, string> = {};

function context(remote: boolean, now: Date = T0): WebAuthContext {
  return {
    teamsRoot: root,
    keys: new KeyStore(root, (level, message) => logged.push(`${level}: ${message}`)),
    remote,
    now: () => now,
  };
}

const request = (extra: { host?: string; authorization?: string; cookie?: string; accept?: string } = {}) => ({
  host: HOST,
  authorization: undefined,
  cookie: undefined,
  accept: undefined,
  ...extra,
});

async function make(name: string, scopes: string, teams = "alpha"): Promise<string> {
  return (
    await createKey(
      root,
      keySpec({
        name,
        scopes,
        teams,
        templates: undefined,
        allTemplates: /tasks:|gates:decide/.test(scopes),
        rateLimit: null,
      }),
    )
  ).key;
}

/** Logs in with a fresh token of `name` at `now`; the `pth_session=…` pair of its cookie. */
async function session(name: string, now: Date = T0, host = HOST): Promise<string> {
  const { token } = await createLoginToken(root, name, now);
  const answer = await webLogin(context(true, now), { host, token });
  expect(answer).toMatchObject({ status: 303, headers: { Location: "/" } });
  return (answer.headers["Set-Cookie"] ?? "").split(";")[0] ?? "";
}

beforeAll(async () => {
  ({ root, cleanup } = await makeTeamsRoot({ alpha: {}, beta: {} }));
  keys.viewer = await make("viewer", "logs:read", "alpha,beta");
  keys.api = await make("api", "tasks:read,tasks:create");
});

afterAll(async () => {
  await cleanup?.();
});

describe("without --allow-remote (loopback only)", () => {
  it.each(["127.0.0.1:7420", "127.9.8.7", "localhost", "LOCALHOST:80", "app.localhost:7420", "[::1]:7420", "[::1]"])(
    "allows Host %s with no key",
    async (host) => {
      const allowed = { kind: "allowed", teams: null, keyId: null, keyName: null, session: null };
      expect(await webAccess(context(false), request({ host }))).toEqual(allowed);
    },
  );

  it.each([
    ["evil.example:7420"],
    ["127.0.0.1.evil.example"],
    ["localhost.evil.example"],
    ["[::2]:7420"],
    ["10.0.0.1"],
    [undefined],
  ])("refuses Host %s with 403 and says why (DNS rebinding)", async (host) => {
    const access = await webAccess(context(false), request({ host, authorization: `Bearer ${keys.viewer}` }));
    expect(access).toMatchObject({ kind: "refused", status: 403, contentType: "text/plain; charset=utf-8" });
    if (access.kind === "refused")
      expect(access.body).toMatch(/without --allow-remote.*localhost, 127\.0\.0\.1, \[::1\].*DNS rebinding/);
    expect((await webLogin(context(false), { host, token: null })).status).toBe(403);
  });
});

describe("with --allow-remote: keys", () => {
  it("no key: 401, a login page for a browser and a line of text for anything else", async () => {
    const browser = await webAccess(context(true), request({ accept: "text/html,application/xhtml+xml;q=0.9" }));
    expect(browser).toMatchObject({ kind: "refused", status: 401, contentType: "text/html; charset=utf-8" });
    if (browser.kind !== "refused") return;
    expect(browser.body).toContain("pi-teams-hooks serve keys login NAME");
    expect(browser.body).not.toMatch(/<script|<style|style=/i);
    expect(browser.headers).toMatchObject({
      "Cache-Control": "no-store",
      "WWW-Authenticate": 'Bearer realm="pi-teams-hooks"',
    });
    const curl = await webAccess(context(true), request({ accept: "*/*" }));
    expect(curl).toMatchObject({ kind: "refused", status: 401, contentType: "text/plain; charset=utf-8" });
    if (curl.kind === "refused") expect(curl.body).toMatch(/^401: a key with the scope logs:read is required/);
  });

  it("a bearer key with logs:read sees its teams, even behind a proxy that sends another Host", async () => {
    const viaProxy = request({ host: "dash.example.com", authorization: `Bearer ${keys.viewer}` });
    expect(await webAccess(context(true), viaProxy)).toEqual({
      kind: "allowed",
      teams: ["alpha", "beta"],
      keyId: keys.viewer?.split("_")[1],
      keyName: "viewer",
      session: null,
      rateLimit: null, // the server's: the dashboard spends it as the API does
    });
  });

  it("a key without logs:read, a made-up key, another scheme: 401", async () => {
    for (const authorization of [
      `Bearer ${keys.api}`,
      `Bearer ${(keys.viewer ?? "").slice(0, -1)}${keys.viewer?.endsWith("x") ? "y" : "x"}`,
      "Bearer nope",
      `Basic ${keys.viewer}`,
    ]) {
      expect(await webAccess(context(true), request({ authorization }))).toMatchObject({
        kind: "refused",
        status: 401,
      });
    }
  });

  it("a revoked key: 401 from the next request of the same running server", async () => {
    const key = await make("doomed", "logs:read");
    const ctx = context(true);
    expect(await webAccess(ctx, request({ authorization: `Bearer ${key}` }))).toMatchObject({
      kind: "allowed",
      keyName: "doomed",
    });
    expect(await revokeKey(root, "doomed")).toBe(true);
    expect(await webAccess(ctx, request({ authorization: `Bearer ${key}` }))).toMatchObject({
      kind: "refused",
      status: 401,
    });
  });
});

describe("with --allow-remote: login tokens and sessions", () => {
  it("a login token works once: 303 to / with a cookie; used again, 401 with the way to a new one", async () => {
    const { token, expiresAt } = await createLoginToken(root, "viewer", T0);
    expect(token).toMatch(/^pthl_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(expiresAt).toBe(new Date(T0.getTime() + 15 * MINUTE).toISOString());
    expect(await readFile(keysFile(root), "utf8")).not.toContain(token.slice(18)); // only a salted hash is kept
    const first = await webLogin(context(true), { host: HOST, token });
    expect(first).toMatchObject({ status: 303, headers: { Location: "/", "Cache-Control": "no-store" } });
    expect(first.headers["Set-Cookie"]).toMatch(
      /^pth_session=[0-9a-f]{12}\.\d+\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict$/,
    );
    const again = await webLogin(context(true), { host: HOST, token });
    expect(again).toMatchObject({ status: 401, contentType: "text/html; charset=utf-8" });
    expect(again.body).toContain(
      "This login link was used or has expired: pi-teams-hooks serve keys login NAME prints a new one.",
    );
    expect(again.headers["Set-Cookie"]).toBeUndefined();
  });

  it("an expired token, a replaced one, a malformed one or none: 401", async () => {
    const expired = await createLoginToken(root, "viewer", T0);
    expect(
      (await webLogin(context(true, new Date(T0.getTime() + 15 * MINUTE + 1)), { host: HOST, token: expired.token }))
        .status,
    ).toBe(401);
    const replaced = await createLoginToken(root, "viewer", T0);
    const current = await createLoginToken(root, "viewer", T0);
    expect((await webLogin(context(true), { host: HOST, token: replaced.token })).status).toBe(401);
    for (const token of [
      null,
      "",
      "pthl_nope",
      `${current.token.slice(0, -1)}${current.token.endsWith("A") ? "B" : "A"}`,
    ])
      expect((await webLogin(context(true), { host: HOST, token })).status).toBe(401);
    expect(
      (await webLogin(context(true, new Date(T0.getTime() + 14 * MINUTE)), { host: HOST, token: current.token }))
        .status,
    ).toBe(303);
  });

  it("a token for a key without logs:read, or no key, is refused when made", async () => {
    await expect(createLoginToken(root, "api", T0)).rejects.toMatchObject({
      code: "E_USAGE",
      message: expect.stringMatching(/"api" does not have the scope logs:read/),
    });
    await expect(createLoginToken(root, "nobody", T0)).rejects.toMatchObject({
      code: "E_USAGE",
      message: expect.stringMatching(/no key named "nobody"/),
    });
  });

  it("the cookie from a login is a session of its key's teams; the secret is 0600 in the 0700 folder", async () => {
    const cookie = await session("viewer");
    // The session's key, and the cookie's value (a stream it opens is checked against it while open).
    expect(await webAccess(context(true), request({ cookie: `theme=dark; ${cookie}; other=1` }))).toEqual({
      kind: "allowed",
      teams: ["alpha", "beta"],
      keyId: keys.viewer?.split("_")[1],
      keyName: "viewer",
      session: cookie.slice("pth_session=".length),
      rateLimit: null,
    });
    expect((await stat(sessionSecretFile(root))).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(sessionSecretFile(root)))).mode & 0o777).toBe(0o700);
    // Past its 12 hours: over.
    const later = new Date(T0.getTime() + 12 * 60 * MINUTE);
    expect(await webAccess(context(true, later), request({ cookie }))).toMatchObject({ kind: "refused", status: 401 });
  });

  it("Secure is added when the Host is not this machine's (TLS is then in front)", async () => {
    expect(await session("viewer", T0, "localhost:7420")).not.toContain("Secure");
    const { token } = await createLoginToken(root, "viewer", T0);
    const answer = await webLogin(context(true), { host: "dash.example.com", token });
    expect(answer.headers["Set-Cookie"]).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
  });

  it("a changed cookie is refused: another key id, another expiry, another signature", async () => {
    const cookie = await session("viewer");
    const [, value = ""] = cookie.split("=");
    const [id = "", expires = "", mac = ""] = value.split(".");
    const other = (await listKeys(root)).find((k) => k.name === "api")?.prefix.slice(4) ?? "";
    const flipped = `${mac.slice(0, 10)}${mac[10] === "A" ? "B" : "A"}${mac.slice(11)}`;
    // the same bytes, maybe, but not the same cookie
    const respelled = `${mac.slice(0, 42)}${String.fromCharCode(mac.charCodeAt(42) ^ 1)}`;
    for (const changed of [
      `${other}.${expires}.${mac}`,
      `${id}.${expires}.${respelled}`,
      `${id}.${Number(expires) + 3_600_000}.${mac}`,
      `${id}.${expires}.${flipped}`,
      `${id}.${expires}`,
      "x",
    ]) {
      expect(await webAccess(context(true), request({ cookie: `pth_session=${changed}` }))).toMatchObject({
        kind: "refused",
        status: 401,
      });
    }
  });

  it("a session ends with its key's revocation, or its key's logs:read", async () => {
    await make("leaving", "logs:read");
    await make("narrowed", "logs:read");
    const leaving = await session("leaving");
    const narrowed = await session("narrowed");
    const ctx = context(true);
    expect(await webAccess(ctx, request({ cookie: leaving }))).toMatchObject({ kind: "allowed", keyName: "leaving" });
    await revokeKey(root, "leaving");
    expect(await webAccess(ctx, request({ cookie: leaving }))).toMatchObject({ kind: "refused", status: 401 });
    // A key whose scopes are edited in the file loses its sessions too.
    const file = JSON.parse(await readFile(keysFile(root), "utf8")) as {
      keys: Array<{ name: string; scopes: string[] }>;
    };
    for (const k of file.keys) if (k.name === "narrowed") k.scopes = ["tasks:read"];
    await writeFile(keysFile(root), JSON.stringify(file));
    expect(await webAccess(ctx, request({ cookie: narrowed }))).toMatchObject({ kind: "refused", status: 401 });
  });

  it("processes racing with one login URL: exactly one gets the session", async () => {
    const modules: CompiledModules = await compileModules(["server/web-auth"]);
    try {
      const { token } = await createLoginToken(root, "viewer", new Date());
      const go = path.join(root, "go");
      const url = (name: string): string => pathToFileURL(path.join(modules.dir, "server", `${name}.js`)).href;
      const script = `
        import { existsSync } from "node:fs";
        import { KeyStore } from ${JSON.stringify(url("keys"))};
        import { webLogin } from ${JSON.stringify(url("web-auth"))};
        const [root, token, go] = process.argv.slice(1);
        for (let i = 0; i < 2000 && !existsSync(go); i++) await new Promise((r) => setTimeout(r, 5));
        const ctx = { teamsRoot: root, keys: new KeyStore(root, () => {}), remote: true, now: () => new Date() };
        const answer = await webLogin(ctx, { host: "127.0.0.1", token });
        process.stdout.write(String(answer.status));`;
      const runs = Array.from({ length: 4 }, () => {
        const child = spawn(process.execPath, ["--input-type=module", "-e", script, root, token, go], {
          stdio: ["ignore", "pipe", "inherit"],
        });
        let out = "";
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
        return new Promise<string>((resolve) => child.on("close", () => resolve(out)));
      });
      await writeFile(go, "");
      expect((await Promise.all(runs)).sort()).toEqual(["303", "401", "401", "401"]);
    } finally {
      await modules.cleanup();
    }
  });
});

describe("keys files", () => {
  it("a keys file written before the dashboard (no login field, no logs:read) still loads and takes new keys", async () => {
    const old = await makeTeamsRoot({ alpha: {} });
    try {
      const record = {
        name: "ci",
        id: "0123456789ab",
        salt: "00".repeat(16),
        hash: "11".repeat(32),
        scopes: ["tasks:read"],
        teams: ["alpha"],
        templates: null,
        rateLimit: null,
        createdAt: T0.toISOString(),
      };
      await mkdir(path.dirname(keysFile(old.root)), { mode: 0o700 });
      await writeFile(keysFile(old.root), JSON.stringify({ version: 1, keys: [record] }));
      expect((await listKeys(old.root)).map((k) => k.name)).toEqual(["ci"]);
      await createKey(
        old.root,
        keySpec({ name: "web", scopes: "logs:read", teams: "alpha", templates: undefined, rateLimit: null }),
      );
      await createLoginToken(old.root, "web", T0);
      const stored = JSON.parse(await readFile(keysFile(old.root), "utf8")) as {
        keys: Array<Record<string, unknown>>;
      };
      expect(stored.keys[0]).toEqual(record);
      expect(Object.keys(stored.keys[1]?.login as object)).toEqual(["salt", "hash", "expiresAt"]);
    } finally {
      await old.cleanup();
    }
  });

  it("a keys file that cannot be read closes the dashboard (403) and fails a login (503), said on the log", async () => {
    const broken = await makeTeamsRoot({ alpha: {} });
    try {
      await mkdir(path.dirname(keysFile(broken.root)), { mode: 0o700 });
      await writeFile(keysFile(broken.root), "{not json", { mode: 0o600 });
      const warned: string[] = [];
      const ctx: WebAuthContext = {
        teamsRoot: broken.root,
        keys: new KeyStore(broken.root, () => {}),
        remote: true,
        now: () => T0,
        warn: (m) => warned.push(m),
      };
      const access = await webAccess(ctx, request({ authorization: `Bearer ${keys.viewer}` }));
      expect(access).toMatchObject({ kind: "refused", status: 403 });
      if (access.kind === "refused") expect(access.body).toMatch(/cannot read its keys file/);
      const login = await webLogin(ctx, { host: HOST, token: `pthl_0123456789ab_${"A".repeat(43)}` });
      expect(login.status).toBe(503);
      expect(warned.join("\n")).toMatch(/a dashboard login could not be completed: .*keys\.json/);
    } finally {
      await broken.cleanup();
    }
  });

  it("said nothing of a key, token or cookie on the key store's log", () => {
    const all = logged.join("\n");
    for (const k of Object.values(keys)) expect(all).not.toContain(k.slice(17));
    expect(all).not.toMatch(/pthl_|pth_session/);
  });
});
