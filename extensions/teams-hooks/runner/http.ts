/**
 * Runs one HTTP handler (config.json `hooks.handlers`, settings/handlers.ts) and turns whatever
 * happens into a RunResult, as runner/run-hook.ts does for a file. Never rejects.
 *
 * The request: `POST` (or the handler's `method`), the body the context document's JSON (byte for
 * byte what a file hook reads on stdin) or the handler's `body` template filled in from that document
 * and the run (contract/request-template.ts: how another API, a CI engine's, is spoken), the context
 * headers (`HANDLER_HEADERS`; one whose value is unknown is left out), the handler's static headers,
 * its secret headers with values read from the environment now (a variable that is not set leaves
 * its header out, or its `{{secret.…}}` empty, and is named in `http.missingSecrets`), and with
 * `signingSecretEnv` an HMAC-SHA256 of the body. The answer, as docs/hook-contract.md says: a 2xx
 * decides through its verdict body (empty or malformed allows, and `http.body` says which), or, with
 * `answer: "held"`, holds the gate whatever it says (a deferral, as a `defer` verdict: the engine
 * posts the decision later; docs/ci-gates.md); a 2xx with a decision we do not know, any other status
 * (its body's first line or its reason phrase is the diagnostic), a redirect (never followed), a body
 * over 64 KiB, no connection, or no answer in time is a hook error of kind `http`, and the failure
 * mode decides. No retries within a run: a POST sent twice may start a CI job twice; the event's next
 * attempt (a restart) is the retry, and it carries the same event key for the receiver to deduplicate.
 *
 * node:http rather than fetch (docs/decisions/http-client.md; bench/http.mjs):
 * on Node 20 the first fetch loads undici, 62 ms and 12 MB of RSS here against 12 ms and 1 MB for
 * node:http; node:http never follows a redirect, hands over the body as a stream we stop reading at
 * the cap, and reports a failed connection with its errno code instead of `TypeError: fetch failed`.
 * node:http and node:https are imported on the first request only, so a leader without handlers
 * never loads them. Each has its own keep-alive agent (not the process's global one, which pi's
 * own code shares when the leader runs inside pi).
 *
 * Secret values never leave this module in anything recorded: not in the result, not in an error.
 * A receiver that echoes a request header back (a debug endpoint, an error page) has every secret
 * value in its answer replaced by `[redacted]` before it is kept (runner/redact.ts: also where it
 * is JSON-escaped or percent-encoded); only what the receiver said is redacted, never our own words.
 */
import { createHmac, randomUUID } from "node:crypto";
import type { Agent, ClientRequest, IncomingMessage, RequestOptions } from "node:http";
import { HOOK_CONTRACT_VERSION, canDefer, type HookInvocation } from "../contract/contract.js";
import { describeError, errnoCode } from "../contract/errors.js";
import {
  OUTPUT_LIMIT_CHARS,
  blankResult,
  prepareContext,
  type PreparedContext,
  type RunErrorKind,
  type RunResult,
} from "../contract/hook-run.js";
import { renderTemplate, type RenderedBody } from "../contract/request-template.js";
import { capReason, describeInvalidVerdict, readHttpVerdict, verdictOutcome } from "../contract/verdict.js";
import { handlerGateName, type HandlerDef } from "../settings/handlers.js";
import { chain, redactVerdict, secretRedactor, type Redactor } from "./redact.js";
import { trackRequest } from "./run-hook.js";

export interface RunHandlerOptions {
  /** The run's id (the `X-Pi-Teams-Hook-Run-Id` header and the log's); default a new UUID. */
  runId?: string;
  /** The handler's `timeoutMs`, or less when the chain's deadline is nearer. */
  timeoutMs: number;
  /** The leader's environment: secret header values and the signing key are read from it at send time. */
  env: Readonly<Record<string, string | undefined>>;
  /** The invocation's context document, when the caller built it already (a chain does, once). */
  context?: PreparedContext;
  eventKey?: string;
  attempt?: number;
  /** Awaited before the request is sent (the leader's ledger flush); if it rejects, nothing is sent. */
  notBefore?: Promise<unknown>;
  /** The clock of the timestamp header. */
  now?: () => Date;
  /**
   * The team's redaction (runner/redact.ts teamRedactor: its secrets and the credential shapes),
   * applied with the handler's own secrets to everything kept of the answer; default: only those.
   */
  redact?: Redactor;
  /** False when the hook point's modes leave `defer` out (`hooks.events.<event>.modes`): a defer is a denial. */
  canDefer?: boolean;
}

/** The headers pi-teams-hooks sets on every request (docs/hook-contract.md, "HTTP handlers"). */
export const HANDLER_HEADERS = Object.freeze({
  event: "X-Pi-Teams-Hook-Event",
  runId: "X-Pi-Teams-Hook-Run-Id",
  version: "X-Pi-Teams-Hook-Version",
  timestamp: "X-Pi-Teams-Hook-Timestamp",
  teamId: "X-Pi-Teams-Hook-Team-Id",
  taskId: "X-Pi-Teams-Hook-Task-Id",
  member: "X-Pi-Teams-Hook-Member",
  eventKey: "X-Pi-Teams-Hook-Event-Key",
  attempt: "X-Pi-Teams-Hook-Attempt",
  signature: "X-Pi-Teams-Signature",
});

/** An answer's body is read up to this many bytes; one that goes on is a hook error, the rest unread. */
export const HANDLER_BODY_LIMIT_BYTES = 64 * 1024;
/** How much of a failed answer's first line goes into the error (and so the task's summary). */
const DIAGNOSTIC_CHARS = 200;
/**
 * An idle kept-alive connection is closed after this long: under Node's own server default (5 s),
 * so that we close first rather than send on a socket the server is closing. A server that announces
 * a shorter `Keep-Alive: timeout=` is believed (Node's agent reads it).
 */
const IDLE_SOCKET_MS = 4_000;

/** What goes out: the headers, and what of them must never be recorded. */
interface Outgoing {
  headers: Record<string, string>;
  missingSecrets: string[];
  /** Every secret value sent (header values and the signing key): redacted from anything kept. */
  secrets: string[];
  signed: boolean;
}

type Exchange =
  /** `resent`: the first connection, a kept-alive one, was found closed; the answer came on a new one. */
  | {
      kind: "answer";
      status: number;
      statusText: string;
      location: string | null;
      bytes: Buffer;
      over: boolean;
      resent: boolean;
    }
  /** `what`: ours (where and when it failed); `detail`: Node's or the peer's words, redacted before they are kept. */
  | { kind: "failed"; what: string; detail: string | null; code: string | undefined }
  | { kind: "timeout"; answered: boolean }
  | { kind: "stopped" };

export async function runHandler(
  handler: HandlerDef,
  invocation: HookInvocation,
  opts: RunHandlerOptions,
): Promise<RunResult> {
  const runId = opts.runId ?? randomUUID();
  const startedAt = performance.now();
  const method = handler.method ?? "POST";
  const base: RunResult = {
    ...blankResult({ ran: true, hookPath: handlerGateName(handler.name), command: [method, handler.url], runId }),
    outcome: "error",
    http: { url: handler.url, status: null },
  };
  try {
    const context = opts.context ?? prepareContext(invocation);
    await opts.notBefore;
    // After the wait: the secrets and the timestamp are those of the moment the request goes out.
    const rendered =
      handler.body === undefined
        ? null
        : renderTemplate(handler.body, {
            doc: context.doc,
            runId,
            env: opts.env,
            eventKey: opts.eventKey,
            attempt: opts.attempt,
          });
    const body = Buffer.from(rendered?.json ?? context.json, "utf8");
    const outgoing = outgoingHeaders(handler, invocation, body, { ...opts, runId, context }, rendered);
    const exchange = await send(method, new URL(handler.url), outgoing.headers, body, opts.timeoutMs, runId);
    const held = handler.answer === "held";
    return resultOf(base, exchange, outgoing, {
      startedAt,
      timeoutMs: opts.timeoutMs,
      canDefer: canDefer(invocation.event) && opts.canDefer !== false,
      held,
      redact: opts.redact,
    });
  } catch (error) {
    // A bug of ours (or the ledger flush failed: nothing was sent), reported as data like runHook's.
    return {
      ...base,
      errorKind: "internal",
      error: `internal error: ${describeError(error)}`,
      durationMs: elapsed(startedAt),
    };
  }
}

/**
 * The request's headers: context, static, secret (read now), signature; and the body template's secrets, read as it was
 * filled.
 */
function outgoingHeaders(
  handler: HandlerDef,
  invocation: HookInvocation,
  body: Buffer,
  opts: RunHandlerOptions & { runId: string; context: PreparedContext },
  rendered: RenderedBody | null,
): Outgoing {
  const H = HANDLER_HEADERS;
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "Content-Length": String(body.length),
    [H.event]: invocation.event,
    [H.runId]: headerText(opts.runId),
    [H.version]: String(HOOK_CONTRACT_VERSION),
    [H.timestamp]: (opts.now ?? (() => new Date()))().toISOString(),
    [H.teamId]: headerText(invocation.teamId),
  };
  const known: Array<[string, string | undefined]> = [
    // As the body shows it: a projection that leaves the id out leaves the header out.
    [H.taskId, opts.context.doc.task?.id],
    [H.member, invocation.memberName],
    [H.eventKey, opts.eventKey],
    [H.attempt, opts.attempt === undefined ? undefined : String(opts.attempt)],
  ];
  for (const [name, value] of known) if (value !== undefined && value !== "") headers[name] = headerText(value);
  Object.assign(headers, handler.headers ?? {});

  const missing = new Set<string>(rendered?.missingSecrets ?? []);
  const secrets: string[] = [...(rendered?.secrets ?? [])];
  // An empty value counts as unset: an empty bearer token or HMAC key authenticates nothing.
  const read = (variable: string): string | null => {
    const value = opts.env[variable];
    if (value === undefined || value === "") missing.add(variable);
    else secrets.push(value);
    return value || null;
  };
  for (const [name, variable] of Object.entries(handler.secretHeaders ?? {})) {
    const value = read(variable);
    if (value !== null) headers[name] = value;
  }
  let signed = false;
  if (handler.signingSecretEnv !== undefined) {
    const key = read(handler.signingSecretEnv);
    if (key !== null) {
      headers[H.signature] = `sha256=${createHmac("sha256", key).update(body).digest("hex")}`;
      signed = true;
    }
  }
  return { headers, missingSecrets: [...missing], secrets, signed };
}

/**
 * Visible ASCII (inner blanks allowed) goes as is; anything else percent-encoded as UTF-8, so it can be sent at all.
 */
function headerText(value: string): string {
  return /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) ? value : encodeURIComponent(value);
}

// ---------------------------------------------------------------------------------------------
// The exchange

interface Transport {
  request: (url: URL, options: RequestOptions) => ClientRequest;
  agent: Agent;
}
const transports = new Map<string, Promise<Transport>>();

/** node:http or node:https with its keep-alive agent, imported on the first request of that scheme. */
function transportFor(protocol: string): Promise<Transport> {
  let found = transports.get(protocol);
  if (!found) {
    found =
      protocol === "https:"
        ? import("node:https").then((m) => ({
            request: m.request,
            agent: new m.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
          }))
        : import("node:http").then((m) => ({
            request: m.request,
            agent: new m.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
          }));
    transports.set(protocol, found);
  }
  return found;
}

/**
 * One request and its answer, settled exactly once: the answer read to its end (or to the cap),
 * a failure, the timeout, or the leader's stop (terminateAllRuns in runner/run-hook.ts). An answer read
 * to its end leaves the connection to the agent for the next request; every other end destroys it.
 */
async function send(
  method: string,
  url: URL,
  headers: Record<string, string>,
  body: Buffer,
  timeoutMs: number,
  runId: string,
): Promise<Exchange> {
  const transport = await transportFor(url.protocol);
  let settle: (exchange: Exchange) => void = () => undefined;
  const settled = new Promise<Exchange>((resolve) => (settle = resolve));
  let done = false;
  let req: ClientRequest | undefined;
  let answered = false;
  const finish = (exchange: Exchange, destroy: boolean): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    untrack();
    settle(exchange);
    if (destroy) req?.destroy();
  };
  const timer = setTimeout(() => finish({ kind: "timeout", answered }, true), Math.max(0, timeoutMs));
  const untrack = trackRequest(runId, () => finish({ kind: "stopped" }, true), settled);
  let resent = false;
  const attempt = (agent: Agent | false): void => {
    try {
      req = transport.request(url, { method, headers, agent });
    } catch (error) {
      // A header value Node refuses (a character it cannot send): its name is in the message, never its value.
      finish(
        {
          kind: "failed",
          what: "the request could not be built",
          detail: describeError(error),
          code: errnoCode(error),
        },
        false,
      );
      return;
    }
    const sent = req;
    sent.on("error", (error) => {
      const code = errnoCode(error);
      // A kept-alive connection the receiver closed while it sat idle, found closed only as the request
      // went out: no byte of an answer came, so the receiver's application never answered this run.
      // Sent once more on a new connection (what browsers do), never again: this is not a retry of a
      // gate, which the contract rules out, but the one way to use kept-alive connections without
      // turning a receiver's idle close into a spurious failure. Same run id: a receiver can tell.
      if (!answered && !resent && !done && sent.reusedSocket && (code === "ECONNRESET" || code === "EPIPE")) {
        resent = true;
        attempt(false);
        return;
      }
      finish({ kind: "failed", ...connectionProblem(url, error, answered), code }, true);
    });
    sent.on("response", (res: IncomingMessage) => {
      answered = true;
      const chunks: Buffer[] = [];
      let size = 0;
      const answer = (over: boolean): Exchange => ({
        kind: "answer",
        status: res.statusCode ?? 0,
        statusText: res.statusMessage ?? "",
        location: typeof res.headers.location === "string" ? res.headers.location : null,
        bytes: Buffer.concat(chunks, size),
        over,
        resent,
      });
      res.on("data", (chunk: Buffer) => {
        if (done) return;
        if (size + chunk.length > HANDLER_BODY_LIMIT_BYTES) {
          chunks.push(chunk.subarray(0, HANDLER_BODY_LIMIT_BYTES - size));
          size = HANDLER_BODY_LIMIT_BYTES;
          finish(answer(true), true); // the rest stays unread: the connection goes with it
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on("end", () => finish(answer(false), false));
      res.on("error", (error) =>
        finish({ kind: "failed", ...connectionProblem(url, error, true), code: errnoCode(error) }, true),
      );
      res.on("close", () =>
        finish(
          {
            kind: "failed",
            what: `the answer from ${url.origin} broke off after ${size} bytes`,
            detail: null,
            code: undefined,
          },
          true,
        ),
      );
    });
    sent.end(body);
  };
  attempt(transport.agent);
  return settled;
}

function connectionProblem(url: URL, error: unknown, answered: boolean): { what: string; detail: string } {
  return {
    what: answered ? `the answer from ${url.origin} broke off` : `no connection to ${url.origin}`,
    detail: describeError(error),
  };
}

// ---------------------------------------------------------------------------------------------
// The result

function resultOf(
  base: RunResult,
  exchange: Exchange,
  outgoing: Outgoing,
  ctx: { startedAt: number; timeoutMs: number; canDefer: boolean; held: boolean; redact?: Redactor },
): RunResult {
  // Applied to what the receiver (or its TLS certificate) said, never to our own words around it;
  // every replacement counted into the result's `redactions`.
  const redactor = chain([secretRedactor(outgoing.secrets), ctx.redact ?? secretRedactor([])]);
  let redactions = 0;
  const redact = (text: string): string => {
    const done = redactor(text);
    redactions += done.count;
    return done.text;
  };
  const counted = (result: RunResult): RunResult => ({ ...result, redactions });
  return counted(answerResult(base, exchange, outgoing, ctx, redact));
}

function answerResult(
  base: RunResult,
  exchange: Exchange,
  outgoing: Outgoing,
  ctx: { startedAt: number; timeoutMs: number; canDefer: boolean; held: boolean },
  redact: (text: string) => string,
): RunResult {
  const http: NonNullable<RunResult["http"]> = {
    url: base.http?.url ?? "",
    status: null,
    ...(outgoing.missingSecrets.length > 0 ? { missingSecrets: outgoing.missingSecrets } : {}),
    signed: outgoing.signed,
  };
  const done = { ...base, durationMs: elapsed(ctx.startedAt), http };
  const error = (kind: RunErrorKind, message: string, extra: Partial<RunResult> = {}): RunResult => ({
    ...done,
    ...extra,
    outcome: "error",
    errorKind: kind,
    error: message,
  });
  switch (exchange.kind) {
    case "stopped":
      return error("stopped", "stopped: the leader is shutting down");
    case "timeout": {
      const what = exchange.answered ? "the answer's body did not end" : "no answer";
      return error("http", `${what} within ${ctx.timeoutMs}ms (the handler's timeoutMs, or the chain's deadline)`, {
        timedOut: true,
      });
    }
    case "failed":
      return error(
        "http",
        exchange.detail === null ? exchange.what : `${exchange.what}: ${redact(exchange.detail)}`,
        exchange.code ? { errorCode: exchange.code } : {},
      );
    case "answer":
      break;
  }
  const text = redact(exchange.bytes.toString("utf8"));
  const kept = keptBody(text, exchange.bytes.length);
  const statusText = redact(exchange.statusText);
  const answered = {
    ...done,
    ...kept,
    http: {
      ...http,
      status: exchange.status,
      ...(statusText ? { statusText } : {}),
      ...(exchange.resent ? { resent: true } : {}),
    },
  };
  const status = `HTTP ${exchange.status}${statusText ? ` ${statusText}` : ""}`;
  const fail = (kind: RunErrorKind, message: string, body?: "verdict"): RunResult => ({
    ...answered,
    ...(body ? { http: { ...answered.http, body } } : {}),
    outcome: "error",
    errorKind: kind,
    error: message,
  });
  if (exchange.status >= 300 && exchange.status < 400) {
    const to = exchange.location ? ` to ${redact(exchange.location)}` : "";
    return fail("http", `${status}: a redirect${to}, not followed (set the handler's url to the final address)`);
  }
  if (exchange.status < 200 || exchange.status >= 300) {
    const line = firstLine(text);
    return fail("http", line ? `${status}: ${line}` : status);
  }
  if (exchange.over)
    return fail(
      "http",
      `${status}: the answer's body is over ${HANDLER_BODY_LIMIT_BYTES} bytes (64 KiB); not read further`,
    );
  if (ctx.held) {
    // Handed off: the engine took the job and reports back later, so the gate is held as a `defer` is.
    const link = webUrlOf(exchange.bytes.toString("utf8"));
    const reason = capReason(
      `handed off to ${new URL(answered.http.url).host} (${oneLine(status)})${link ? `: ${redact(link)}` : ""}`,
    );
    const { outcome, verdict } = verdictOutcome({ decision: "defer", code: HANDED_OFF, reason }, ctx.canDefer);
    return { ...answered, outcome, verdict: { ...verdict, source: "http" } };
  }
  // The verdict is read from the answer as sent; only the strings kept from it are redacted.
  const read = readHttpVerdict(exchange.bytes.toString("utf8"));
  switch (read.kind) {
    case "none":
      return { ...answered, outcome: "passed", http: { ...answered.http, body: "body" in read ? read.body : "empty" } };
    case "invalid":
      return fail(
        read.unsupportedDecision ? "http" : "invalid_verdict",
        `${status}: ${redact(describeInvalidVerdict(read))}`,
        "verdict",
      );
    case "verdict": {
      const { outcome, verdict } = verdictOutcome(redactVerdict(read.verdict, redact), ctx.canDefer);
      return {
        ...answered,
        outcome,
        verdict: { ...verdict, source: "http" },
        http: { ...answered.http, body: "verdict" },
      };
    }
  }
}

/** The code of the deferral a `held` handler's 2xx makes (its reason names where and what answered). */
export const HANDED_OFF = "handed_off";

/**
 * The `web_url` of an answer that is a JSON object with one (GitLab's pipeline, Buildkite's build:
 * where a person sees the job), kept in the held gate's reason; null for anything else.
 */
function webUrlOf(text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null; // no JSON (GitHub's 204 has no body at all): nothing to link
  }
  const url =
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>).web_url
      : undefined;
  return typeof url === "string" && /^https?:\/\/[\x21-\x7e]{1,500}$/.test(url) ? url : null;
}

/** `text` without control characters, for a verdict's one-line reason. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ");
}

/** The head of the answer's body as the log keeps it (`stdout`), with a note when cut. */
function keptBody(text: string, bytes: number): Pick<RunResult, "stdout" | "stdoutDroppedBytes"> {
  if (text.length <= OUTPUT_LIMIT_CHARS) return { stdout: text, stdoutDroppedBytes: 0 };
  const head = text.slice(0, OUTPUT_LIMIT_CHARS);
  const dropped = Math.max(0, bytes - Buffer.byteLength(head, "utf8"));
  return { stdout: `${head}\n… (truncated, ${dropped} bytes omitted)`, stdoutDroppedBytes: dropped };
}

/** The first line of `text` that holds something, on one line, cut to DIAGNOSTIC_CHARS. */
function firstLine(text: string): string {
  for (const line of text.split(/\r\n|\n|\r/)) {
    const clean = line.replace(/[\u0000-\u001f\u007f]/g, "").trim();
    if (clean) return clean.length > DIAGNOSTIC_CHARS ? `${clean.slice(0, DIAGNOSTIC_CHARS - 1)}…` : clean;
  }
  return "";
}

function elapsed(startedAt: number): number {
  return Math.round(performance.now() - startedAt);
}
