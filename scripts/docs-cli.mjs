#!/usr/bin/env node
// Writes the generated blocks of docs/cli.md (the command list; each command's usage, forms and
// flags, exit statuses; the settings) from the command table, extensions/teams-hooks/cli/commands.ts,
// and the settings table, extensions/teams-hooks/settings/table.ts, as built in dist/. The prose
// between the blocks is left as it is.
//
//   npm run docs:cli            build, then write the blocks
//   node scripts/docs-cli.mjs --check    only say which blocks are stale (exit 1 if any)
//
// test/unit/cli-docs.test.ts makes the same blocks from the TypeScript and fails when the committed
// file differs.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist", "teams-hooks");
const load = async (module) => {
  try {
    return await import(pathToFileURL(path.join(dist, module)).href);
  } catch (error) {
    console.error(`docs-cli: cannot load ${path.join(dist, module)} (npm run build first): ${error.message}`);
    process.exit(2);
  }
};
const { COMMANDS } = await load("cli/commands.js");
const { cliReferenceBlocks, updateCliDoc } = await load("text/cli-reference.js");
const { settingDocs } = await load("settings/table.js");

const file = path.join(root, "docs", "cli.md");
const check = process.argv.includes("--check");
const before = readFileSync(file, "utf8");
const { text, stale, missing, unknown } = updateCliDoc(before, cliReferenceBlocks(COMMANDS, settingDocs()));

for (const id of unknown) {
  console.error(`docs/cli.md: block "${id}" is not made by the command table (a command gone, or its marker mistyped)`);
}
for (const id of missing) {
  console.error(`docs/cli.md: no block "${id}": add <!-- generated:cli ${id} --> … <!-- /generated --> where it goes`);
}
if (check) {
  for (const id of stale) console.error(`docs/cli.md: block "${id}" is stale (npm run docs:cli)`);
} else if (text !== before) {
  writeFileSync(file, text);
  console.log(`docs/cli.md: wrote ${stale.length} block(s): ${stale.join(", ")}`);
} else {
  console.log("docs/cli.md: every block is up to date");
}
process.exitCode = unknown.length > 0 || missing.length > 0 || (check && stale.length > 0) ? 1 : 0;
