#!/usr/bin/env node
/**
 * Refreshes test/helpers/file-durations.json (the order the sequencer starts test files in) from the
 * durations vitest kept of the last whole run in this checkout (node_modules/.vite/vitest/…/results.json),
 * and prints the slowest files. Run it right after a whole `npm test`, best on a quiet machine (the
 * order matters, not the seconds):
 *
 *   npm test && node test/helpers/file-durations.mjs
 *
 * A file of the last run that failed keeps its listed duration (a failure may end a file early).
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const cacheDir = path.join(root, "node_modules", ".vite", "vitest");
const target = path.join(here, "file-durations.json");

const found = existsSync(cacheDir) ? readdirSync(cacheDir) : [];
const runs = found.map((d) => path.join(cacheDir, d, "results.json")).filter(existsSync);
if (runs.length !== 1) {
  console.error(`expected one vitest results file under ${cacheDir}, found ${runs.length}: run the whole suite first`);
  process.exit(1);
}
const { results } = JSON.parse(readFileSync(runs[0], "utf8"));
const old = existsSync(target) ? JSON.parse(readFileSync(target, "utf8")).seconds : {};
const seconds = {};
for (const [key, { duration, failed }] of results) {
  const file = key.slice(key.indexOf(":") + 1);
  if (!existsSync(path.join(root, file))) continue; // removed since
  const value = failed && old[key] !== undefined ? old[key] : Math.round(duration / 100) / 10;
  seconds[key] = value;
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)));
const note = "Seconds per file, last whole run measured (docs/performance.md); node test/helpers/file-durations.mjs";
writeFileSync(target, `${JSON.stringify({ note, seconds: sorted }, null, 2)}\n`);
const total = Object.values(sorted).reduce((a, b) => a + b, 0);
console.log(`${Object.keys(sorted).length} files, ${total.toFixed(1)} s in all; the slowest ten:`);
for (const [key, value] of Object.entries(sorted).slice(0, 10)) {
  console.log(`${value.toFixed(1).padStart(6)} s  ${key}`);
}
