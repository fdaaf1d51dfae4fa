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
 * Imports only contract/contract.ts: this module ships to hooks on their own, far from the leader.
 */
import { readFile } from "node:fs/promises";
import { ContextDocumentSchema, HOOK_CONTRACT_VERSION, type ContextDocument } from "./contract/contract.js";

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

  constructor(code: HookContextErrorCode, message: string, channel: ContextChannel | null, options?: { cause?: unknown }) {
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
    `no hook context: standard input is ${stdin ? (stdin.isTTY ? "a terminal" : "empty") : "not read"}, ` +
      `${ENV_FILE} ${file ? "names no readable file" : "is not set"} and ${ENV_JSON} is not set. ` +
      "Run the hook through pi-teams-hooks (e.g. pi-teams-hooks run task_completed --team-dir DIR --task ID).",
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
    throw new HookContextError("E_CONTEXT_JSON", `hook context from ${describeSource(channel, source)} is not valid JSON (${why})`, channel, { cause: error });
  }
  const version = value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>).version : undefined;
  if (version !== undefined && !(typeof version === "number" && SUPPORTED_CONTRACT_VERSIONS.includes(version))) {
    throw new HookContextError(
      "E_CONTEXT_VERSION",
      `hook context from ${describeSource(channel, source)} has contract version ${JSON.stringify(version)}; ` +
        `this pi-teams-hooks/hook supports version ${SUPPORTED_CONTRACT_VERSIONS.join(", ")}. ` +
        "Update the pi-teams-hooks package that the hook imports.",
      channel,
    );
  }
  const parsed = ContextDocumentSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 3).map((issue) => `${issue.path.map(String).join(".") || "(document)"}: ${issue.message}`);
    throw new HookContextError("E_CONTEXT_INVALID", `hook context from ${describeSource(channel, source)} is not a v1 context document: ${issues.join("; ")}`, channel);
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
    throw new HookContextError("E_CONTEXT_READ", `cannot read standard input: ${error instanceof Error ? error.message : String(error)}`, "stdin", { cause: error });
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The context file's text; null when it is gone (the leader removes it after the run: a hand run with a stale variable). */
async function readContextFile(file: string): Promise<string | null> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : "";
    if (code === "ENOENT") return null;
    throw new HookContextError("E_CONTEXT_READ", `cannot read ${ENV_FILE} (${file}): ${code || String(error)}`, "file", { cause: error });
  }
}
