/**
 * docs/contract-changelog.md keeps up with docs/hook-contract.md: every name in the first column of
 * the contract's tables of events, variables, keys, fields, headers, placeholders and limits is in
 * the changelog (in backticks), with the release that brought it; the changelog says how an
 * addition is made.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ContextDocumentSchema } from "../../extensions/teams-hooks/contract/contract.js";

const CONTRACT = fs.readFileSync(path.resolve("docs/hook-contract.md"), "utf8");
const CHANGELOG = fs.readFileSync(path.resolve("docs/contract-changelog.md"), "utf8");

/** The headings of a table's first column that list names of the contract. */
const NAME_COLUMNS = new Set(["event", "variable", "key", "field", "header", "placeholder", "`hooks.limits` field"]);

/** Every backticked name in the first column of such a table, in order, each once. */
function documentedNames(markdown: string): string[] {
  const lines = markdown.split("\n");
  const names: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (!line.startsWith("|") || (lines[i - 1] ?? "").startsWith("|")) continue;
    const heading = line.split("|")[1]?.trim() ?? "";
    for (i += 2; i < lines.length && (lines[i] ?? "").startsWith("|"); i++) {
      if (!NAME_COLUMNS.has(heading)) continue;
      const first = (lines[i] ?? "").split("|")[1] ?? "";
      for (const [, name] of first.matchAll(/`([^`]+)`/g)) if (name && !names.includes(name)) names.push(name);
    }
  }
  return names;
}

describe("docs/contract-changelog.md", () => {
  const names = documentedNames(CONTRACT);

  it("finds the contract's names (the tables are read)", () => {
    expect(names).toEqual(
      expect.arrayContaining(["task_started", "PI_TEAMS_HOOK_RUN_ID", "X-Pi-Teams-Hook-Event", "{{runId}}"]),
    );
    expect(names.length).toBeGreaterThan(60);
  });

  it("names every event, variable, key, field, header, placeholder and limit of hook-contract.md", () => {
    const missing = names.filter((name) => !CHANGELOG.includes(`\`${name}\``));
    expect(
      missing,
      `add these to docs/contract-changelog.md, each with the release and commit that brought it`,
    ).toEqual([]);
  });

  it("names every key of the context document (the schema's, optional ones included)", () => {
    const keys = Object.keys(ContextDocumentSchema.shape);
    expect(keys).toContain("work");
    expect(keys.filter((key) => !CHANGELOG.includes(`\`${key}\``))).toEqual([]);
  });

  it("says the rule for adding one, and which release each landed in", () => {
    expect(CHANGELOG).toContain("## How an addition is made");
    expect(CHANGELOG).toMatch(/^## 0\.1\.0 /m);
    const version = (JSON.parse(fs.readFileSync(path.resolve("package.json"), "utf8")) as { version: string }).version;
    expect(CHANGELOG).toContain(`## ${version} `);
  });
});
