// `--help` (or `-h`) for every bench: prints the opening comment of the bench that was started (its options and
// how to run it) and exits, before the bench does anything. Imported first by each bench.
import { readFileSync } from "node:fs";

/** The opening `//` comment of `file`, after its `#!` line. */
export function openingComment(file) {
  const lines = readFileSync(file, "utf8").split("\n");
  const comment = [];
  for (const line of lines.slice(lines[0]?.startsWith("#!") ? 1 : 0)) {
    if (!line.startsWith("//")) break;
    comment.push(line.replace(/^\/\/ ?/, ""));
  }
  return comment.join("\n");
}

if (process.argv[1] && process.argv.slice(2).some((arg) => arg === "--help" || arg === "-h")) {
  console.log(openingComment(process.argv[1]));
  process.exit(0);
}
