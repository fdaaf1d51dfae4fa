/**
 * The command line: parses arguments and calls the library. `main` never calls `process.exit` and
 * never throws: it returns the exit code, mapped from error codes in one table.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { type ErrorCode, HooksError, describeError, isHooksError } from "../contract/errors.js";
import { type CommandSpec, commandFlags, commandHelp, mainHelp, subcommandHelp } from "../text/help.js";
import { didYouMean } from "../text/suggest.js";
import { COMMANDS, PROGRAM, commandSpec } from "./commands.js";
import type { CliIo, CommandFn, ParsedArgs } from "./io.js";
import { createRuntime } from "../runner/runtime.js";

// Each command's module loads when that command runs (in the built bin, its chunk: the split points of
// scripts/bundle-bin.mjs): `--help` pays for no command's code. Start-up time is what a person waits
// for on every call.
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
const trustCommand: CommandFn = async (a, io) => (await import("./trust-command.js")).trustCommand(a, io);
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

/** What each command of the table (cli/commands.ts) runs. */
const RUNNERS: Readonly<Record<string, CommandFn>> = {
  run: runCommand,
  decide: decideCommand,
  watch: watchCommand,
  demo: demoCommand,
  doctor: doctorCommand,
  init: initCommand,
  policy: policyCommand,
  config: configCommand,
  schema: schemaCommand,
  logs: logsCommand,
  trust: trustCommand,
  serve: serveCommand,
};

type ParseOptions = NonNullable<ParseArgsConfig["options"]>;

/** The parser's options of a command: each flag of its table entry, as the table declares it. */
function parseOptions(spec: CommandSpec): ParseOptions {
  const options: ParseOptions = {};
  for (const flag of commandFlags(spec)) {
    options[flag.name] = {
      type: flag.type,
      ...(flag.short ? { short: flag.short } : {}),
      ...(flag.multiple ? { multiple: true } : {}),
    };
  }
  return options;
}

/** `--help` of a command, or of the subcommands `words` name (`logs show`, `serve keys`). */
function helpText(spec: CommandSpec, words: readonly string[]): string {
  return subcommandHelp(spec, words) ?? commandHelp(spec);
}

export type { CliIo } from "./io.js";

export async function main(argv: readonly string[], given: CliIo): Promise<number> {
  // One runtime for the whole command: the bin's, or the defaults built here once (the library's runCli).
  const io: CliIo = given.runtime ? given : { ...given, runtime: createRuntime() };
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    const topic = name === "help" && rest[0] !== undefined ? commandSpec(rest[0]) : undefined;
    io.stdout(topic ? helpText(topic, rest.slice(1)) : mainHelp(PROGRAM, COMMANDS));
    return 0;
  }
  if (name === "--version" || name === "-v") {
    io.stdout(`${await packageVersion()}\n`);
    return 0;
  }
  const spec = commandSpec(name);
  const run = RUNNERS[name];
  if (!spec || !run) {
    const names = COMMANDS.map((c) => c.name);
    io.stderr(
      `pi-teams-hooks: unknown command "${name}"${didYouMean(name, names)} (commands: ${names.join(", ")}; see --help)\n`,
    );
    return 2;
  }
  try {
    let parsed: ParsedArgs;
    const options = parseOptions(spec);
    try {
      checkFlags(rest, options);
      parsed = parseArgs({ args: [...rest], options, allowPositionals: true, strict: true });
    } catch (error) {
      if (isHooksError(error)) throw error;
      throw new HooksError("E_USAGE", parseArgsMessage(error, rest), { cause: error });
    }
    if (parsed.values.help) {
      io.stdout(helpText(spec, parsed.positionals));
      return 0;
    }
    return await run(parsed, io);
  } catch (error) {
    if (isHooksError(error)) {
      io.stderr(`pi-teams-hooks ${name}: ${error.message}\n`);
      if (error.code === "E_USAGE") io.stderr(`(see: pi-teams-hooks ${name} --help)\n`);
      return EXIT_CODES[error.code];
    }
    io.stderr(
      `pi-teams-hooks ${name}: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return 1;
  }
}

/**
 * Every `--flag` and `-x` the command does not take, said in our words with the closest flag it does
 * take (`unknown flag --timout-ms (did you mean --timeout-ms?)`), before Node's parser words it.
 * Arguments after `--` are positionals.
 */
function checkFlags(args: readonly string[], options: ParseOptions): void {
  const longs = Object.keys(options);
  const shorts = Object.entries(options).flatMap(([long, o]) => (o.short ? [[o.short, long] as const] : []));
  for (const arg of args) {
    if (arg === "--") return;
    if (arg.startsWith("--")) {
      const flag = arg.slice(2).split("=")[0] ?? "";
      if (!longs.includes(flag))
        throw new HooksError(
          "E_USAGE",
          `unknown flag --${flag}${didYouMean(
            `--${flag}`,
            longs.map((l) => `--${l}`),
          )}`,
        );
    } else if (/^-[^-\d]/.test(arg)) {
      for (const letter of arg.slice(1)) {
        if (!shorts.some(([short]) => short === letter)) {
          const known = shorts.map(([short, long]) => `-${short} for --${long}`).join(", ");
          throw new HooksError(
            "E_USAGE",
            `unknown flag -${letter}${shorts.length > 0 ? ` (short flags: ${known})` : ""}`,
          );
        }
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
    return /^-[\d.]/.test(value)
      ? `${flag} needs a value, and "${value}" starts with "-" (a value that does is written ${flag}=${value})`
      : `${flag} needs a value`;
  }
  const missing =
    /^Option '(-{1,2}[^' ]+)(?:, -{1,2}[^' ]+)?(?: <value>)?' argument missing/.exec(text) ??
    /^Option '-\w, (--[^' ]+) <value>' argument missing/.exec(text);
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
