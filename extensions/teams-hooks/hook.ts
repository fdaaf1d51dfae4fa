/**
 * The hook helper, `pi-teams-hooks/hook`: what a hook written in JavaScript or TypeScript imports to
 * get its event as a typed, validated context document (contract v1, docs/hook-contract.md).
 *
 *   import { readHookContext } from "pi-teams-hooks/hook";
 *   const { context } = await readHookContext();
 *   if (context.task === null) process.exit(0); // idle: no task to check
 *   process.stdout.write(`checking task #${context.task.id}: ${context.task.subject}\n`);
 *
 * Channels, in this order: standard input (when it is not a terminal and holds something), else the
 * file named by `PI_TEAMS_HOOK_CONTEXT_FILE`, else `PI_TEAMS_HOOK_CONTEXT_JSON` (which may have been
 * shortened to fit the environment; `truncated` says so). The first two always carry the complete
 * document. `readHookContext` is async because standard input is read as a stream: a synchronous
 * read of fd 0 fails with EAGAIN when a parent left it non-blocking. `parseHookContext` is the
 * synchronous half, for text you already hold.
 *
 * `runGate(gate)` does the whole run: it reads the context, calls the gate, writes what the gate
 * returned as the verdict, and exits (see its own comment, and docs/writing-hooks.md).
 *
 * Imports only contract/contract.ts (which imports contract/team-files.ts) and contract/verdict.ts
 * (which imports contract/merge-patch.ts): this module ships to hooks on their own, far from the leader.
 */
import { writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ContextDocumentSchema, HOOK_CONTRACT_VERSION, type ContextDocument } from "./contract/contract.js";
import { VERDICT_LIMITS, VerdictSchema, capReason, type Decision } from "./contract/verdict.js";

export type { ContextDocument } from "./contract/contract.js";

/** Where a context document was read from. */
export type ContextChannel = "stdin" | "file" | "env";

/** The contract versions this helper understands. */
export const SUPPORTED_CONTRACT_VERSIONS: readonly number[] = Object.freeze([HOOK_CONTRACT_VERSION]);

export interface HookContext {
  /** The validated document. Fields a later v1 adds are kept (the object is the one parsed). */
  context: ContextDocument;
  channel: ContextChannel;
  /** `stdin`, the context file's path, or `PI_TEAMS_HOOK_CONTEXT_JSON`. */
  source: string;
  /** True when the document came from the environment and the leader shortened it to fit. */
  truncated: boolean;
}

export type HookContextErrorCode =
  | "E_CONTEXT_MISSING" // no channel held a document
  | "E_CONTEXT_READ" // a channel could not be read (EACCES on the context file)
  | "E_CONTEXT_JSON" // a channel held something that is not JSON
  | "E_CONTEXT_VERSION" // a contract version this helper does not know
  | "E_CONTEXT_INVALID"; // JSON of a known version, but not a context document

/** The one error of the helper; `channel` says where the bad document came from. */
export class HookContextError extends Error {
  override readonly name = "HookContextError";
  readonly code: HookContextErrorCode;
  readonly channel: ContextChannel | null;

  constructor(
    code: HookContextErrorCode,
    message: string,
    channel: ContextChannel | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = code;
    this.channel = channel;
  }
}

/** A readable stream, as `process.stdin` is; `isTTY` is true for a terminal. */
export type StdinLike = AsyncIterable<string | Uint8Array> & { isTTY?: boolean };

export interface ReadHookContextOptions {
  /** Default `process.stdin`. `null` skips standard input (a hook that reads it for something else). */
  stdin?: StdinLike | null;
  /** Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}

const ENV_JSON = "PI_TEAMS_HOOK_CONTEXT_JSON";
const ENV_FILE = "PI_TEAMS_HOOK_CONTEXT_FILE";

/**
 * Reads the context document of the running hook. Throws `HookContextError` when no channel holds
 * one, when the first channel that holds something is not JSON (naming the channel), when its
 * contract version is not one of `SUPPORTED_CONTRACT_VERSIONS`, or when it is not a valid document.
 * A channel that holds something is never skipped for the next one: a bad stdin is an error.
 */
export async function readHookContext(options: ReadHookContextOptions = {}): Promise<HookContext> {
  const env = options.env ?? process.env;
  const stdin = options.stdin === undefined ? process.stdin : options.stdin;
  if (stdin && !stdin.isTTY) {
    const text = await readAll(stdin);
    if (text.trim() !== "") return parseHookContext(text, "stdin", "stdin");
  }
  const file = env[ENV_FILE]?.trim();
  if (file) {
    const text = await readContextFile(file);
    if (text !== null && text.trim() !== "") return parseHookContext(text, "file", file);
  }
  const json = env[ENV_JSON];
  if (json !== undefined && json.trim() !== "") {
    return { ...parseHookContext(json, "env", ENV_JSON), truncated: env.PI_TEAMS_HOOK_CONTEXT_TRUNCATED === "1" };
  }
  throw new HookContextError(
    "E_CONTEXT_MISSING",
    `no hook context: standard input is ${stdin ? (stdin.isTTY ? "a terminal" : "empty") : "not read"}, ${ENV_FILE} ${file ? "names no readable file" : "is not set"} and ${ENV_JSON} is not set. Run the hook through pi-teams-hooks (e.g. pi-teams-hooks run task_completed --team-dir DIR --task ID).`,
    null,
  );
}

/** Parses and validates one document (synchronous). `source` names the channel in messages. */
export function parseHookContext(text: string, channel: ContextChannel, source: string = channel): HookContext {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new HookContextError(
      "E_CONTEXT_JSON",
      `hook context from ${describeSource(channel, source)} is not valid JSON (${why})`,
      channel,
      { cause: error },
    );
  }
  const version =
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>).version
      : undefined;
  if (version !== undefined && !(typeof version === "number" && SUPPORTED_CONTRACT_VERSIONS.includes(version))) {
    throw new HookContextError(
      "E_CONTEXT_VERSION",
      `hook context from ${describeSource(channel, source)} has contract version ${JSON.stringify(version)}; this pi-teams-hooks/hook supports version ${SUPPORTED_CONTRACT_VERSIONS.join(", ")}. Update the pi-teams-hooks package that the hook imports.`,
      channel,
    );
  }
  const parsed = ContextDocumentSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.map(String).join(".") || "(document)"}: ${issue.message}`);
    throw new HookContextError(
      "E_CONTEXT_INVALID",
      `hook context from ${describeSource(channel, source)} is not a v1 context document: ${issues.join("; ")}`,
      channel,
    );
  }
  // The schema has no transforms, so the parsed object is the document; it also keeps fields a later v1 adds.
  return { context: value as ContextDocument, channel, source, truncated: false };
}

function describeSource(channel: ContextChannel, source: string): string {
  if (channel === "stdin") return "standard input";
  if (channel === "file") return `${ENV_FILE} (${source})`;
  return source;
}

async function readAll(stream: StdinLike): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk));
  } catch (error) {
    throw new HookContextError(
      "E_CONTEXT_READ",
      `cannot read standard input: ${error instanceof Error ? error.message : String(error)}`,
      "stdin",
      { cause: error },
    );
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The context file's text; null when it is gone (the leader removes it after the run: a hand run with a stale
 * variable).
 */
async function readContextFile(file: string): Promise<string | null> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    const code =
      typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : "";
    if (code === "ENOENT") return null;
    throw new HookContextError(
      "E_CONTEXT_READ",
      `cannot read ${ENV_FILE} (${file}): ${code || String(error)}`,
      "file",
      { cause: error },
    );
  }
}

/**
 * What a gate run by `runGate` returns. Nothing (`undefined`, `null`) allows without a verdict. An
 * object is a verdict: `deny: true` (or `decision: "deny"`) denies, `decision` may also be `allow`,
 * `defer` or `patch` (with `patch`), and nothing of the two allows. `code`, `reason` and `message` are
 * the contract's: the reason is made one line and cut to its cap at a blank, the message cut to its cap.
 */
export interface GateVerdict {
  deny?: boolean;
  decision?: Decision | Uppercase<Decision>;
  code?: string;
  reason?: string;
  message?: string;
  patch?: Record<string, unknown>;
}
// biome-ignore lint/suspicious/noConfusingVoidType: a gate whose function ends without `return` (void) passes.
export type GateResult = GateVerdict | null | undefined | void;
export type Gate = (context: ContextDocument, read: HookContext) => GateResult | Promise<GateResult>;

export interface RunGateOptions extends ReadHookContextOptions {
  /**
   * What a crash (or a context that cannot be read) does: `"fail"` (default) exits 1; `"allow"` prints
   * the same line and exits 0, for a gate that only records or reports and must never fail its event.
   */
  crash?: "fail" | "allow";
}

/** The exit code of each way a `runGate` run ends without a verdict that decides. */
export const GATE_EXIT = Object.freeze({ allow: 0, deny: 1, crash: 1 });

/** The longest line `runGate` prints when a gate crashes: what a failure summary keeps of stderr. */
export const GATE_LINE_MAX_CHARS = 180;

/**
 * Runs one gate and exits. Reads the context (`readHookContext`, with `options`), calls
 * `gate(context, read)`, and then:
 * - it returned nothing: exits 0 (allow), no verdict;
 * - it returned a verdict: writes it to `PI_TEAMS_HOOK_RESULT_FILE` (else as the last line of
 *   stdout) and exits 1 for a denial, 0 otherwise (the verdict decides; the exit code agrees with it);
 * - it threw, returned something that is no verdict, or the context could not be read: prints one
 *   line first on stderr — `gate crashed: TypeError: x is undefined (on_task_completed.mjs:12)`, the
 *   location being the first stack frame in the gate's own files (never Node's, a package's in
 *   node_modules, or this helper's) — writes no verdict and exits 1. Under contract v1 that is a
 *   denial; under strict exit codes (`hooks.exitCodes: "strict"`) it is a hook error
 *   (`unexpected_exit`), which the failure mode decides.
 * An error the gate leaves behind (an unhandled rejection) while it runs is a crash too. With
 * `{ crash: "allow" }` a crash prints the same line and exits 0.
 */
export async function runGate(gate: Gate, options: RunGateOptions = {}): Promise<never> {
  const env = options.env ?? process.env;
  const crashExit = options.crash === "allow" ? GATE_EXIT.allow : GATE_EXIT.crash;
  const crash = (error: unknown): never => exitWith(crashExit, crashLine(error));
  process.once("uncaughtException", crash);
  process.once("unhandledRejection", crash);
  let read: HookContext;
  try {
    read = await readHookContext(options);
  } catch (error) {
    if (error instanceof HookContextError)
      return exitWith(crashExit, oneLine(`gate not run (${error.code}): ${error.message}`, GATE_LINE_MAX_CHARS));
    return crash(error);
  }
  let result: unknown;
  try {
    result = await gate(read.context, read);
  } catch (error) {
    return crash(error);
  }
  if (result === undefined || result === null) return exitWith(GATE_EXIT.allow);
  const verdict = toVerdict(result);
  if (typeof verdict === "string")
    return exitWith(crashExit, oneLine(`gate returned no verdict: ${verdict}`, GATE_LINE_MAX_CHARS));
  writeVerdict(JSON.stringify(verdict), env.PI_TEAMS_HOOK_RESULT_FILE);
  return exitWith(verdict.decision === "deny" ? GATE_EXIT.deny : GATE_EXIT.allow);
}

/** The contract's verdict of what a gate returned, or what is wrong with it. */
function toVerdict(result: unknown): (Record<string, unknown> & { decision: Decision }) | string {
  if (typeof result !== "object" || result === null || Array.isArray(result)) {
    return `it returned ${Array.isArray(result) ? "an array" : typeof result}; return nothing to allow, or { deny: true, reason } to deny`;
  }
  const { deny, decision, reason, message, ...rest } = result as GateVerdict & Record<string, unknown>;
  if (deny !== undefined && typeof deny !== "boolean") return `deny: must be true or false, got ${typeof deny}`;
  const named = typeof decision === "string" ? decision.trim().toLowerCase() : decision;
  if (deny !== undefined && named !== undefined && (named === "deny") !== deny)
    return `deny: ${String(deny)} contradicts decision: ${JSON.stringify(decision)}`;
  const candidate: Record<string, unknown> = { ...rest, decision: named ?? (deny ? "deny" : "allow") };
  if (typeof reason === "string") {
    const line = reason.replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
    if (line !== "") candidate.reason = capReason(line);
  } else if (reason !== undefined) candidate.reason = reason;
  if (typeof message === "string") candidate.message = capBytes(message, VERDICT_LIMITS.messageBytes);
  else if (message !== undefined) candidate.message = message;
  const parsed = VerdictSchema.safeParse(candidate);
  if (!parsed.success)
    return parsed.error.issues
      .map((issue) => `${issue.path.map(String).join(".") || "verdict"}: ${issue.message}`)
      .join("; ");
  return candidate as Record<string, unknown> & { decision: Decision };
}

/** The result file when the leader named one (it wins over stdout), else the last line of stdout. */
function writeVerdict(json: string, resultFile: string | undefined): void {
  if (resultFile?.trim()) {
    try {
      writeFileSync(resultFile, `${json}\n`);
      return;
    } catch {
      // An unwritable result file: stdout still carries the verdict.
    }
  }
  process.stdout.write(`\n${json}\n`);
}

function exitWith(code: number, line?: string): never {
  if (line) process.stderr.write(`${line}\n`);
  process.exit(code);
}

/** `gate crashed: <Name>: <message> (<file>:<line>)`, at most GATE_LINE_MAX_CHARS, the location kept whole. */
export function crashLine(error: unknown, entry: string | undefined = process.argv[1]): string {
  const code = error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : "";
  const what =
    error instanceof Error
      ? `${error.name || "Error"}${code && !(error.name ?? "").includes(code) ? ` [${code}]` : ""}: ${error.message}`
      : `threw ${typeof error === "string" ? JSON.stringify(error) : String(error)}`;
  const where = (error instanceof Error ? ownFrame(error.stack ?? "") : null) ?? (entry ? shownName(entry) : null);
  const tail = where ? ` (${where})` : "";
  return `${oneLine(`gate crashed: ${what}`, GATE_LINE_MAX_CHARS - tail.length)}${tail}`;
}

const HELPER_FILE = fileURLToPath(import.meta.url);

/** A file's name as the gate's author knows it (the run's private copy of the gate has the gate's own name). */
function shownName(file: string): string {
  return path.basename(file);
}

/** `file:line` of the first frame in the gate's own files: not Node's, not in node_modules, not this helper. */
function ownFrame(stack: string): string | null {
  for (const line of stack.split("\n")) {
    const match = /^\s*at (?:.*? \()?(.+?):(\d+):\d+\)?$/.exec(line);
    if (!match) continue;
    let file = match[1] ?? "";
    if (file.startsWith("async ")) file = file.slice(6);
    if (file.startsWith("file://")) file = fileURLToPath(file);
    if (!path.isAbsolute(file) || file === HELPER_FILE || file.split(path.sep).includes("node_modules")) continue;
    return `${shownName(file)}:${match[2]}`;
  }
  return null;
}

/** Blanks and control characters made single spaces, cut to `max` characters with `…`. */
function oneLine(text: string, max: number): string {
  const line = text.replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
  return line.length <= max ? line : `${line.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

function capBytes(text: string, max: number): string {
  if (Buffer.byteLength(text, "utf8") <= max) return text;
  let cut = text.slice(0, max - 3);
  while (Buffer.byteLength(`${cut}…`, "utf8") > max) cut = cut.slice(0, -1);
  return `${cut}…`;
}
