/**
 * One command table (cli/commands.ts) makes the parser's options, every `--help` and the reference
 * blocks of docs/cli.md. The committed docs/cli.md holds exactly the blocks the table makes now (a
 * stale one is named by its command); the table is one the parser can take; every help line fits
 * the 100 columns help texts are written for.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { COMMANDS, PROGRAM } from "../../extensions/teams-hooks/cli/commands.js";
import { cliReferenceBlocks, updateCliDoc } from "../../extensions/teams-hooks/text/cli-reference.js";
import { settingDocs } from "../../extensions/teams-hooks/settings/table.js";
import {
  type CommandSpec,
  HELP_WIDTH,
  commandFlags,
  commandHelp,
  mainHelp,
  subcommandHelp,
} from "../../extensions/teams-hooks/text/help.js";

const CLI_MD = path.resolve("docs/cli.md");

describe("docs/cli.md", () => {
  it("holds every block the command table makes, each as the table makes it now (npm run docs:cli writes them)", () => {
    const doc = fs.readFileSync(CLI_MD, "utf8");
    const { text, stale, missing, unknown } = updateCliDoc(doc, cliReferenceBlocks(COMMANDS, settingDocs()));
    const named = stale.map((id) => `the ${id} block`).join(", ");
    expect(stale, `docs/cli.md is stale: ${named} (npm run docs:cli)`).toEqual([]);
    expect(missing, "blocks docs/cli.md lacks").toEqual([]);
    expect(unknown, "blocks in docs/cli.md the table does not make").toEqual([]);
    expect(text).toBe(doc);
  });

  it("a flag's help changed in the table makes its command's block stale, and names it", () => {
    const doc = fs.readFileSync(CLI_MD, "utf8");
    const approve = (spec: CommandSpec): CommandSpec => ({
      ...spec,
      groups: spec.groups.map((g) => ({
        ...g,
        rows: g.rows.map((r) => ("name" in r && r.name === "yes" ? { ...r, help: "approve" } : r)),
      })),
    });
    const changed = COMMANDS.map((c) => (c.name === "trust" ? approve(c) : c));
    const { stale, text } = updateCliDoc(doc, cliReferenceBlocks(changed, settingDocs()));
    expect(stale).toEqual(["trust flags"]);
    expect(text).toContain("| `--yes` | approve |");
  });

  it("a setting's default changed in the settings table makes the settings block stale, and names it", () => {
    const doc = fs.readFileSync(CLI_MD, "utf8");
    const changed = settingDocs().map((s) => (s.name === "maxReopensPerTask" ? { ...s, default: "5" } : s));
    const { stale, text } = updateCliDoc(doc, cliReferenceBlocks(COMMANDS, changed));
    expect(stale).toEqual(["settings"]);
    expect(text).toContain("| `PI_TEAMS_HOOKS_MAX_REOPENS_PER_TASK` | `5` |");
  });

  it("names a block the table no longer makes, and one it makes that the file lacks", () => {
    const doc = fs
      .readFileSync(CLI_MD, "utf8")
      .replace("<!-- generated:cli schema exit -->", "<!-- generated:cli schemas exit -->");
    const { unknown, missing } = updateCliDoc(doc, cliReferenceBlocks(COMMANDS, settingDocs()));
    expect(unknown).toEqual(["schemas exit"]);
    expect(missing).toEqual(["schema exit"]);
  });
});

describe("the command table", () => {
  const flagsOf = (spec: CommandSpec): string[] => commandFlags(spec).map((f) => f.name);

  it.each(COMMANDS.map((c) => [c.name, c] as const))("%s: no flag or short letter twice", (_name, spec) => {
    const names = flagsOf(spec);
    const shorts = commandFlags(spec).flatMap((f) => (f.short ? [f.short] : []));
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
    expect(shorts.filter((s, i) => shorts.indexOf(s) !== i)).toEqual([]);
  });

  const withForms = COMMANDS.filter((c) => c.subcommands).map((c) => [c.name, c] as const);
  it.each(withForms)("%s: each form takes only flags of its command", (_name, spec) => {
    const names = new Set(flagsOf(spec));
    const strays = (spec.subcommands ?? []).flatMap((sub) =>
      sub.flags.filter((f) => !names.has(f)).map((f) => `${sub.name || spec.name}: --${f}`),
    );
    expect(strays).toEqual([]);
    // Every flag but --help belongs to some form: a flag no form takes would always be refused.
    const taken = new Set((spec.subcommands ?? []).flatMap((sub) => sub.flags));
    expect([...names].filter((n) => n !== "help" && !taken.has(n))).toEqual([]);
  });

  const every = COMMANDS.map((c) => [c.name, c] as const);
  it.each(every)("%s: --help names every flag its parser takes, in 100 columns but for examples", (_name, spec) => {
    const help = commandHelp(spec);
    for (const flag of commandFlags(spec)) {
      expect(help).toMatch(new RegExp(`^ {2}${flag.short ? `-${flag.short}, ` : ""}--${flag.name}\\b`, "m"));
    }
    const examples = new Set((spec.examples ?? []).map((e) => `  ${e}`));
    const subs = (spec.subcommands ?? []).map((sub) => subcommandHelp(spec, sub.name.split(" ")) ?? "");
    const wide = [help, ...subs]
      .flatMap((text) => text.split("\n"))
      .filter((line) => line.length > HELP_WIDTH && !examples.has(line));
    expect(wide).toEqual([]);
  });

  it("the command list names every command with its summary, in 100 columns", () => {
    const help = mainHelp(PROGRAM, COMMANDS);
    const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    for (const spec of COMMANDS) {
      const start = literal(spec.summary.split(" ").slice(0, 3).join(" "));
      expect(help).toMatch(new RegExp(`^ {2}${literal(spec.synopsis ?? spec.name)} +${start}`, "m"));
    }
    expect(help.split("\n").filter((line) => line.length > HELP_WIDTH)).toEqual([]);
  });
});
