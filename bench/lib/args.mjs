// A bench's command line: node:util's parseArgs, with `--help` (the file's opening comment, which lists the
// options) and a one-line error for an option it does not know, in place of a stack trace.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { openingComment } from "./help.mjs";

/** Parses `process.argv` with `config`, for the bench at `moduleUrl` (its `import.meta.url`). */
export function benchArgs(moduleUrl, config) {
  const file = fileURLToPath(moduleUrl);
  const name = `bench/${path.basename(file)}`;
  if (process.argv.slice(2).some((arg) => arg === "--help" || arg === "-h")) {
    console.log(openingComment(file));
    process.exit(0);
  }
  try {
    return parseArgs(config);
  } catch (error) {
    console.error(`${name}: ${error.message.split(". ")[0]}; --help lists the options`);
    process.exit(2);
  }
}
