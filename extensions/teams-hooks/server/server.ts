/**
 * The task API's HTTP server, on `node:http` (docs/decisions/task-api-http.md says why no framework): one
 * request → one `ApiRequest` for server/routes.ts → one JSON answer. Nothing a client sends can stop
 * it: a handler's refusal is an `ApiError`, anything else thrown is a 500 whose detail goes to the
 * log only, and malformed HTTP gets a JSON answer too before the connection is closed.
 *
 * Bounds: a body of at most 64 KiB (a `Content-Length` over it is refused unread), headers within
 * 10 s, the whole request within 30 s (408), headers of at most 16 KiB (Node's cap: 431), idle
 * keep-alive connections closed after 5 s. A body left
 * unread (a refusal before it was needed) closes the connection after the answer, so a client cannot
 * make the server read what it refused. A request with two `Host` headers is a 400 (the dashboard's
 * too: server/dashboard-routes.ts).
 *
 * States: listening ──close()──▶ closing (no new connections; idle ones closed; busy ones get
 * `graceMs` to finish, then are cut) ──▶ stopping (no connection left: what requests are still doing
 * is told to stop, and waited for) ──▶ closed. `close()` may be called twice, and resolves once no
 * request does anything any more: a creation whose client was cut writes no task (the client saw no
 * answer, and would make it twice by trying again), and nothing is written after `close()`.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { HooksError, describeError, errnoCode, isHooksError } from "../contract/errors.js";
import { DEFAULT_LOCK_TIMEOUT_MS } from "../team/lock.js";
import { createRuntime, type Runtime } from "../runner/runtime.js";
import { type Answer, ApiError, type ApiErrorCode, API_ERRORS, JSON_HEADERS, errorAnswer } from "./answers.js";
import type { TeamRuntime } from "./create-task.js";
import { urlOf } from "./address.js";
import { KeyStore } from "./keys.js";
import { DEFAULT_RATE_LIMIT, type RateLimit, RateLimiter } from "./rate-limit.js";
import { readBody } from "./request-body.js";
import { type ApiContext, route } from "./routes.js";
import { isDashboardPath } from "../dashboard/web.js";
import { webServer } from "./dashboard-routes.js";
import { LogIndex } from "../logs/log-index.js";
import { MAX_WRITTEN_LOG_BYTES } from "../logs/hook-log.js";

const BODY_LIMIT_BYTES = 64 * 1024;

export interface TaskServerOptions {
  teamsRoot: string;
  host: string;
  port: number;
  /** Started with --allow-remote: the dashboard then needs a key with `logs:read` for every request. */
  remote?: boolean;
  /** Requests per key for keys without a rate of their own. Default 600/min. */
  rateLimit?: RateLimit;
  bodyLimitBytes?: number;
  /** How long busy connections may finish after `close()`. Default 5 s. */
  graceMs?: number;
  /** How long one creation may wait for the team's locks in all, from its start (then 503). Default 10 s. */
  lockTimeoutMs?: number;
  /**
   * A request's headers must arrive within this (default 10 s), the whole request within `requestTimeoutMs` (default 30
   * s): 408.
   */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** `info`: a key added or removed while the server runs; `warn`, `error`: what went wrong (never a key). */
  log: (level: "info" | "warn" | "error", message: string) => void;
  now?: () => Date;
  /**
   * The environment a decision is applied with when no leader runs for its team (the failure policy's
   * variables, as `decide` reads them). Default: this process's.
   */
  env?: Readonly<Record<string, string | undefined>>;
}

export interface TaskServer {
  /** `http://127.0.0.1:41234`: the address and the port really listened on. */
  url: string;
  host: string;
  port: number;
  /** How many keys the keys file held at start. */
  keyCount: number;
  close(): Promise<void>;
}

/** Starts listening; resolves once connections are accepted. E_USAGE when the address cannot be used. */
export async function startTaskServer(options: TaskServerOptions): Promise<TaskServer> {
  const bodyLimit = options.bodyLimitBytes ?? BODY_LIMIT_BYTES;
  const keys = new KeyStore(options.teamsRoot, options.log);
  const limiter = new RateLimiter();
  const teams = new Map<string, TeamRuntime>();
  const stopping = new AbortController();
  const inFlight = new Set<Promise<void>>();
  // One index of the teams' logs for the API and the dashboard: a log is read once, whoever asks.
  const index = new LogIndex({ maxBytes: MAX_WRITTEN_LOG_BYTES });
  const now = options.now ?? (() => new Date());
  const ctx: ApiContext = {
    teamsRoot: options.teamsRoot,
    index,
    keys,
    limiter,
    defaultRate: options.rateLimit ?? DEFAULT_RATE_LIMIT,
    team: (teamDir) => {
      let runtime = teams.get(teamDir);
      if (!runtime) {
        runtime = teamRuntime(teamDir, ctx.runtime);
        teams.set(teamDir, runtime);
      }
      return runtime;
    },
    now,
    env: options.env ?? process.env,
    lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    runtime: createRuntime({ now }),
    stopping: stopping.signal,
    warn: (message) => options.log("warn", message),
  };
  const keyCount = await keys.count();
  const web = webServer({
    teamsRoot: options.teamsRoot,
    index,
    limiter,
    defaultRate: ctx.defaultRate,
    keys,
    remote: options.remote ?? false,
    env: ctx.env,
    now: ctx.now,
    warn: ctx.warn,
  });

  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const headersTimeout = Math.min(options.headersTimeoutMs ?? 10_000, requestTimeout);
  // Node looks for requests past their time every `connectionsCheckingInterval` (30 s by default, which
  // would let a slow client hold a connection for up to twice its limit).
  const checkEvery = Math.max(100, Math.min(1_000, Math.floor(headersTimeout / 4)));
  const server = createServer(
    { requestTimeout, headersTimeout, keepAliveTimeout: 5_000, connectionsCheckingInterval: checkEvery },
    (req, res) => {
      const dashboard = isDashboardPath(pathOf(req.url ?? "/"));
      // Whatever a request meets ends as an answer to it (or its connection cut), never as the process's end.
      const work = (
        dashboard
          ? web.handle(req, res).catch((error: unknown) => webFailed(res, error, options.log))
          : handle(ctx, req, res, bodyLimit, options.log).catch((error: unknown) => webFailed(res, error, options.log))
      ).finally(() => {
        limiter.retain(keys.names());
        inFlight.delete(work);
      });
      inFlight.add(work);
    },
  );
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => answerClientError(error, socket));
  await listen(server, options.host, options.port);
  const address = server.address() as AddressInfo;
  let closing: Promise<void> | null = null;
  return {
    url: urlOf(address.address, address.port),
    host: address.address,
    port: address.port,
    keyCount,
    close: () =>
      (closing ??= web
        .close()
        .then(() => closeServer(server, options.graceMs ?? 5_000, stopping, inFlight))
        .then(() => index.close())),
  };
}

function teamRuntime(teamDir: string, runtime: Runtime): TeamRuntime {
  let last: Promise<unknown> = Promise.resolve();
  return {
    teamDir,
    sent: runtime.sentLog(teamDir),
    serialise<T>(fn: () => Promise<T>): Promise<T> {
      const run = last.then(fn, fn);
      last = run.catch(() => undefined);
      return run;
    },
  };
}

async function handle(
  ctx: ApiContext,
  req: IncomingMessage,
  res: ServerResponse,
  bodyLimit: number,
  log: TaskServerOptions["log"],
): Promise<void> {
  let bodyRead = false;
  let answer: Answer;
  // Two `Host` headers: which one names this server is ambiguous (RFC 9112 asks for a 400).
  const hosts = req.headersDistinct.host?.length ?? 0;
  try {
    if (hosts > 1) throw new ApiError("invalid_request", "a request has one Host header; this one has more");
    const path = pathOf(req.url ?? "/");
    answer = await route(ctx, {
      method: req.method ?? "GET",
      path,
      query: queryOf(req.url ?? "/"),
      authorization: header(req, "authorization"),
      idempotencyKey: header(req, "idempotency-key"),
      body: async () => {
        bodyRead = true;
        return readBody(req, bodyLimit);
      },
    });
  } catch (error) {
    answer = errorAnswer(toApiError(error, log));
  }
  // A body not read to its end must not be read after the answer: the connection ends with it.
  const close = !req.complete || (!bodyRead && hasBody(req)) || hosts > 1;
  send(res, answer, close, log);
}

/** A request that failed before its answer could be made: a plain 500, the detail to the log only. */
function webFailed(res: ServerResponse, error: unknown, log: TaskServerOptions["log"]): void {
  log("error", `request failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(500, { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store" });
  res.end("the server could not answer this request; its log says why\n");
}

function toApiError(error: unknown, log: TaskServerOptions["log"]): ApiError {
  if (error instanceof ApiError) return error;
  if (isHooksError(error) && error.code === "E_LOCK_TIMEOUT") {
    log("warn", describeError(error));
    return new ApiError("unavailable", "the team's files are busy (a lock did not free in time): try again", {
      headers: { "Retry-After": "1" },
    });
  }
  // A team file that cannot be read or written (a FIFO where a record should be, a full disk, a folder
  // that is a file) is the team's state, not a fault of the server: said with the file, not a stack.
  if (isHooksError(error) && (error.code === "E_IO" || error.code === "E_TEAM_DIR")) {
    log("warn", describeError(error));
    return new ApiError("unavailable", "the team's files cannot be read or written: the server's output says which");
  }
  log("error", `request failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  return new ApiError("internal_error", "the server could not complete this request; its log says why");
}

/**
 * The most an answer's body may be: a page of runs is tens of KB. A body past it (a bug, or something
 * a log holds that no bound caught) is a 500, never a string the process cannot make or a client
 * must swallow.
 */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * Writes `answer` as JSON. A body that cannot be made into JSON (or is over `MAX_ANSWER_BYTES`) is a
 * 500 for this request only, said on the log: nothing a request meets while its answer is written
 * may end the process.
 */
function send(res: ServerResponse, answer: Answer, close: boolean, log: TaskServerOptions["log"]): void {
  if (res.headersSent) return;
  let final = answer;
  let text: string;
  try {
    text = `${JSON.stringify(answer.body)}\n`;
    if (text.length > MAX_ANSWER_BYTES)
      throw new Error(`the answer would be ${text.length} characters (at most ${MAX_ANSWER_BYTES})`);
  } catch (error) {
    log("error", `an answer could not be written: ${error instanceof Error ? error.message : String(error)}`);
    final = errorAnswer(new ApiError("internal_error", "the server could not write this answer; its log says why"));
    text = `${JSON.stringify(final.body)}\n`;
  }
  res.writeHead(final.status, {
    ...JSON_HEADERS,
    ...final.headers,
    "Content-Length": String(Buffer.byteLength(text)),
    ...(close ? { Connection: "close" } : {}),
  });
  res.end(text);
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
}

/**
 * A header's value; the values of a header sent more than once joined with `, `. Node keeps only the
 * first `Authorization` in `req.headers`: two keys in one request are refused (401) here instead, as
 * a proxy in front might have read the other one.
 */
function header(req: IncomingMessage, name: string): string | undefined {
  return req.headersDistinct[name]?.join(", ");
}

/** The path of a request target (`/a/b?x` → `/a/b`); anything unparsable is a path no route matches. */
function pathOf(target: string): string {
  try {
    return new URL(target, "http://localhost").pathname;
  } catch {
    return target;
  }
}

/** The query of a request target (`/a?x=1` → `x=1`); none when it cannot be parsed. */
function queryOf(target: string): URLSearchParams {
  try {
    return new URL(target, "http://localhost").searchParams;
  } catch {
    return new URLSearchParams();
  }
}

/** Malformed HTTP (bad syntax, headers too large, too slow): a JSON answer, then the connection closes. */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  const code: ApiErrorCode =
    error.code === "HPE_HEADER_OVERFLOW"
      ? "headers_too_large"
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? "request_timeout"
        : "invalid_request";
  if (errnoCode(error) === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const message = code === "invalid_request" ? "malformed HTTP request" : code.replace(/_/g, " ");
  const text = `${JSON.stringify({ error: { code, message } })}\n`;
  const status = API_ERRORS[code];
  const head = `HTTP/1.1 ${status} ${code.replace(/_/g, " ")}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n`;
  socket.end(head + text);
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => {
      server.off("listening", onListening);
      const why =
        errnoCode(error) === "EADDRINUSE"
          ? "the address is in use"
          : errnoCode(error) === "EADDRNOTAVAIL"
            ? "no interface has this address"
            : describeError(error);
      reject(new HooksError("E_USAGE", `cannot listen on ${urlOf(host, port)}: ${why}`, { cause: error }));
    };
    const onListening = (): void => {
      server.off("error", onError);
      resolve();
    };
    server.once("error", onError).once("listening", onListening);
    server.listen({ host, port });
  });
}

async function closeServer(
  server: Server,
  graceMs: number,
  stopping: AbortController,
  inFlight: ReadonlySet<Promise<void>>,
): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => {
    stopping.abort();
    server.closeAllConnections();
  }, graceMs);
  try {
    await closed;
  } finally {
    clearTimeout(timer);
  }
  // No client is left to answer: what is under way stops at its next step (a lock waits at most its
  // request's budget), and `close()` resolves only when nothing runs any more.
  stopping.abort();
  await Promise.allSettled([...inFlight]);
}
