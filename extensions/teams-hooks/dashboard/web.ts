/**
 * The dashboard's requests, after the server has checked access (server/web-auth.ts): which teams the
 * viewer may see comes in, one answer goes out. Read-only: GET and HEAD only, nothing is written.
 *
 *   GET /                       overview of every team
 *   GET /runs?team&event&outcome&member&hook&task&since&before
 *                               the runs table, filtered and paged
 *   GET /runs/{team}/{id}       one run (a log's file name or stem, a run id, or 4+ characters of one)
 *   GET /events?view=runs|overview&…filters
 *                               server-sent events: each new run the filters keep
 *   GET /assets/{name}          the stylesheet, the script, the icon
 *
 * Every answer carries a strict Content-Security-Policy (no inline script or style, nothing from
 * another origin), `nosniff`, no referrer and no framing.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import { relativeTo } from "../logs/shown.js";
import { describeError } from "../contract/errors.js";
import { type Html, html, pathSegment } from "./html.js";
import { page } from "./layout.js";
import type { LiveHub } from "./live.js";
import type { LogIndex } from "../logs/log-index.js";
import { type SampleCache, overviewBody, overviewSince, teamOverview } from "./overview.js";
import { findRun, runBody } from "./run-page.js";
import { findRuns, parseCursor, runsBody, runsFilter, runsQuery } from "./runs.js";
import { type TeamRef, findTeam, forViewer, listTeams } from "./teams.js";
import { type Assets, assetAnswer } from "./assets.js";

const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** Headers on every dashboard answer, also a refusal's. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": CONTENT_SECURITY_POLICY,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
};

interface DashboardContext {
  teamsRoot: string;
  /** The server's index of the teams' logs (logs/log-index.ts), shared with the task API. */
  index: LogIndex;
  env: Readonly<Record<string, string | undefined>>;
  hub: LiveHub;
  assets: Assets;
  overviews: SampleCache;
  turns: Turns;
  now(): Date;
  warn(message: string): void;
}

/** Whether `path` is the dashboard's (everything but the task API and the health check). */
export function isDashboardPath(path: string): boolean {
  return !path.startsWith("/api/") && path !== "/api" && path !== "/healthz";
}

interface WebAnswer {
  status: number;
  body: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
}

/**
 * Who is looking: the teams they may see (null: every team), their key's id and name (null: none
 * needed), and the session cookie's value they came in with (null: a bearer key, or no key).
 */
interface Viewer {
  teams: readonly string[] | null;
  keyId: string | null;
  keyName: string | null;
  session: string | null;
}

/** Answers one dashboard request for `viewer`. */
export async function dashboardRequest(
  ctx: DashboardContext,
  req: IncomingMessage,
  res: ServerResponse,
  viewer: Viewer,
): Promise<void> {
  const url = new URL(req.url ?? "/", "http://dashboard.invalid");
  let answer: WebAnswer | null;
  try {
    if (req.method !== "GET" && req.method !== "HEAD") {
      answer = {
        ...errorPage(
          405,
          "Not allowed",
          html`The dashboard is read-only: ${req.method ?? "this method"} is not allowed (GET and HEAD are).`,
        ),
        headers: { Allow: "GET, HEAD" },
      };
    } else {
      answer = await route(ctx, url, req, res, viewer);
    }
  } catch (error) {
    ctx.warn(
      `dashboard ${url.pathname.slice(0, 200)}: ${error instanceof Error ? (error.stack ?? error.message) : describeError(error)}`,
    );
    answer = errorPage(500, "Something went wrong", html`This page could not be made; the server's output says why.`);
  }
  if (answer === null || res.headersSent) return; // a stream answered it
  const body = typeof answer.body === "string" ? Buffer.from(answer.body) : answer.body;
  res.writeHead(answer.status, {
    ...SECURITY_HEADERS,
    "Content-Type": answer.contentType ?? "text/html; charset=utf-8",
    "Cache-Control": "no-store",
    ...(answer.status === 304 ? {} : { "Content-Length": String(body.length) }),
    ...answer.headers,
  });
  res.end(req.method === "HEAD" || answer.status === 304 ? undefined : body);
}

/**
 * Pages that read log files, made at once: a viewer (or a loop) asking for many waits its turn instead of filling the
 * disk queue.
 */
const READING_AT_ONCE = 4;

/** The turns of one server's log-reading pages (`READING_AT_ONCE` at a time). */
export class Turns {
  #reading = 0;
  readonly #waiting: Array<() => void> = [];

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#reading >= READING_AT_ONCE) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#reading += 1;
    try {
      return await work();
    } finally {
      this.#reading -= 1;
      this.#waiting.shift()?.();
    }
  }
}

async function route(
  ctx: DashboardContext,
  url: URL,
  req: IncomingMessage,
  res: ServerResponse,
  viewer: Viewer,
): Promise<WebAnswer | null> {
  const path = url.pathname;
  if (path.startsWith("/assets/"))
    return assetAnswer(ctx.assets, path.slice("/assets/".length), req.headers["if-none-match"]);
  if (path === "/events") return events(ctx, url, req, res, viewer);
  return ctx.turns.run(() => readingPage(ctx, url, path, viewer));
}

/** The teams `viewer` may see, a confidential one marked for a remote viewer (teams.ts `forViewer`). */
async function viewerTeams(ctx: DashboardContext, viewer: Viewer): Promise<TeamRef[]> {
  return forViewer(await listTeams(ctx.teamsRoot, viewer.teams), viewer.keyId !== null, ctx.env);
}

async function readingPage(ctx: DashboardContext, url: URL, path: string, viewer: Viewer): Promise<WebAnswer> {
  if (path === "/" || path === "/index.html") return overview(ctx, viewer);
  if (path === "/runs" || path === "/runs/") return runs(ctx, url, viewer);
  const run = /^\/runs\/([^/]+)\/([^/]+)\/?$/.exec(path);
  if (run) return runPage(ctx, pathSegment(run[1]), pathSegment(run[2]), viewer);
  return errorPage(
    404,
    "Not found",
    html`There is no page at ${path.slice(0, 200)}. <a href="/">The overview</a> lists every team.`,
  );
}

async function overview(ctx: DashboardContext, viewer: Viewer): Promise<WebAnswer> {
  const nowMs = ctx.now().getTime();
  const teams = await viewerTeams(ctx, viewer);
  const overviews = [];
  for (const team of teams) overviews.push(await teamOverview(team, { nowMs, env: ctx.env, cache: ctx.overviews }));
  return {
    status: 200,
    body: page({
      title: "Overview",
      section: "overview",
      body: overviewBody(overviews, nowMs),
      live: { kind: "overview", query: "" },
    }),
  };
}

async function runs(ctx: DashboardContext, url: URL, viewer: Viewer): Promise<WebAnswer> {
  const query = runsQuery(url.searchParams);
  const all = await viewerTeams(ctx, viewer);
  const teams = query.team === undefined ? all : all.filter((t) => t.name === query.team);
  const { filter, problems } = runsFilter(query, ctx.now().getTime());
  if (query.team !== undefined && teams.length === 0)
    problems.push(`team: there is no team "${query.team}" you may see`);
  let unreadable = 0;
  const found =
    problems.length > 0
      ? { rows: [], more: false }
      : await findRuns(ctx.index, teams, filter, query.before, () => void (unreadable += 1));
  const liveQuery = url.searchParams;
  liveQuery.delete("before");
  const rows = viewer.keyId === null ? found.rows : relativeTo(found.rows, path.resolve(ctx.teamsRoot));
  const body = runsBody({ teams: all, query, rows, more: found.more, problems, unreadable });
  // Live rows are added only to the newest page.
  const live =
    query.before === null && problems.length === 0 ? { kind: "runs" as const, query: liveQuery.toString() } : undefined;
  return {
    status: problems.length > 0 ? 400 : 200,
    body: page({ title: "Runs", section: "runs", body, live }),
  };
}

async function runPage(ctx: DashboardContext, teamName: string, id: string, viewer: Viewer): Promise<WebAnswer> {
  const named = await findTeam(ctx.teamsRoot, teamName, viewer.teams);
  const [team = null] = named === null ? [] : await forViewer([named], viewer.keyId !== null, ctx.env);
  if (team === null) return errorPage(404, "No such team", html`There is no team ${teamName} you may see.`);
  // A remote viewer sees the paths under the teams root relative to it (never where the server keeps them).
  const read = await findRun(team, id);
  const found = viewer.keyId === null ? read : relativeTo(read, path.resolve(ctx.teamsRoot));
  if (found.kind === "none") return errorPage(404, "No such run", html`Team ${team.name} has no log matching ${id}.`);
  if (found.kind === "unreadable") return errorPage(500, "Unreadable log", html`${found.message}`);
  const title = found.kind === "found" ? `Run ${found.row.name}` : "Runs";
  return { status: 200, body: page({ title, section: null, body: runBody(team, found) }) };
}

async function events(
  ctx: DashboardContext,
  url: URL,
  req: IncomingMessage,
  res: ServerResponse,
  viewer: Viewer,
): Promise<WebAnswer | null> {
  const stream = { status: 200, body: "", contentType: "text/event-stream; charset=utf-8" };
  if (req.method === "HEAD") return stream; // what a GET would start, without starting it
  const full = {
    status: 503,
    body: "too many live streams are open: reload later\n",
    contentType: "text/plain; charset=utf-8",
    headers: { "Retry-After": "10" },
  };
  if (!ctx.hub.hasRoom(viewer.keyName)) return full;
  const query = runsQuery(url.searchParams);
  const all = await viewerTeams(ctx, viewer);
  const teams: TeamRef[] = query.team === undefined ? all : all.filter((t) => t.name === query.team);
  // The overview wants every run; the runs page the runs its filter keeps.
  const { filter, problems } =
    url.searchParams.get("view") === "overview" ? { filter: {}, problems: [] } : runsFilter(query, ctx.now().getTime());
  if (problems.length > 0)
    return { status: 400, body: `${problems.join("\n")}\n`, contentType: "text/plain; charset=utf-8" };
  // Where the page (`after`) or the broken connection (`Last-Event-ID`) left off.
  const after = parseCursor(req.headers["last-event-id"]?.toString() ?? url.searchParams.get("after"));
  const { keyId, keyName, session } = viewer;
  const access = { keyId, keyName, teams: teams.map((t) => t.name), session };
  const opened = await ctx.hub.open(res, { teams, filter, access, after, headers: { ...SECURITY_HEADERS } });
  return opened ? null : full;
}

/**
 * Reads every team's last 7 days into the overview's cache, one team after another, so that the
 * first overview after a start does not wait for 10,000 files. Problems wait for that overview; a
 * server that stops ends it after the team being read.
 */
export async function warmOverview(ctx: DashboardContext, stop: AbortSignal): Promise<void> {
  const since = overviewSince(ctx.now().getTime());
  for (const team of await listTeams(ctx.teamsRoot, null).catch(() => [])) {
    if (stop.aborted) return;
    await ctx.overviews.samples(team.dir, since).catch(() => undefined);
  }
}

function errorPage(status: number, title: string, message: Html): WebAnswer {
  return { status, body: page({ title, section: null, body: html`<h1>${title}</h1><p>${message}</p>` }) };
}
