/**
 * Whether a gate's own file parses, by its interpreter's own syntax check: `bash -n` for a gate bash runs
 * (a `.sh`, or a bare executable whose `#!` names bash or sh: that shell's `-n`), `node --check` for a
 * `.js`, `.mjs` or `.cjs` node runs. A `.ts` gate is not checked: tsx has no cheap check of its own, and
 * `node --check` does not read TypeScript on Node 20. Neither check runs anything of the gate.
 *
 * A gate that does not parse judged nothing: the lead's error, not the work's. The check runs in the
 * leader's own process (never in the sandbox), with only PATH in its environment (no BASH_ENV, no
 * NODE_OPTIONS), on a file the caller names: the run's copy of the checked bytes, or (doctor) the gate.
 */
import { execFile } from "node:child_process";
import { closeSync, openSync, readSync } from "node:fs";
import path from "node:path";
import type { HookCommand } from "../contract/hook-run.js";
import { absoluteSearchPath } from "./search-path.js";

/** The error code of a run whose gate does not parse (a spawn error: held for the lead). */
export const GATE_SYNTAX = "E_GATE_SYNTAX";

/** Longer than any syntax check of a gate's size takes; past it, nothing is said. */
const CHECK_TIMEOUT_MS = 10_000;

type Checker = { command: string; args: string[]; read: (output: string, file: string) => Parsed | null };
type Parsed = { line: string; message: string };

/**
 * How the gate `hook` starts decides its check; `head` is the start of its bytes (for a bare
 * executable's `#!` line). Null: no check for this kind of gate.
 */
function checkerFor(hook: HookCommand, head: string): Checker | null {
  const ext = path.extname(hook.hookPath);
  if (hook.command === process.execPath)
    return [".js", ".mjs", ".cjs"].includes(ext) && hook.args.length === 1
      ? { command: process.execPath, args: ["--check"], read: readNode }
      : null;
  if (path.basename(hook.command) === "bash" && hook.args.length === 1)
    return { command: hook.command, args: ["-n"], read: readShell };
  if (hook.command !== hook.hookPath) return null;
  const shell = shellOf(head.split("\n")[0] ?? "");
  return shell ? { command: shell, args: ["-n"], read: readShell } : null;
}

/** The shell a `#!` line names when it is bash or sh (`/bin/sh`, `/usr/bin/env bash`), or null. */
function shellOf(first: string): string | null {
  const match = /^#!\s*(\S+)(?:[ \t]+(\S+))?/.exec(first.replace(/\r$/, ""));
  if (!match?.[1]) return null;
  const named = path.basename(match[1]) === "env" ? match[2] : match[1];
  return named !== undefined && ["bash", "sh"].includes(path.basename(named)) ? named : null;
}

/** `<file>: line 3: syntax error near unexpected token `then'` (bash, dash say `<file>: 3: …`). */
function readShell(output: string, file: string): Parsed | null {
  for (const text of output.split("\n")) {
    if (!text.startsWith(`${file}: `)) continue;
    const match = /^(?:line )?(\d+): (.+)$/.exec(text.slice(file.length + 2));
    if (match?.[1] && match[2]) return { line: match[1], message: match[2].trim() };
  }
  return null;
}

/** `<file>:1`, the source line, a caret, then `SyntaxError: Unexpected token ';'` (node --check). */
function readNode(output: string, file: string): Parsed | null {
  const lines = output.split("\n");
  const line = lines
    .map((l) => (l.startsWith(`${file}:`) ? l.slice(file.length + 1) : ""))
    .find((n) => /^\d+$/.test(n));
  const error = lines.find((l) => l.startsWith("SyntaxError: "));
  return line && error ? { line, message: error.trim() } : null;
}

/**
 * Why the gate `hook` does not parse, checked on `file` (its bytes, wherever they are): one line,
 * `<gate file>:<line>: <message>`, naming the gate's own path (`hook.hookPath`), never `file`; null when it
 * parses, when this kind of gate has no check, or when the check itself could not say (its interpreter
 * missing, the file unreadable, a timeout): only a syntax error the interpreter reports is one.
 */
export async function syntaxError(hook: HookCommand, file: string, head: string): Promise<string | null> {
  return (await checkSyntax(hook, file, head)) ?? null;
}

/**
 * As syntaxError, but telling a check that could not say (undefined: no check for this kind of gate, its
 * interpreter missing, the file unreadable, a timeout) from one that found the file parses (null).
 */
export async function checkSyntax(hook: HookCommand, file: string, head: string): Promise<string | null | undefined> {
  const checker = checkerFor(hook, head);
  if (!checker) return undefined;
  const output = await new Promise<string | null | undefined>((resolve) => {
    execFile(
      checker.command,
      [...checker.args, file],
      {
        env: { PATH: absoluteSearchPath(process.env.PATH ?? "/usr/bin:/bin") },
        timeout: CHECK_TIMEOUT_MS,
        maxBuffer: 1 << 20,
      },
      (error, stdout, stderr) => {
        // Exit 0: it parses. A timeout or a kill says nothing about the gate's syntax.
        if (!error) return resolve(null);
        if (error.killed || error.signal) return resolve(undefined);
        resolve(`${stdout}\n${stderr}`);
      },
    );
  });
  if (output === null || output === undefined) return output;
  const parsed = checker.read(output, file);
  return parsed ? `${hook.hookPath}:${parsed.line}: ${parsed.message}` : undefined;
}

/**
 * Why the gate file `hook` names does not parse, checked on that file itself (at trust time: `trust`, a
 * first start's trust on first use), or null (it parses, has no check, cannot be read).
 */
export async function gateFileSyntaxError(hook: HookCommand): Promise<string | null> {
  let head = "";
  try {
    const fd = openSync(hook.hookPath, "r");
    try {
      const buffer = Buffer.alloc(256);
      head = buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0)).toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return null; // unreadable: the trust check says so, not this one
  }
  return syntaxError(hook, hook.hookPath, head);
}
