/**
 * The dashboard on the task API's server: every path but `/api/…` and `/healthz`. Access is decided
 * first (server/web-auth.ts: open on loopback, a `logs:read` key with --allow-remote; `/login` turns
 * a one-time link into a session cookie), then dashboard/web.ts answers with the teams the viewer may
 * see. `close()` ends the live streams so that the server can stop.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { loadAssets } from "../dashboard/assets.js";
import { LiveHub } from "../dashboard/live.js";
import { SampleCache } from "../dashboard/overview.js";
import { SECURITY_HEADERS, dashboardRequest, warmOverview } from "../dashboard/web.js";
import type { KeyStore } from "./keys.js";
import { type WebAuthContext, webAccess, webLogin } from "./web-auth.js";

export interface WebOptions {
  teamsRoot: string;
  keys: KeyStore;
  /** Started with --allow-remote: every dashboard request needs a key with `logs:read`. */
  remote: boolean;
  env: Readonly<Record<string, string | undefined>>;
  now(): Date;
  warn(message: string): void;
}

export interface WebServer {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  close(): Promise<void>;
}

export function webServer(opts: WebOptions): WebServer {
  const hub = new LiveHub(opts.warn);
  const dashboard = { teamsRoot: opts.teamsRoot, env: opts.env, hub, assets: loadAssets(), overviews: new SampleCache(), now: opts.now, warn: opts.warn };
  // In the background: a first overview then finds the logs read (it waits for a team still being read).
  const stopWarming = new AbortController();
  const warming = warmOverview(dashboard, stopWarming.signal);
  const auth: WebAuthContext = { teamsRoot: opts.teamsRoot, keys: opts.keys, remote: opts.remote, now: opts.now, warn: opts.warn };
  return {
    async handle(req, res) {
      const url = new URL(req.url ?? "/", "http://dashboard.invalid");
      const host = req.headers.host;
      if (url.pathname === "/login") {
        send(res, await webLogin(auth, { host, token: url.searchParams.get("token") }));
        return;
      }
      const access = await webAccess(auth, { host, authorization: req.headersDistinct.authorization?.join(", "), cookie: req.headers.cookie, accept: req.headers.accept });
      if (access.kind === "refused") {
        send(res, access);
        return;
      }
      await dashboardRequest(dashboard, req, res, access.teams);
    },
    close: async () => {
      stopWarming.abort();
      await hub.close();
      await warming;
    },
  };
}

function send(res: ServerResponse, answer: { status: number; headers: Record<string, string>; body: string; contentType: string }): void {
  const body = Buffer.from(answer.body);
  res.writeHead(answer.status, { ...SECURITY_HEADERS, "Content-Type": answer.contentType, "Cache-Control": "no-store", "Content-Length": String(body.length), ...answer.headers });
  res.end(body);
}
