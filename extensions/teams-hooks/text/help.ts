/**
 * `--help`, made from the command table (cli/commands.ts): the shapes a command is described in, and
 * the text each `--help` prints. Every flag a command's parser accepts is a row of its help, because
 * both come from the same table; nothing here names a command.
 */

/** Help texts are written for this many columns (docs/cli.md, "Output"). */
export const HELP_WIDTH = 100;
/** Where a flag's help starts: two spaces, the flag, padding to this column. */
const FLAG_COLUMN = 26;

/** One flag: what the parser takes, and what people read about it. */
export interface FlagSpec {
  /** The long name, without dashes: `team-dir`. */
  readonly name: string;
  /** One letter, for `-f`. */
  readonly short?: string;
  readonly type: "string" | "boolean";
  /** Given more than once, every value is kept (in order). */
  readonly multiple?: boolean;
  /** What its value is called in help: `DIR`. Only for `type: "string"`. */
  readonly value?: string;
  /** Said after the help as `(default: …)`. */
  readonly default?: string;
  readonly help: string;
}

/** A word that is not a flag, listed among the flags: `PATH…` of `trust`, the schema names. */
interface WordSpec {
  readonly word: string;
  readonly help: string;
}

export type HelpRow = FlagSpec | WordSpec;

export interface FlagGroup {
  /** Said above the rows, with a colon: `Team`. */
  readonly title?: string;
  readonly rows: readonly HelpRow[];
  /**
   * A group several commands take alike: docs/cli.md lists it under this command, and under the
   * others points there. `--help` always lists every row.
   */
  readonly home?: string;
}

/**
 * A part of a description: a paragraph (wrapped; `\n` starts a new line), or a list of terms and
 * their text (a term longer than its column puts its text on the next line).
 */
type Block = string | { readonly list: ReadonlyArray<readonly [string, string]>; readonly termWidth?: number };

/** One form of a command that has several: `logs show`, `serve keys create`, `policy get`. */
interface SubcommandSpec {
  /** The words after the command, as typed: `show`, `keys create`; "" for the command alone. */
  readonly name: string;
  /** Its entry's term in the help: `logs show <id>`. */
  readonly term: string;
  /** Its usage, after `pi-teams-hooks `. */
  readonly usage: string;
  readonly help: string;
  /** The command's flags it takes (long names); any other is a usage error. `help` is always taken. */
  readonly flags: readonly string[];
}

interface ExitSpec {
  readonly code: 0 | 1 | 2 | 3;
  readonly when: string;
}

export interface CommandSpec {
  readonly name: string;
  /** How the command list shows it, when more than its name: `run <event>`. */
  readonly synopsis?: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Its usage forms, after `pi-teams-hooks `; a command with subcommands takes theirs. */
  readonly usage: readonly string[];
  readonly description: readonly Block[];
  readonly subcommands?: readonly SubcommandSpec[];
  /** Its flags, and words it takes in their place; `-h, --help` is added to the last group. */
  readonly groups: readonly FlagGroup[];
  /** What follows the flags: what people ask after reading them. */
  readonly notes?: readonly Block[];
  readonly exit: readonly ExitSpec[];
  /** Command lines, each as typed. */
  readonly examples?: readonly string[];
}

/** `pi-teams-hooks --help`, beside the command list. */
export interface ProgramSpec {
  readonly name: string;
  readonly description: readonly Block[];
  readonly footer: readonly Block[];
}

/** `-h, --help`: every command takes it. */
export const HELP_FLAG: FlagSpec = { name: "help", short: "h", type: "boolean", help: "this help" };

export function isFlag(row: HelpRow): row is FlagSpec {
  return "name" in row;
}

/** `-f, --follow`, `--team-dir DIR`, `PATH…`: a row's label. */
export function rowLabel(row: HelpRow): string {
  if (!isFlag(row)) return row.word;
  const long = `--${row.name}${row.value ? ` ${row.value}` : ""}`;
  return row.short ? `-${row.short}, ${long}` : long;
}

/** A row's help with its default. */
export function rowHelp(row: HelpRow): string {
  return isFlag(row) && row.default !== undefined ? `${row.help} (default: ${row.default})` : row.help;
}

/** Every flag of a command, in the order its help lists them, `--help` last. */
export function commandFlags(spec: CommandSpec): FlagSpec[] {
  return [...spec.groups.flatMap((group) => group.rows.filter(isFlag)), HELP_FLAG];
}

/** `words` cut into lines of at most `width` columns: the first after `first`, the rest after `rest`. */
function wrapWords(words: readonly string[], width: number, first: string, rest: string): string[] {
  const lines: string[] = [];
  let line = first;
  let empty = true;
  for (const word of words) {
    if (!empty && line.length + 1 + word.length > width) {
      lines.push(line);
      line = rest + word;
    } else {
      line = empty ? line + word : `${line} ${word}`;
    }
    empty = false;
  }
  lines.push(line);
  return lines;
}

/** A paragraph wrapped to `width`, each line after `indent`; `\n` starts a new line, keeping its own leading spaces. */
function wrapText(text: string, width: number, indent = "", firstIndent = indent): string[] {
  return text.split("\n").flatMap((segment, i) => {
    const own = /^ */.exec(segment)?.[0] ?? "";
    const lead = (i === 0 ? firstIndent : indent) + own;
    return wrapWords(segment.trim().split(/ +/).filter(Boolean), width, lead, indent + own);
  });
}

/**
 * A usage form, after `Usage: ` (or its indent), wrapped at the brackets: the lines after the first
 * line up under the command's first argument. Nothing inside `[…]`, `<…>` or `(…)` is cut.
 */
export function usageLines(form: string, lead: string, width = HELP_WIDTH): string[] {
  const tokens: string[] = [];
  let depth = 0;
  let token = "";
  for (const char of `pi-teams-hooks ${form}`) {
    if (char === " " && depth === 0) {
      if (token) tokens.push(token);
      token = "";
      continue;
    }
    if (char === "[" || char === "<" || char === "(") depth += 1;
    if (char === "]" || char === ">" || char === ")") depth -= 1;
    token += char;
  }
  if (token) tokens.push(token);
  // The command and its subcommand words stay together: `pi-teams-hooks serve keys create`.
  let head = 1;
  while (head < tokens.length && /^[a-z][a-z-]*$/.test(tokens[head] ?? "")) head += 1;
  const start = tokens.slice(0, head).join(" ");
  const hang = " ".repeat(lead.length + start.length + 1);
  return wrapWords([start, ...tokens.slice(head)], width, lead, hang);
}

function blockLines(block: Block, width: number): string[] {
  if (typeof block === "string") return wrapText(block, width);
  const column = 2 + (block.termWidth ?? Math.max(...block.list.map(([term]) => term.length)) + 2);
  return block.list.flatMap(([term, text]) => {
    const label = `  ${term}`;
    const pad = " ".repeat(column);
    if (label.length + 1 > column) return [label, ...wrapText(text, width, pad)];
    return wrapText(text, width, pad, label.padEnd(column));
  });
}

function blocksText(blocks: readonly Block[], width: number): string {
  return blocks.map((block) => blockLines(block, width).join("\n")).join("\n\n");
}

/** One row: the label, then its help from the flag column (on the next line when the label is longer). */
function rowLines(row: HelpRow, width: number): string[] {
  const label = `  ${rowLabel(row)}`;
  const pad = " ".repeat(FLAG_COLUMN);
  if (label.length + 2 > FLAG_COLUMN) return [label, ...wrapText(rowHelp(row), width, pad)];
  return wrapText(rowHelp(row), width, pad, label.padEnd(FLAG_COLUMN));
}

function groupsText(groups: readonly FlagGroup[], width: number): string {
  return groups
    .map((group, i) => {
      const rows = i === groups.length - 1 ? [...group.rows, HELP_FLAG] : group.rows;
      const title = group.title ? wrapText(`${group.title}:`, width) : [];
      return [...title, ...rows.flatMap((row) => rowLines(row, width))].join("\n");
    })
    .join("\n\n");
}

/** `Exit status: 0 …; 1 …; 2 ….` */
function exitSentence(exit: readonly ExitSpec[]): string {
  return `${exit.map((e) => `${e.code} ${e.when}`).join("; ")}.`;
}

/** Every usage form of a command: its own, then its subcommands'. */
export function usageForms(spec: CommandSpec): string[] {
  return [...spec.usage, ...(spec.subcommands ?? []).map((sub) => sub.usage)];
}

/**
 * The usage block: each form wrapped as the whole help wraps it; `flush` puts the lines after the
 * first under `Usage: ` instead of under the first argument (the help of one subcommand).
 */
function usageText(forms: readonly string[], width: number, flush = false): string {
  return forms
    .flatMap((form, i) =>
      usageLines(form, i === 0 ? "Usage: " : "       ", width).map((line, j) =>
        flush && j > 0 ? `       ${line.trimStart()}` : line,
      ),
    )
    .join("\n");
}

/** A command's subcommands as a list of terms: the column fits the longest of them all. */
function entriesBlock(spec: CommandSpec, subs: readonly SubcommandSpec[]): Block {
  const termWidth = Math.max(...(spec.subcommands ?? []).map((sub) => sub.term.length)) + 2;
  return { list: subs.map((sub) => [sub.term, sub.help] as const), termWidth };
}

/** `pi-teams-hooks <command> --help`. */
export function commandHelp(spec: CommandSpec, width = HELP_WIDTH): string {
  const subs = spec.subcommands ?? [];
  const parts = [
    usageText(usageForms(spec), width),
    ...(spec.description.length > 0 ? [blocksText(spec.description, width)] : []),
    ...(subs.length > 0 ? [blocksText([entriesBlock(spec, subs)], width)] : []),
    groupsText(spec.groups, width),
    ...(spec.notes && spec.notes.length > 0 ? [blocksText(spec.notes, width)] : []),
    wrapText(`Exit status: ${exitSentence(spec.exit)}`, width).join("\n"),
    ...(spec.examples && spec.examples.length > 0
      ? [[spec.examples.length > 1 ? "Examples:" : "Example:", ...spec.examples.map((e) => `  ${e}`)].join("\n")]
      : []),
  ];
  return `${parts.join("\n\n")}\n`;
}

/**
 * The subcommands `words` names (`show`; `keys create`; `keys`: every `keys …`), or none when they
 * name no subcommand.
 */
function subcommandsNamed(spec: CommandSpec, words: readonly string[]): SubcommandSpec[] {
  const subs = (spec.subcommands ?? []).filter((sub) => sub.name !== "");
  const [first, second] = words;
  if (first === undefined || !/^[a-z]+$/.test(first)) return [];
  const exact =
    subs.find((sub) => sub.name === `${first} ${second ?? ""}`.trim()) ?? subs.find((sub) => sub.name === first);
  return exact ? [exact] : subs.filter((sub) => sub.name.startsWith(`${first} `));
}

/**
 * `logs show --help`, `help serve keys`: the usage and entry of each subcommand named, the flags they
 * take, and where the rest is; null when `words` name no subcommand (the whole help is shown then).
 */
export function subcommandHelp(spec: CommandSpec, words: readonly string[], width = HELP_WIDTH): string | null {
  const subs = subcommandsNamed(spec, words);
  if (subs.length === 0) return null;
  const flags = new Set(subs.flatMap((sub) => sub.flags));
  const rows = commandFlags(spec).filter((flag) => flags.has(flag.name));
  const parts = [
    usageText(
      subs.map((sub) => sub.usage),
      width,
      subs.length === 1,
    ),
    blocksText([entriesBlock(spec, subs)], width),
    ...(rows.length > 0 ? [rows.flatMap((row) => rowLines(row, width)).join("\n")] : []),
    `Every flag, and the exit status: pi-teams-hooks ${spec.name} --help`,
  ];
  return `${parts.join("\n\n")}\n`;
}

/** `pi-teams-hooks --help`: the program, its commands, and `help`. */
export function mainHelp(program: ProgramSpec, commands: readonly CommandSpec[], width = HELP_WIDTH): string {
  const list: Array<readonly [string, string]> = [
    ...commands.map((c) => [c.synopsis ?? c.name, c.summary] as const),
    ["help [command]", "show help for a command (help logs show: for one of its subcommands)"],
  ];
  const parts = [
    `Usage: ${program.name} <command> [options]`,
    blocksText(program.description, width),
    `Commands:\n${blocksText([{ list }], width)}`,
    blocksText(program.footer, width),
  ];
  return `${parts.join("\n\n")}\n`;
}
