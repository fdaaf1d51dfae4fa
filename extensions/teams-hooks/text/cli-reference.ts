/**
 * The reference blocks of docs/cli.md, made from the command table as `--help` is: the command list,
 * and per command its usage, its forms and flags, and its exit statuses; and the settings, from the
 * settings table (settings/table.ts). Each block sits between
 * `<!-- generated:cli ID -->` and `<!-- /generated -->`; the prose around them is written by hand.
 * `npm run docs:cli` writes them (scripts/docs-cli.mjs), and a test fails when one is stale.
 */
import {
  type CommandSpec,
  type FlagGroup,
  HELP_FLAG,
  type HelpRow,
  isFlag,
  rowHelp,
  rowLabel,
  usageForms,
  usageLines,
} from "./help.js";

/**
 * What reads as code in a help text: a span already in backticks, a flag (`--max-reopens=-1`, `-h`),
 * a variable (`$USER`, `PI_TEAMS_ROOT_DIR`), a name with underscores (`task_completed`, `on_idle.sh`).
 */
const CODE = new RegExp(
  [
    "`[^`]+`",
    "(?<![\\w-])--?[a-z][a-z0-9-]*(?:=[^\\s,;)]+)?",
    "\\$[A-Z][A-Z0-9_]*",
    "\\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\\b",
    "\\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?:\\.[a-z]+)*\\b",
  ].join("|"),
  "g",
);

/** Plain text that Markdown would read as markup, escaped. */
function escapeMarkdown(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/\|/g, "\\|")
    .replace(/\*/g, "\\*")
    .replace(/~/g, "\\~")
    .replace(/(^|[^\w])_/g, "$1\\_");
}

/** A help text as one table cell: one line, flags, variables and names as code, nothing else read as markup. */
function cell(text: string): string {
  const line = text.replace(/\s*\n\s*/g, " ");
  let out = "";
  let at = 0;
  for (const match of line.matchAll(CODE)) {
    out += escapeMarkdown(line.slice(at, match.index)) + code(match[0].replace(/^`|`$/g, ""));
    at = match.index + match[0].length;
  }
  return out + escapeMarkdown(line.slice(at));
}

function code(text: string): string {
  return `\`${text.replace(/\|/g, "\\|")}\``;
}

function usageBlock(spec: CommandSpec): string {
  return ["```", ...usageForms(spec).flatMap((form) => usageLines(form, "")), "```"].join("\n");
}

/** The forms that take a flag, as the forms table names them; "" when every form does. */
function formsTaking(spec: CommandSpec, flag: string): string {
  const subs = spec.subcommands ?? [];
  const taking = subs.filter((sub) => sub.flags.includes(flag));
  if (taking.length === subs.length) return "all";
  return taking.map((sub) => code(sub.name || spec.name)).join(", ");
}

function rowCells(spec: CommandSpec, row: HelpRow): string[] {
  const forms = spec.subcommands ? [isFlag(row) ? formsTaking(spec, row.name) : ""] : [];
  return [code(rowLabel(row)), ...forms, cell(rowHelp(row))];
}

function groupRows(spec: CommandSpec, group: FlagGroup): string[][] {
  const width = spec.subcommands ? 2 : 1;
  if (group.home && group.home !== spec.name) {
    const flags = group.rows.map((row) => code(rowLabel(row))).join(", ");
    const label = `${group.title ? `${cell(group.title)}: ` : ""}${flags}`;
    return [[label, ...Array<string>(width - 1).fill(""), `as for [${group.home}](#${group.home})`]];
  }
  const title = group.title ? [[`*${cell(group.title)}*`, ...Array<string>(width).fill("")]] : [];
  return [...title, ...group.rows.map((row) => rowCells(spec, row))];
}

function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** The forms of a command that has several, then its flags (not `--help`, which every command takes). */
function flagsBlock(spec: CommandSpec): string {
  const parts: string[] = [];
  if (spec.subcommands) {
    parts.push(
      table(
        ["form", "what it does"],
        spec.subcommands.map((sub) => [code(sub.term), cell(sub.help)]),
      ),
    );
  }
  const rows = spec.groups.flatMap((group) => groupRows(spec, group));
  const header = spec.subcommands ? ["flag", "forms", "meaning"] : ["flag", "meaning"];
  const none = `No flags but ${code(`-${HELP_FLAG.short ?? "h"}`)}, ${code(`--${HELP_FLAG.name}`)}.`;
  parts.push(rows.length > 0 ? table(header, rows) : none);
  return parts.join("\n\n");
}

function exitBlock(spec: CommandSpec): string {
  return table(
    ["exit", "when"],
    spec.exit.map((e) => [code(String(e.code)), cell(e.when)]),
  );
}

function commandsBlock(commands: readonly CommandSpec[]): string {
  return table(
    ["command", "what it does"],
    commands.map((c) => [`[${code(c.synopsis ?? c.name)}](#${c.name})`, cell(c.summary)]),
  );
}

/** One setting as the settings block shows it (settings/table.ts `settingDocs` makes them). */
export interface SettingDoc {
  name: string;
  /** The flag of `run`, `watch` and `config`; null: none. */
  flag: string | null;
  /** The flag of `policy set` that writes it; null: none. */
  setFlag: string | null;
  /** Its config.json field; null: none. */
  field: string | null;
  env: readonly string[];
  default: string;
  doc: string;
}

/** Every setting, one row each: where it can be given, its default, what it decides. */
function settingsBlock(settings: readonly SettingDoc[]): string {
  const or = (texts: ReadonlyArray<string | null>): string =>
    texts.flatMap((text) => (text === null ? [] : [code(text)])).join(", ") || "-";
  return table(
    ["setting", "flag", "config.json", "environment", "default", "what it decides"],
    settings.map((s) => [
      code(s.name),
      or(s.flag === s.setFlag ? [s.flag] : [s.flag, s.setFlag === null ? null : `policy set ${s.setFlag}`]),
      or([s.field]),
      or(s.env),
      code(s.default),
      cell(s.doc),
    ]),
  );
}

/**
 * Every block docs/cli.md holds, by id: `commands`, and `<command> usage`, `<command> flags`,
 * `<command> exit` for each command, then `settings`: every setting, from the settings table.
 */
export function cliReferenceBlocks(
  commands: readonly CommandSpec[],
  settings: readonly SettingDoc[],
): Map<string, string> {
  const blocks = new Map<string, string>([["commands", commandsBlock(commands)]]);
  for (const spec of commands) {
    blocks.set(`${spec.name} usage`, usageBlock(spec));
    blocks.set(`${spec.name} flags`, flagsBlock(spec));
    blocks.set(`${spec.name} exit`, exitBlock(spec));
  }
  blocks.set("settings", settingsBlock(settings));
  return blocks;
}

const BLOCK = /<!-- generated:cli ([a-z]+(?: [a-z]+)?) -->\n([\s\S]*?)<!-- \/generated -->/g;

interface CliDocUpdate {
  /** The document with every block as the table makes it. */
  text: string;
  /** Blocks whose text differs from the table's, by id (`trust flags`). */
  stale: string[];
  /** Blocks the table makes that the document lacks. */
  missing: string[];
  /** Blocks the document has that the table does not make (a command gone, a typo). */
  unknown: string[];
}

/** `markdown` with each generated block written again from `blocks`, and what differed. */
export function updateCliDoc(markdown: string, blocks: ReadonlyMap<string, string>): CliDocUpdate {
  const stale: string[] = [];
  const unknown: string[] = [];
  const seen = new Set<string>();
  const text = markdown.replace(BLOCK, (whole, id: string, body: string) => {
    const block = blocks.get(id);
    if (block === undefined) {
      unknown.push(id);
      return whole;
    }
    seen.add(id);
    const fresh = `\n${block}\n\n`;
    if (body !== fresh) stale.push(id);
    return `<!-- generated:cli ${id} -->\n${fresh}<!-- /generated -->`;
  });
  const missing = [...blocks.keys()].filter((id) => !seen.has(id));
  return { text, stale, missing, unknown };
}
