/**
 * The dashboard on the task API's server: every path but `/api/…` and `/healthz`. Access is decided
 * first (server/web-auth.ts: open on loopback, a `logs:read` key with --allow-remote; `/login` turns
 * a one-time link into a session cookie), then dashboard/web.ts answers with the teams the viewer may
 * see. A request with two `Host` headers is a 400: which one names the server is ambiguous, and the
 * loopback check reads one. `close()` ends the live streams so that the server can stop.
 *
 * A live stream is a request that lasts, so its access is checked again while it is open: with
 * --allow-remote, every `ACCESS_CHECK_MS` the keys file is looked at (one `stat`; read again when it
 * changed), and a stream whose key is gone (`keys revoke`), lost `logs:read` or one of the stream's
 * teams, or whose session no longer holds (expired, or `session-secret` deleted), is ended
 * (`event: bye`, why `access`).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { loadAssets } from "../dashboard/assets.js";
import { LiveHub } from "../dashboard/live.js";
import type { LogIndex } from "../logs/log-index.js";
import { SampleCache } from "../dashboard/overview.js";
import { SECURITY_HEADERS, Turns, dashboardRequest, warmOverview } from "../dashboard/web.js";
import type { KeyInfo, KeyStore } from "./keys.js";
import type { RateLimit, RateLimiter } from "./rate-limit.js";
import { readBody } from "./request-body.js";
import {
  type WebAnswer,
  type WebAuthContext,
  sessionHolds,
  sessionOutlived,
  webAccess,
  webLogin,
  webLoginForm,
} from "./web-auth.js";

interface WebOptions {
  teamsRoot: string;
  index: LogIndex;
  /** The API's rate limiter: a viewer with a key spends that key's rate, as its API requests do. */
  limiter: RateLimiter;
  defaultRate: RateLimit;
  keys: KeyStore;
  /** Started with --allow-remote: every dashboard request needs a key with `logs:read`. */
  remote: boolean;
  env: Readonly<Record<string, string | undefined>>;
  now(): Date;
  warn(message: string): void;
}

interface WebServer {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  close(): Promise<void>;
}

/** How often open streams' keys are checked again: a revoked key's streams end within this and a read. */
const ACCESS_CHECK_MS = 250;

export function webServer(opts: WebOptions): WebServer {
  const hub = new LiveHub(opts.warn, opts.index);
  const { teamsRoot, keys, remote, now, warn } = opts;
  const auth: WebAuthContext = { teamsRoot, keys, remote, now, warn };
  const checkAccess = opts.remote ? streamAccessCheck(hub, auth) : null;
  const dashboard = {
    teamsRoot: opts.teamsRoot,
    index: opts.index,
    env: opts.env,
    hub,
    assets: loadAssets(),
    overviews: new SampleCache(),
    turns: new Turns(),
    now: opts.now,
    warn: opts.warn,
  };
  // In the background: a first overview then finds the logs read (it waits for a team still being read).
  const stopWarming = new AbortController();
  void warmOverview(dashboard, stopWarming.signal);
  return {
    async handle(req, res) {
      const url = new URL(req.url ?? "/", "http://dashboard.invalid");
      if ((req.headersDistinct.host?.length ?? 0) > 1) {
        const body = "400: a request has one Host header; this one has more\n";
        send(res, { status: 400, headers: { Connection: "close" }, body, contentType: "text/plain; charset=utf-8" });
        return;
      }
      const host = req.headers.host;
      if (url.pathname === "/login") {
        send(res, await login(auth, req, url));
        return;
      }
      const access = await webAccess(auth, {
        host,
        authorization: req.headersDistinct.authorization?.join(", "),
        cookie: req.headers.cookie,
        accept: req.headers.accept,
      });
      if (access.kind === "refused") {
        send(res, access);
        return;
      }
      const { teams, keyId, keyName, session } = access;
      // Pages and streams spend the key's rate (its stylesheet and script, answered from memory, do not).
      if (keyName !== null && !url.pathname.startsWith("/assets/")) {
        const wait = opts.limiter.take(keyName, access.rateLimit ?? opts.defaultRate);
        if (wait !== null) {
          const body = `429: too many requests with this key: try again in ${wait} s\n`;
          const headers = { "Retry-After": String(wait) };
          send(res, { status: 429, headers, body, contentType: "text/plain; charset=utf-8" });
          return;
        }
      }
      await dashboardRequest(dashboard, req, res, { teams, keyId, keyName, session });
    },
    // The warm-up is not waited for: it only reads, and ends after the team it is reading.
    close: async () => {
      stopWarming.abort();
      checkAccess?.stop();
      await hub.close();
    },
  };
}

/** Ends, every `ACCESS_CHECK_MS`, the open streams whose key no longer lets them look (see the header). */
function streamAccessCheck(hub: LiveHub, auth: WebAuthContext): { stop(): void } {
  let checking = false;
  const check = async (): Promise<void> => {
    const ids = hub.keyIds();
    if (checking || ids.size === 0) return;
    checking = true;
    try {
      const keys = new Map<string, KeyInfo | null | "unavailable">();
      for (const id of ids) keys.set(id, await auth.keys.byId(id));
      const sessions = new Map<string, boolean>();
      const holds = (session: string): boolean => {
        let held = sessions.get(session);
        if (held === undefined) sessions.set(session, (held = sessionHolds(auth, session)));
        return held;
      };
      hub.endUnless((access) => {
        const key = access.keyId === null ? undefined : keys.get(access.keyId);
        if (key === undefined) return true; // no key, or a stream opened since the look: its request was checked
        // A keys file that cannot be read lets no one in (fail closed), nor keeps anyone.
        if (key === null || key === "unavailable" || !key.scopes.includes("logs:read")) return false;
        if (!access.teams.every((team) => key.teams.includes(team))) return false;
        if (access.session !== null && sessionOutlived(access.session, key)) return false;
        return access.session === null || holds(access.session);
      });
    } catch (error) {
      auth.warn?.(`checking the live streams' keys: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      checking = false;
    }
  };
  const timer = setInterval(() => void check(), ACCESS_CHECK_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** Bytes a login form's body may have: one token and its name. */
const LOGIN_BODY_BYTES = 4096;

/**
 * `/login`: GET shows the form (nothing spent), POST spends the token it carries. A POST sent by a
 * page of another site (`Sec-Fetch-Site`, else an `Origin` whose host is not this one) is refused:
 * it would log the browser in with someone else's key.
 */
async function login(auth: WebAuthContext, req: IncomingMessage, url: URL): Promise<WebAnswer> {
  const host = req.headers.host;
  if (req.method === "GET" || req.method === "HEAD")
    return webLoginForm(auth, { host, token: url.searchParams.get("token") });
  if (req.method !== "POST")
    return {
      status: 405,
      headers: { Allow: "GET, HEAD, POST" },
      body: "GET shows the login form; POST logs in\n",
      contentType: "text/plain; charset=utf-8",
    };
  const site = req.headers["sec-fetch-site"];
  const origin = req.headers.origin;
  // Browsers send Sec-Fetch-Site; an older one only Origin, which is "null" from a page that sends no
  // referrer (the login form's own policy), so Origin decides only when Sec-Fetch-Site is missing.
  const crossSite =
    site !== undefined
      ? site !== "same-origin"
      : origin !== undefined && (origin === "null" || hostOf(origin) !== host);
  if (crossSite)
    return {
      status: 403,
      headers: {},
      body: "a login is posted from this server's own login page only\n",
      contentType: "text/plain; charset=utf-8",
    };
  const body = await readBody(req, LOGIN_BODY_BYTES).then(
    (bytes) => bytes.toString("utf8"),
    () => null,
  );
  if (body === null)
    return {
      status: 413,
      headers: { Connection: "close" },
      body: "a login form's body is a token, nothing more\n",
      contentType: "text/plain; charset=utf-8",
    };
  return webLogin(auth, { host, token: new URLSearchParams(body).get("token") });
}

function hostOf(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null;
  }
}

function send(
  res: ServerResponse,
  answer: { status: number; headers: Record<string, string>; body: string; contentType: string },
): void {
  const body = Buffer.from(answer.body);
  res.writeHead(answer.status, {
    ...SECURITY_HEADERS,
    "Content-Type": answer.contentType,
    "Cache-Control": "no-store",
    "Content-Length": String(body.length),
    ...answer.headers,
  });
  res.end(body);
}
