/**
 * The command line: parses arguments and calls the library. `main` never calls `process.exit` and
 * never throws: it returns the exit code, mapped from error codes in one table.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { type ErrorCode, HooksError, describeError, isHooksError } from "../contract/errors.js";
import { commandHelp, mainHelp } from "../text/help.js";
import { didYouMean } from "../text/suggest.js";
import type { CliIo, CommandFn, ParsedArgs } from "./io.js";

// Each command's module loads when that command runs: `run` does not pay for chokidar, `logs` not
// for zod. Start-up time is what a person waits for on every call.
const runCommand: CommandFn = async (a, io) => (await import("./run.js")).runCommand(a, io);
const decideCommand: CommandFn = async (a, io) => (await import("./run.js")).decideCommand(a, io);
const watchCommand: CommandFn = async (a, io) => (await import("./watch.js")).watchCommand(a, io);
const demoCommand: CommandFn = async (a, io) => (await import("./demo.js")).demoCommand(a, io);
const doctorCommand: CommandFn = async (a, io) => (await import("./doctor.js")).doctorCommand(a, io);
const initCommand: CommandFn = async (a, io) => (await import("./init.js")).initCommand(a, io);
const policyCommand: CommandFn = async (a, io) => (await import("./config.js")).policyCommand(a, io);
const configCommand: CommandFn = async (a, io) => (await import("./config.js")).configCommand(a, io);
const schemaCommand: CommandFn = async (a, io) => (await import("./schema.js")).schemaCommand(a, io);
const logsCommand: CommandFn = async (a, io) => (await import("./logs.js")).logsCommand(a, io);
const trustCommand: CommandFn = async (a, io) => (await import("./trust.js")).trustCommand(a, io);
const serveCommand: CommandFn = async (a, io) => (await import("./serve.js")).serveCommand(a, io);

/**
 * Exit codes: 0 success, 1 a gate failed (or a check found a problem), 2 usage or setup error; `run`
 * adds 3, a gate that answered defer (held).
 */
const EXIT_CODES: Readonly<Record<ErrorCode, number>> = Object.freeze({
  E_USAGE: 2,
  E_TEAM_DIR: 2,
  E_HOOKS_DIR: 2,
  E_PATH: 2,
  E_CONFIG: 2,
  E_TASK: 2,
  E_LOCK_TIMEOUT: 1,
  E_IO: 1,
  E_LEDGER: 1,
  E_INTERNAL: 1,
});


const COMMANDS: Readonly<Record<string, { options: NonNullable<ParseArgsConfig["options"]>; run: CommandFn }>> = {
  run: { options: runOptions(), run: runCommand },
  decide: {
    options: {
      "team-dir": { type: "string" }, team: { type: "string" }, code: { type: "string" }, reason: { type: "string" }, message: { type: "string" }, by: { type: "string" },
      "failure-action": { type: "string" }, "max-reopens": { type: "string" }, "followup-owner": { type: "string" },
      json: { type: "boolean" }, help: { type: "boolean", short: "h" },
    },
    run: decideCommand,
  },
  watch: { options: watchOptions(), run: watchCommand },
  demo: { options: { help: { type: "boolean", short: "h" } }, run: demoCommand },
  doctor: { options: { "team-dir": { type: "string" }, team: { type: "string" }, "hooks-dir": { type: "string" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" } }, run: doctorCommand },
  init: {
    options: { "hooks-dir": { type: "string" }, "team-dir": { type: "string" }, team: { type: "string" }, "from-claude": { type: "string" }, force: { type: "boolean" }, help: { type: "boolean", short: "h" } },
    run: initCommand,
  },
  policy: {
    options: {
      "team-dir": { type: "string" }, team: { type: "string" }, "failure-action": { type: "string" }, "max-reopens": { type: "string" }, "followup-owner": { type: "string" },
      "failure-mode": { type: "string", multiple: true }, "max-hooks-per-event": { type: "string" }, "chain-deadline-ms": { type: "string" }, "max-payload-bytes": { type: "string" },
      reset: { type: "boolean" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" },
    },
    run: policyCommand,
  },
  config: { options: teamOptions(), run: configCommand },
  schema: { options: { help: { type: "boolean", short: "h" } }, run: schemaCommand },
  trust: {
    options: {
      "team-dir": { type: "string" }, team: { type: "string" }, "hooks-dir": { type: "string" }, all: { type: "boolean" }, yes: { type: "boolean" },
      json: { type: "boolean" }, help: { type: "boolean", short: "h" },
    },
    run: trustCommand,
  },
  logs: {
    options: {
      "team-dir": { type: "string" }, team: { type: "string" }, event: { type: "string" }, task: { type: "string" }, member: { type: "string" }, hook: { type: "string" },
      outcome: { type: "string" }, since: { type: "string" }, limit: { type: "string" }, json: { type: "boolean" }, follow: { type: "boolean", short: "f" },
      trigger: { type: "string" }, "include-hand-runs": { type: "boolean" },
      keep: { type: "string" }, "older-than": { type: "string" }, "dry-run": { type: "boolean" }, failed: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    run: logsCommand,
  },
  serve: {
    options: {
      "teams-root": { type: "string" }, listen: { type: "string" }, "allow-remote": { type: "boolean" }, "rate-limit": { type: "string" },
      name: { type: "string" }, scopes: { type: "string" }, teams: { type: "string" }, templates: { type: "string" },
      "all-templates": { type: "boolean" }, json: { type: "boolean" }, url: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    run: serveCommand,
  },
};

function teamOptions(): NonNullable<ParseArgsConfig["options"]> {
  return {
    "team-dir": { type: "string" },
    team: { type: "string" },
    "task-list": { type: "string" },
    lead: { type: "string" },
    "hooks-dir": { type: "string" },
    cwd: { type: "string" },
    "timeout-ms": { type: "string" },
    timeout: { type: "string" },
    "failure-action": { type: "string" },
    "max-reopens": { type: "string" },
    "followup-owner": { type: "string" },
    "trust-changes": { type: "boolean" },
    "allow-insecure-hooks": { type: "boolean" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  };
}

function runOptions(): NonNullable<ParseArgsConfig["options"]> {
  return {
    ...teamOptions(),
    task: { type: "string" },
    member: { type: "string" },
    timestamp: { type: "string" },
    "apply-policy": { type: "boolean" },
  };
}

function watchOptions(): NonNullable<ParseArgsConfig["options"]> {
  return {
    ...teamOptions(),
    concurrency: { type: "string" },
    inbox: { type: "string" },
    "reconcile-ms": { type: "string" },
    poll: { type: "boolean" },
    "poll-interval-ms": { type: "string" },
    "catch-up": { type: "boolean" },
    once: { type: "boolean" },
    verbose: { type: "boolean", short: "v" },
  };
}

export type { CliIo } from "./io.js";

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    const topic = name === "help" ? rest[0] : undefined;
    io.stdout(topic && topic in COMMANDS ? (subcommandHelp(topic, rest[1]) ?? commandHelp(topic)) : mainHelp());
    return 0;
  }
  if (name === "--version" || name === "-v") {
    io.stdout(`${await packageVersion()}\n`);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    const names = Object.keys(COMMANDS);
    io.stderr(`pi-teams-hooks: unknown command "${name}"${didYouMean(name, names)} (commands: ${names.join(", ")}; see --help)\n`);
    return 2;
  }
  try {
    let parsed: ParsedArgs;
    try {
      checkFlags(rest, command.options);
      parsed = parseArgs({ args: [...rest], options: command.options, allowPositionals: true, strict: true });
    } catch (error) {
      if (isHooksError(error)) throw error;
      throw new HooksError("E_USAGE", parseArgsMessage(error, rest), { cause: error });
    }
    if (parsed.values.help) {
      io.stdout(subcommandHelp(name, parsed.positionals[0]) ?? commandHelp(name));
      return 0;
    }
    return await command.run(parsed, io);
  } catch (error) {
    if (isHooksError(error)) {
      io.stderr(`pi-teams-hooks ${name}: ${error.message}\n`);
      if (error.code === "E_USAGE") io.stderr(`(see: pi-teams-hooks ${name} --help)\n`);
      return EXIT_CODES[error.code];
    }
    io.stderr(`pi-teams-hooks ${name}: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}

/**
 * The help of one subcommand (`logs show --help`, `help policy set`): its usage line and its entry,
 * cut from the command's help, with a pointer to the whole; null when `sub` is not one of its
 * subcommands (the whole help is shown then).
 */
function subcommandHelp(name: string, sub: string | undefined): string | null {
  if (sub === undefined || !/^[a-z]+$/.test(sub)) return null;
  const lines = commandHelp(name).split("\n");
  const at = lines.findIndex((line) => line.replace(/^Usage:\s*|^\s+/, "").startsWith(`pi-teams-hooks ${name} ${sub}`));
  if (at < 0) return null;
  const usage = [(lines[at] ?? "").replace(/^\s+|^Usage:\s*/g, "")];
  // A usage that goes on over the next lines (indented, not another command's).
  for (let i = at + 1; /^\s+\S/.test(lines[i] ?? "") && !(lines[i] ?? "").trim().startsWith("pi-teams-hooks"); i++) usage.push(`       ${(lines[i] ?? "").trim()}`);
  const start = lines.findIndex((line) => line.startsWith(`  ${name} ${sub}`));
  const entry: string[] = [];
  for (let i = start; start >= 0 && i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (i > start && !/^ {6,}\S/.test(line)) break; // the entry ends where the next one (or a blank) begins
    entry.push(line);
  }
  return `Usage: ${usage.join("\n")}\n${entry.length > 0 ? `\n${entry.join("\n")}\n` : ""}\nEvery flag, and the exit status: pi-teams-hooks ${name} --help\n`;
}

/**
 * Every `--flag` and `-x` the command does not take, said in our words with the closest flag it does
 * take (`unknown flag --timout-ms (did you mean --timeout-ms?)`), before Node's parser words it.
 * Arguments after `--` are positionals.
 */
function checkFlags(args: readonly string[], options: NonNullable<ParseArgsConfig["options"]>): void {
  const longs = Object.keys(options);
  const shorts = Object.entries(options).flatMap(([long, o]) => (o.short ? [[o.short, long] as const] : []));
  for (const arg of args) {
    if (arg === "--") return;
    if (arg.startsWith("--")) {
      const flag = arg.slice(2).split("=")[0] ?? "";
      if (!longs.includes(flag)) throw new HooksError("E_USAGE", `unknown flag --${flag}${didYouMean(`--${flag}`, longs.map((l) => `--${l}`))}`);
    } else if (/^-[^-\d]/.test(arg)) {
      for (const letter of arg.slice(1)) {
        if (!shorts.some(([short]) => short === letter)) throw new HooksError("E_USAGE", `unknown flag -${letter}${shorts.length > 0 ? ` (short flags: ${shorts.map(([short, long]) => `-${short} for --${long}`).join(", ")})` : ""}`);
      }
    }
  }
}

/** What Node's argument parser said, in the words of the rest of the command line. */
function parseArgsMessage(error: unknown, args: readonly string[]): string {
  const text = describeError(error);
  // `--max-payload-bytes -1`, `--task --json`: Node words it over three lines.
  const dashed = /^Option '(?:-\w, )?(--[^' ]+)' argument is ambiguous/.exec(text);
  if (dashed?.[1]) {
    const flag = dashed[1];
    const at = args.indexOf(flag);
    const value = at >= 0 ? (args[at + 1] ?? "") : "";
    // A negative number was meant as the value; anything else is most likely the next flag.
    return /^-[\d.]/.test(value) ? `${flag} needs a value, and "${value}" starts with "-" (a value that does is written ${flag}=${value})` : `${flag} needs a value`;
  }
  const missing = /^Option '(-{1,2}[^' ]+)(?:, -{1,2}[^' ]+)?(?: <value>)?' argument missing/.exec(text) ?? /^Option '-\w, (--[^' ]+) <value>' argument missing/.exec(text);
  if (missing) return `${missing[1]} needs a value`;
  const noValue = /^Option '(?:-\w, )?(--[^' ]+)' does not take an argument/.exec(text);
  if (noValue) return `${noValue[1]} takes no value`;
  return text.replace(/\. To specify .*$/s, "");
}

async function packageVersion(): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  const url = new URL("../../../package.json", import.meta.url);
  const pkg = JSON.parse(await readFile(url, "utf8")) as { version?: string };
  return pkg.version ?? "unknown";
}
