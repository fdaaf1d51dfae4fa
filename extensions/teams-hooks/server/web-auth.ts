/**
 * Who may see the read-only dashboard (every page, `/events`, `/assets/*`), and its login.
 *
 *   serve without --allow-remote   loopback only: no key, but the request's `Host` must name this
 *                                  machine (localhost, *.localhost, 127.0.0.0/8, [::1]), else 403 —
 *                                  a page of another site that rebinds its name to 127.0.0.1 sends
 *                                  its own name, and reads nothing
 *   serve --allow-remote           every request needs a key with the scope logs:read, as
 *                                  `Authorization: Bearer pth_…` or as a session cookie, else 401;
 *                                  it sees only the key's teams
 *
 * A session comes from a one-time login URL (`serve keys create` with logs:read, `serve keys login
 * NAME`): `GET /login?token=pthl_…` shows a button that posts it back; the POST spends the token
 * (server/keys.ts, under the keys file's lock) and answers 303 to `/` with the cookie
 * `pth_session=<key id>.<expires ms>.<HMAC-SHA256>`. The cookie is
 * stateless: signed with a random secret in `<teamsRoot>/.pi-teams-hooks/session-secret` (0600, made
 * at the first login), it lasts 12 hours, and every request looks its key up again, so `keys revoke`
 * (or taking logs:read away) ends its sessions on their next request. Deleting the secret file ends
 * every session. A viewer with a key shares that key's rate with the API (server/dashboard-routes.ts).
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, fchmodSync, linkSync, openSync, unlinkSync } from "node:fs";
import path from "node:path";
import { HooksError, describeError, errnoCode, isHooksError } from "../contract/errors.js";
import { readRegularFile, writeAll } from "../team/json-file.js";
import { escapeHtml, html as markup } from "../dashboard/html.js";
import { isLoopbackHostHeader } from "./address.js";
import type { RateLimit } from "./rate-limit.js";
import { type KeyInfo, type KeyStore, ensureKeysDir, issueLogin, keysFile, redeemLogin } from "./keys.js";

/** How long a login URL works (once). */
const LOGIN_TTL_MS = 15 * 60_000;
/** How long a session lasts: the cookie's Max-Age, and the expiry it carries signed. */
const SESSION_MAX_AGE_S = 12 * 60 * 60;
const SESSION_COOKIE = "pth_session";

export interface WebAuthContext {
  teamsRoot: string;
  keys: KeyStore;
  /** True when serve runs with --allow-remote (wherever it listens): keys are then required. */
  remote: boolean;
  now(): Date;
  /** Hears why a login could not be completed (a keys file that cannot be read or written); never a token. */
  warn?(message: string): void;
}

type WebAccess =
  | {
      kind: "allowed";
      teams: readonly string[] | null /* null: every team */;
      /** The key's id (`pth_<id>` without `pth_`) and name; null on loopback without --allow-remote. */
      keyId: string | null;
      keyName: string | null;
      /** The session cookie's value it came in with (checked again while a stream is open); null: none. */
      session: string | null;
      /** The key's own rate (null: the server's); absent without a key. */
      rateLimit?: RateLimit | null;
    }
  | { kind: "refused"; status: 401 | 403; headers: Record<string, string>; body: string; contentType: string };

/** An answer of this module: status, headers, body and its content type. */
export interface WebAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  contentType: string;
}

const TEXT = "text/plain; charset=utf-8";
const HTML = "text/html; charset=utf-8";
const NO_STORE = Object.freeze({ "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" });
const SESSION_VALUE = /^([0-9a-f]{12})\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/;

/** Access for one dashboard request (any path but /login). */
export async function webAccess(
  ctx: WebAuthContext,
  req: {
    host: string | undefined;
    authorization: string | undefined;
    cookie: string | undefined;
    accept: string | undefined;
  },
): Promise<WebAccess> {
  if (!ctx.remote) {
    if (!isLoopbackHostHeader(req.host)) return { kind: "refused", ...rebindingRefusal(req.host), status: 403 };
    return { kind: "allowed", teams: null, keyId: null, keyName: null, session: null };
  }
  const presented = await presentedKey(ctx, req);
  const key = typeof presented === "object" && presented !== null ? presented.key : presented;
  if (key === "unavailable") {
    return {
      kind: "refused",
      ...refusal(
        403,
        req.accept,
        "The dashboard is closed",
        "the server cannot read its keys file, so it lets no one in until the file is fixed: its output says why",
      ),
      status: 403,
    };
  }
  if (key === null || !key.scopes.includes("logs:read"))
    return { kind: "refused", ...loginRequired(req.accept), status: 401 };
  const session = typeof presented === "object" && presented !== null ? presented.session : null;
  const keyId = key.prefix.slice("pth_".length);
  return { kind: "allowed", teams: key.teams, keyId, keyName: key.name, session, rateLimit: key.rateLimit };
}

/**
 * Whether the session cookie value `session` still lets its holder in, as far as the session goes:
 * signed with the session secret there is now, and not expired (its key is checked apart).
 */
export function sessionHolds(ctx: WebAuthContext, session: string): boolean {
  const secret = readSessionSecret(ctx.teamsRoot);
  return secret !== null && sessionOf(secret, `${SESSION_COOKIE}=${session}`, ctx.now()) !== null;
}

/**
 * GET /login?token=…: a page with one button that posts the token back; nothing is spent. A link
 * checker, a chat's preview or a mail scanner that fetches the link (GET or HEAD) therefore neither
 * uses it up nor gets a session: only a person's click does (POST, `webLogin`).
 */
export function webLoginForm(ctx: WebAuthContext, req: { host: string | undefined; token: string | null }): WebAnswer {
  if (!ctx.remote && !isLoopbackHostHeader(req.host)) return rebindingRefusal(req.host);
  if (req.token === null || req.token === "")
    return {
      status: 400,
      headers: { ...NO_STORE },
      body: page("No login token", [
        html`This address needs the token of a login link: pi-teams-hooks serve keys login NAME prints one.`,
      ]),
      contentType: HTML,
    };
  const form = `<form method="post" action="/login"><input type="hidden" name="token" value="${escapeHtml(req.token)}"><button type="submit">Log in</button></form>`;
  return {
    status: 200,
    headers: { ...NO_STORE, "Referrer-Policy": "no-referrer" },
    body: page("Log in to the dashboard", [
      html`This link works once: the button below spends it and starts a 12-hour session in this browser.`,
      form,
    ]),
    contentType: HTML,
  };
}

/**
 * POST /login (token in the form body): the answer to send (303 to `/` with Set-Cookie, or 401/403 page; 503 when the
 * keys file cannot be used).
 */
export async function webLogin(
  ctx: WebAuthContext,
  req: { host: string | undefined; token: string | null },
): Promise<WebAnswer> {
  if (!ctx.remote && !isLoopbackHostHeader(req.host)) return rebindingRefusal(req.host);
  const now = ctx.now();
  let key: KeyInfo | null = null;
  let secret: Buffer | null = null;
  try {
    // The secret first: a token is never spent on a login that could not give its session.
    if (req.token?.startsWith("pthl_")) secret = ensureSessionSecret(ctx.teamsRoot);
    if (secret !== null && req.token !== null) key = await redeemLogin(ctx.teamsRoot, req.token, now);
  } catch (error) {
    if (!isHooksError(error) || error.code === "E_INTERNAL") throw error;
    ctx.warn?.(`a dashboard login could not be completed: ${describeError(error)}`);
    return {
      ...refusal(
        503,
        "text/html",
        "Login failed",
        "the server could not read or write its keys: its output says why; try the link again",
      ),
      headers: { ...NO_STORE, "Retry-After": "1" },
    };
  }
  if (key === null || secret === null) {
    const tail = ctx.remote
      ? []
      : [
          html`This server runs without --allow-remote, so its dashboard needs no login on this machine: \
<a href="/">open it</a>.`,
        ];
    return {
      status: 401,
      headers: { ...NO_STORE },
      body: page("Login link used or expired", [
        html`This login link was used or has expired: pi-teams-hooks serve keys login NAME prints a new one.`,
        ...tail,
      ]),
      contentType: HTML,
    };
  }
  const expiresMs = now.getTime() + SESSION_MAX_AGE_S * 1000;
  const secure = isLoopbackHostHeader(req.host) ? "" : "; Secure";
  // The form posted from this server's own page, so the redirect is a same-site navigation: the
  // SameSite=Strict cookie set here goes with it (a 303 straight from a link clicked on another
  // site would carry that site's origin, and lose the cookie on the way to `/`).
  return {
    status: 303,
    headers: {
      ...NO_STORE,
      Location: "/",
      "Set-Cookie": `${SESSION_COOKIE}=${signSession(secret, key.prefix.slice(4), expiresMs)}; Path=/; Max-Age=${SESSION_MAX_AGE_S}; HttpOnly; SameSite=Strict${secure}`,
      "Referrer-Policy": "no-referrer",
    },
    body: page("Logged in", [
      html`Logged in with the key ${key.name} for 12 hours. <a href="/">Open the dashboard</a>.`,
    ]),
    contentType: HTML,
  };
}

/** One-time login token creation for `keys create` / `keys login`: returns the token and its expiry. */
export async function createLoginToken(
  teamsRoot: string,
  keyName: string,
  now: Date = new Date(),
): Promise<{ token: string; expiresAt: string }> {
  const expires = new Date(now.getTime() + LOGIN_TTL_MS);
  const token = await issueLogin(teamsRoot, keyName, expires);
  return { token, expiresAt: expires.toISOString() };
}

/**
 * The key of the request: its bearer key when it sends one (judged alone), else its session's, with
 * that session's cookie value.
 */
async function presentedKey(
  ctx: WebAuthContext,
  req: { authorization: string | undefined; cookie: string | undefined },
): Promise<{ key: KeyInfo; session: string | null } | null | "unavailable"> {
  const only = (key: KeyInfo | null | "unavailable", session: string | null) =>
    typeof key === "object" && key !== null ? { key, session } : key;
  if (req.authorization !== undefined) return only(await ctx.keys.authenticate(req.authorization), null);
  const secret = readSessionSecret(ctx.teamsRoot);
  const session = secret === null ? null : sessionOf(secret, req.cookie, ctx.now());
  if (session === null) return null;
  const key = await ctx.keys.byId(session.keyId);
  if (key === null || key === "unavailable") return key;
  return sessionOutlived(session.value, key) ? null : { key, session: session.value };
}

/**
 * Whether the session cookie value `session` was begun before its key was last enabled again: a
 * disable ends a key's sessions for good, as a revoke does (the key itself comes back, its sessions do not).
 */
export function sessionOutlived(session: string, key: Pick<KeyInfo, "enabledAt">): boolean {
  if (key.enabledAt === null) return false;
  const expiresMs = Number(SESSION_VALUE.exec(session)?.[2]);
  return !(expiresMs - SESSION_MAX_AGE_S * 1000 >= Date.parse(key.enabledAt));
}

// ── Sessions ──────────────────────────────────────────────────────────────────────────────────────

/** `<teamsRoot>/.pi-teams-hooks/session-secret`, beside the keys file. */
export function sessionSecretFile(teamsRoot: string): string {
  return path.join(path.dirname(keysFile(teamsRoot)), "session-secret");
}

function signSession(secret: Buffer, keyId: string, expiresMs: number): string {
  return `${keyId}.${expiresMs}.${sessionMac(secret, keyId, expiresMs).toString("base64url")}`;
}

function sessionMac(secret: Buffer, keyId: string, expiresMs: number): Buffer {
  return createHmac("sha256", secret).update(`${SESSION_COOKIE}:${keyId}:${expiresMs}`).digest();
}

/** The key id and value of the first session cookie signed with `secret` and not expired at `now`; else null. */
function sessionOf(secret: Buffer, cookie: string | undefined, now: Date): { keyId: string; value: string } | null {
  for (const pair of (cookie ?? "").split(";").slice(0, 50)) {
    const eq = pair.indexOf("=");
    if (eq < 0 || pair.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const match = SESSION_VALUE.exec(pair.slice(eq + 1).trim());
    if (!match?.[1] || !match[2] || !match[3]) continue;
    const expiresMs = Number(match[2]);
    // Compared as text: base64url has spare bits, and another spelling of the same bytes is not the cookie given.
    const presented = Buffer.from(match[3], "latin1");
    const expected = Buffer.from(sessionMac(secret, match[1], expiresMs).toString("base64url"), "latin1");
    const signed = presented.length === expected.length && timingSafeEqual(presented, expected);
    if (signed && expiresMs > now.getTime()) return { keyId: match[1], value: match[0] };
  }
  return null;
}

/** The session secret; null when there is none yet, or the file does not hold one (no session is valid then). */
function readSessionSecret(teamsRoot: string): Buffer | null {
  const read = readRegularFile(sessionSecretFile(teamsRoot), { maxBytes: 1024 });
  const text = read.ok ? read.text.trim() : "";
  return /^[0-9a-f]{64}$/.test(text) ? Buffer.from(text, "hex") : null;
}

/**
 * The session secret, made on first need: written whole into a temporary file opened with O_EXCL
 * (mode 0600, folder 0700), then linked to its name, which fails when the name exists as O_EXCL
 * does. So of two servers making it at once one wins, and neither ever reads a half-written secret.
 */
function ensureSessionSecret(teamsRoot: string): Buffer {
  const existing = readSessionSecret(teamsRoot);
  if (existing) return existing;
  ensureKeysDir(teamsRoot);
  const file = sessionSecretFile(teamsRoot);
  const tmp = `${file}.tmp.${process.pid}.${randomBytes(4).toString("hex")}`;
  try {
    const fd = openSync(tmp, "wx", 0o600);
    try {
      fchmodSync(fd, 0o600);
      writeAll(fd, `${randomBytes(32).toString("hex")}\n`);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, file);
    } catch (error) {
      if (errnoCode(error) !== "EEXIST") throw error; // another process made it first: theirs is read below
    }
  } catch (error) {
    throw new HooksError("E_IO", `cannot create ${file}: ${describeError(error)}`, { cause: error });
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      /* not created, or gone already: nothing is left behind either way */
    }
  }
  const secret = readSessionSecret(teamsRoot);
  if (!secret)
    throw new HooksError(
      "E_CONFIG",
      `${file} is not a session secret (64 hex digits): delete it, and the next login makes a new one (ending every session)`,
    );
  return secret;
}

// ── Answers ───────────────────────────────────────────────────────────────────────────────────────

function rebindingRefusal(host: string | undefined): WebAnswer {
  const named = host === undefined ? "no Host" : `Host ${JSON.stringify(host.slice(0, 100))}`;
  const body = `403: this server runs without --allow-remote and answers only requests addressed to this machine (localhost, 127.0.0.1, [::1]); this one named ${named}. Open the dashboard at http://127.0.0.1:PORT/ (this check keeps other web sites from reading it through DNS rebinding).\n`;
  return { status: 403, headers: { ...NO_STORE }, body, contentType: TEXT };
}

function loginRequired(accept: string | undefined): WebAnswer {
  const answer = wantsHtml(accept)
    ? {
        body: page("Log in", [
          html`This dashboard needs a key with the scope logs:read, sent as Authorization: Bearer KEY, or a session.`,
          html`For a session, run pi-teams-hooks serve keys login NAME on the server's machine and open the URL it \
prints in this browser: it works once, within ${LOGIN_TTL_MS / 60_000} minutes, and the session lasts \
${SESSION_MAX_AGE_S / 3600} hours. A key for it: pi-teams-hooks serve keys create --name NAME --scopes logs:read \
--teams TEAM.`,
          html`Logged in already? <a href="/">Open the dashboard</a>.`,
        ]),
        contentType: HTML,
      }
    : {
        body: "401: a key with the scope logs:read is required: Authorization: Bearer <key>, or the session of a login URL (pi-teams-hooks serve keys login NAME)\n",
        contentType: TEXT,
      };
  return { status: 401, headers: { ...NO_STORE, "WWW-Authenticate": 'Bearer realm="pi-teams-hooks"' }, ...answer };
}

function refusal(status: number, accept: string | undefined, title: string, why: string): WebAnswer {
  return wantsHtml(accept)
    ? { status, headers: { ...NO_STORE }, body: page(title, [html`${why}.`]), contentType: HTML }
    : { status, headers: { ...NO_STORE }, body: `${status}: ${why}\n`, contentType: TEXT };
}

function wantsHtml(accept: string | undefined): boolean {
  return /\btext\/html\b/i.test(accept ?? "");
}

/**
 * A page that reads well with no CSS and no script; `paragraphs` are HTML made with `html`; `head` is this module's own
 * markup.
 */
function page(title: string, paragraphs: readonly string[], head = ""): string {
  const body = paragraphs.map((p) => `<p>${p}</p>`).join("\n");
  return `<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><meta name="viewport" content="width=device-width">${head}<title>${escapeHtml(title)} · pi-teams-hooks</title></head>\n<body>\n<h1>${escapeHtml(title)}</h1>\n${body}\n</body>\n</html>\n`;
}

/** A template whose every interpolated value is escaped (dashboard/html.ts), as a string. */
function html(strings: TemplateStringsArray, ...values: unknown[]): string {
  return markup(strings, ...values).text;
}
