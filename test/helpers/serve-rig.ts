/**
 * A rig for tests of the task API: a teams root with teams in it, keys made by the real
 * `serve keys create`, the built `pi-teams-hooks serve` as a child process on 127.0.0.1 (port 0),
 * and a small JSON client on fetch. Every wait is bounded.
 *
 *   const root = await makeTeamsRoot({ alpha: { hooks: { templates: {...} } } });
 *   const key = await createKey(root, ["--name", "ci", "--scopes", "tasks:create", "--teams", "alpha"]);
 *   const serve = await startServe(root);
 *   const answer = await api(serve.url, "POST", "/api/v1/teams/alpha/tasks", { key, body: {...} });
 *   expect(await serve.stop()).toMatchObject({ code: 0 });
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { BIN, type Exit, runBin, waitUntil } from "./leader-rig.js";

/** A fresh teams root (0700, as mkdtemp makes it) with one folder per team, each with its config.json. */
export async function makeTeamsRoot(
  teams: Record<string, Record<string, unknown>>,
): Promise<{ root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(path.join(os.tmpdir(), "teams-serve-"));
  for (const [team, config] of Object.entries(teams)) {
    await mkdir(path.join(root, team), { recursive: true });
    const full = { version: 1, teamId: team, taskListId: team, leadName: "team-lead", members: [], ...config };
    await writeFile(path.join(root, team, "config.json"), `${JSON.stringify(full, null, 2)}\n`);
  }
  return { root, cleanup: () => rm(root, { recursive: true, force: true }) };
}

/** `serve keys create --teams-root ROOT …args`, through the built bin; the key from the last line. */
export async function createKey(root: string, args: string[]): Promise<string> {
  const { code, stdout, stderr } = await runBin(["serve", "keys", "create", "--teams-root", root, ...args]);
  if (code !== 0) throw new Error(`keys create failed (${code}): ${stderr}`);
  return stdout.trimEnd().split("\n").pop() ?? "";
}

/** A key named `name` with `scopes` on `teams` (comma-separated), for every template: `serve keys create`. */
export function teamKey(root: string, name: string, scopes: string, teams: string): Promise<string> {
  return createKey(root, ["--name", name, "--scopes", scopes, "--teams", teams, "--all-templates"]);
}

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  exited: Promise<Exit>;
  /** SIGINT, then the exit (SIGKILL after `timeoutMs` as a last resort). */
  stop(timeoutMs?: number): Promise<Exit & { ms: number }>;
}

/** Starts `serve --teams-root ROOT --listen 127.0.0.1:0 …args`; resolves at its `listening on` line. */
export async function startServe(root: string, args: string[] = []): Promise<ServeProcess> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && !key.startsWith("PI_TEAMS_")) env[key] = value;
  const child = spawn(process.execPath, [BIN, "serve", "--teams-root", root, "--listen", "127.0.0.1:0", ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  let exit: Exit | null = null;
  const exited = new Promise<Exit>((resolve) =>
    child.on("close", (code, signal) => resolve((exit = { code, signal }))),
  );
  const url = await waitUntil("the listening line", () => /^listening on (http:\/\/\S+)$/m.exec(stdout)?.[1], {
    timeoutMs: 15_000,
    abort: () => (exit ? `serve exited ${JSON.stringify(exit)}: ${stderr}` : null),
  });
  return {
    child,
    url,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async stop(timeoutMs = 10_000) {
      const began = performance.now();
      if (exit === null) child.kill("SIGINT");
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      try {
        return { ...(await exited), ms: performance.now() - began };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** `startServe(root, args)`, stopped when the running test finishes (vitest's `onTestFinished` of its context). */
export async function startServeFor(
  context: { onTestFinished(fn: () => Promise<void>): void },
  root: string,
  args: string[] = [],
): Promise<ServeProcess> {
  const serve = await startServe(root, args);
  context.onTestFinished(async () => void (await serve.stop()));
  return serve;
}

export interface ApiAnswer {
  status: number;
  headers: Headers;
  json: Record<string, unknown>;
}

/** One request; the body is JSON-encoded unless it is a string (sent as is). Never follows redirects. */
export async function api(
  url: string,
  method: string,
  route: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiAnswer> {
  const headers: Record<string, string> = {
    ...(opts.key ? { Authorization: `Bearer ${opts.key}` } : {}),
    ...opts.headers,
  };
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
    headers["Content-Type"] ??= "application/json";
  }
  const response = await fetch(`${url}${route}`, {
    method,
    headers,
    body,
    redirect: "manual",
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new Error(`${method} ${route}: ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
  return { status: response.status, headers: response.headers, json };
}

/** The error code of a refusal (`undefined` for a success). */
export function codeOf(answer: ApiAnswer): unknown {
  return (answer.json.error as { code?: unknown } | undefined)?.code;
}

/** Runs `fn` over `items` with at most `limit` in flight; results in input order. */
export async function pool<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  });
  await Promise.all(lanes);
  return results;
}
