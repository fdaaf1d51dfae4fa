/**
 * A thread of a server (`serve`) that reads many logs for the log index (logs/log-index.ts) and
 * answers with their facts alone: opening, parsing and checking 100,000 files, and collecting what
 * that leaves behind, happen here, not on the event loop that answers requests. Given
 * `{ dir, names, maxBytes, last }` parts, it reads them as logs/query.ts `readCandidates` does and posts what it
 * read in batches, each saying how many of the names are done, then ends.
 */
import { parentPort } from "node:worker_threads";
import { type LogFacts, factsOf } from "./filter.js";
import type { HookLogProblem } from "./hook-log.js";
import { readCandidates } from "./query.js";

/** One log read: its facts (as an index keeps them), or why it could not be read. */
export type FactsRead = { name: string; facts: LogFacts } | { problem: HookLogProblem };

/** What the index asks: names to read, in parts (`last` on the last part). */
export interface FactsRequest {
  dir: string;
  names: string[];
  maxBytes: number;
  last: boolean;
}

/** A batch read: `upTo` names of the request done (a file that vanished is done and not in `read`). */
export interface FactsMessage {
  read: FactsRead[];
  upTo: number;
}

/** Logs per message: a few milliseconds of the event loop to take in. */
const BATCH = 256;

const port = parentPort;
if (port) {
  // The names come in parts, read in turn; the thread ends after the last.
  let done = 0;
  let reading: Promise<void> = Promise.resolve();
  port.on("message", (request: FactsRequest) => {
    reading = reading.then(async () => {
      const { dir, names, maxBytes } = request;
      for (let from = 0; from < names.length; from += BATCH) {
        const read: FactsRead[] = [];
        await readCandidates(
          dir,
          names.slice(from, from + BATCH).map((name) => ({ name, timeMs: 0 })),
          (problem) => read.push({ problem }),
          (row) => read.push({ name: row.name, facts: factsOf(row.record, true) }),
          maxBytes,
        );
        done += Math.min(BATCH, names.length - from);
        port.postMessage({ read, upTo: done } satisfies FactsMessage);
      }
      if (request.last) port.close();
    });
  });
}
