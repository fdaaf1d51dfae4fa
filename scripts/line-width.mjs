// Part of `npm run lint`: fails, naming file:line, on any source line over MAX_WIDTH characters.
// The formatter keeps code within the width but leaves comments and literals as they are: a
// line is judged without its string, template and regular-expression literals, never split. The
// sources checked are those the formatter formats (biome.json "files"): every .ts/.mts/.js/.mjs in
// extensions/, test/ (fixtures included: they are code), bench/, scripts/, hooks/, examples/ and
// vitest.config.ts. None of these is vendored
// or generated (the build writes to dist/, which git ignores); data fixtures (.json, .sh) are not source.
// Width is counted in Unicode code points, so `→` is one character.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const MAX_WIDTH = 120;
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const FOLDERS = ["extensions", "test", "bench", "scripts", "hooks", "examples"];
const SOURCE = /\.(ts|mts|js|mjs)$/;

/** The source files, relative to ROOT: tracked ones and new ones git does not ignore. */
export function sourceFiles() {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", ...FOLDERS], {
    cwd: ROOT,
    encoding: "utf8",
  });
  const files = out.split("\0").filter((f) => SOURCE.test(f));
  return [...new Set([...files, "vitest.config.ts"])].sort();
}

/** Width of a line in characters (code points). */
export function width(line) {
  let n = 0;
  for (const _ of line) n++;
  return n;
}

/**
 * The line with its string, template and regular-expression literals emptied: what is left is what
 * the width rule judges. A message, a test title or a pattern stays whole on its line however long it
 * is, so that grep finds what a user quotes.
 */
export function withoutLiterals(line) {
  return line
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`/g, '""')
    .replace(/(^|[(,=:[!&|?{};]|return)\s*\/(?![/*])(?:[^/\\\n[]|\\.|\[(?:[^\]\\]|\\.)*\])+\/[a-z]*/g, "$1 /x/");
}

/** The lines of `text` over MAX_WIDTH once their literals are set aside, as 1-based line numbers with their width. */
export function longLines(text) {
  const lines = text.split("\n");
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    const w = width(lines[i]);
    if (w > MAX_WIDTH && width(withoutLiterals(lines[i])) > MAX_WIDTH) found.push({ line: i + 1, width: w });
  }
  return found;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let count = 0;
  const files = sourceFiles();
  for (const file of files) {
    let text;
    try {
      text = readFileSync(path.join(ROOT, file), "utf8");
    } catch (error) {
      if (error.code === "ENOENT") continue; // deleted in the work tree, not yet in the index
      throw error;
    }
    for (const { line, width: w } of longLines(text)) {
      console.error(`${file}:${line}: ${w} characters (at most ${MAX_WIDTH})`);
      count++;
    }
  }
  if (count > 0) {
    console.error(
      `line-width: ${count} line(s) over ${MAX_WIDTH} characters: shorten them (literals are never counted)`,
    );
    process.exit(1);
  }
  console.log(`line-width: ${files.length} files, no line over ${MAX_WIDTH} characters`);
}
