#!/usr/bin/env -S node --min-semi-space-size=2 --max-semi-space-size=2 --optimize-for-size --v8-pool-size=1
// The flags keep a long-running leader small (docs/performance.md, "Memory"): a 2 MB semi-space stops
// the start-up scan of a large task list from growing V8's young generation to its maximum for good
// (and starting at those 2 MB, not growing to them, spares a start some 5 ms of collections),
// --optimize-for-size makes the old generation grow less eagerly between collections (without it
// the heap doubles over a few hundred events, all of it garbage), and one V8 worker thread instead of
// four leaves fewer thread stacks and malloc arenas (peak RSS after 200 events 76–78 → 73–75 MB;
// bursts no slower). None costs measurable time.
import { main } from "./cli/main.js";
import { createRuntime } from "./runner/runtime.js";

// A reader that goes away (`… | head`) is not an error of ours: stop quietly, as other tools do.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

let requestStop: (signal: string) => void = () => {};
const stopSignal = new Promise<string>((resolve) => (requestStop = resolve));
let stops = 0;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    stops += 1;
    // A second signal means "now": end every hook's process group (they live in their own groups,
    // so nothing else would), then go.
    if (stops > 1) {
      void import("./runner/run-hook.js").then((run) => run.terminateAllRuns()).finally(() => process.exit(130));
    }
    requestStop(signal);
  });
}

/** A question to the person at the terminal (only when there is one): one line of answer. */
async function ask(question: string): Promise<string | null> {
  const { createInterface } = await import("node:readline");
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  try {
    return await new Promise<string | null>((resolve) => {
      rl.once("close", () => resolve(null));
      rl.question(question, (answer) => resolve(answer));
    });
  } finally {
    rl.close();
  }
}

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  isTTY: Boolean(process.stdout.isTTY),
  ...(process.stdout.isTTY ? { columns: process.stdout.columns } : {}),
  stderrIsTTY: Boolean(process.stderr.isTTY),
  stopSignal,
  ...(process.stdin.isTTY && process.stderr.isTTY ? { ask } : {}),
  // The one place the test pause is read (docs/decisions/test-pause.md): never set in use.
  runtime: createRuntime({ testPause: process.env.PI_TEAMS_HOOKS_TEST_PAUSE_DIR || null }),
});
// Signal listeners keep nothing alive, but a finished command should not wait for a stray timer.
process.removeAllListeners("SIGINT");
process.removeAllListeners("SIGTERM");
