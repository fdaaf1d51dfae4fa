/**
 * Live updates: server-sent events of each new run, fed by `logs --follow`'s code (logs/follow.ts
 * `followLogs`: the team watcher the leader uses, plus a listing every 2 seconds for what a watcher
 * misses), never by polling every file. One follower per team while anyone listens to it; each
 * stream gets the runs its filter keeps, each as the data of its row in the runs table.
 *
 * A stream is `retry: 2000`, then per run `id: <ms>~<team>~<name URL-encoded>` / `event: run` /
 * `data: {…}` (the row as data: runs.ts `runRowData`; the page builds the row from it, and no field
 * is markup), a comment every 15 s to keep proxies from closing it, and `event: bye` with
 * `data: {"why": "stopping"}` when the server stops or `{"why": "access"}` when the viewer's key may
 * no longer look (`endUnless`). No field of an event holds a line break: a log's file name, which
 * an agent chooses, is URL-encoded in the id and JSON-escaped in the data. A stream opened with a
 * run's id (`Last-Event-ID` on a reconnect, `after=` from the page) first gets the runs its filter
 * keeps that are newer than it, so nothing that landed while the page loaded or the connection was
 * down is missed.
 *
 * Bounds: 64 streams in all, 16 per key. What waits for a viewer is bounded twice (a viewer that
 * stops reading costs the server at most 512 KiB and one message, kernel included):
 *
 *   written, not yet read      at most 256 KiB, counting what this machine's kernel holds for the
 *                              connection (backlog.ts, on Linux): each stream counts what it writes;
 *                              once the next message would pass the bound, messages wait in the
 *                              stream while the kernel's queues are read, and the count starts
 *                              again from what is found there (and in the process)
 *   waiting in the stream      at most 256 KiB: one more message and the stream is cut (the page
 *                              reconnects and catches up); they are written as the viewer reads,
 *                              looked for after 25 ms, then less often while nothing moves (1 s)
 */
import { existsSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { HooksError, describeError } from "../contract/errors.js";
import { type LogFilter, recordMatches } from "../logs/filter.js";
import { followLogs } from "../logs/follow.js";
import { type LogRow, queryLogs } from "../logs/query.js";
import { listHookLogNames } from "../logs/hook-log.js";
import { hookLogsDir } from "../team/paths.js";
import { ConnectionTables, kernelBacklog } from "./backlog.js";
import { type Cursor, type RunRow, cursorOf, newerCursorFirst, runRowData, shownRow } from "./runs.js";
import { MAX_WRITTEN_LOG_BYTES } from "../logs/hook-log.js";
import type { LogIndex } from "../logs/log-index.js";
import type { TeamRef } from "./teams.js";

/** Streams open at once, for all viewers: one more is refused (503) rather than starving the server. */
const MAX_STREAMS = 64;
/** Streams one key may hold (a viewer without a key, on loopback, has only the overall cap). */
const MAX_STREAMS_PER_KEY = 16;
const KEEPALIVE_MS = 15_000;
/** The listing behind the watcher: every log name, so not every second; still within the 2 s a viewer waits at most. */
const RESCAN_MS = 2_000;
/**
 * What may be written ahead of a viewer, counting what the kernel holds, and what may wait in its
 * stream besides: past that, the stream is cut (it reconnects and catches up).
 */
const MAX_WAITING_BYTES = 256 * 1024;
/** What HTTP's chunked encoding adds to each write, at most (`<hex size>\r\n…\r\n`). */
const CHUNK_FRAMING_BYTES = 12;
/** How soon a stream with messages waiting looks at what the viewer has read; doubled while nothing moves. */
const RECOUNT_FIRST_MS = 25;
const RECOUNT_MAX_MS = 1_000;
/** The kernel's tables, read once for every stream a read can answer for. */
const TABLES = new ConnectionTables();
/** Runs sent to catch a stream up, at most: a longer gap is what a reload is for. */
const CATCH_UP_RUNS = 200;

/** Who opened a stream, and what it watches: checked again while it is open (`endUnless`). */
interface StreamAccess {
  /** The id of the key it was opened with (`pth_<id>`), the key's name; null without a key (loopback). */
  keyId: string | null;
  keyName: string | null;
  /** The teams it watches. */
  teams: readonly string[];
  /** The session cookie's value it was opened with; null for a bearer key or none. */
  session: string | null;
}

interface Stream {
  filter: LogFilter;
  /** The teams whose runs it gets without what their gates said (teams.ts `TeamRef.withheld`). */
  withheld: ReadonlySet<string>;
  res: ServerResponse;
  access: StreamAccess;
  timer: NodeJS.Timeout;
  /** Bytes written that the viewer may not have read, at most: the last count, plus what was written since. */
  unconfirmed: number;
  /** When it was last written to (`performance.now()`): a count must look at the kernel after that. */
  lastWriteMs: number;
  /** Messages waiting to be written, and their bytes. */
  held: Array<{ text: string; bytes: number }>;
  heldBytes: number;
  /** A count is under way, or `recount` is the timer of the next. */
  counting: boolean;
  recount: NodeJS.Timeout | null;
  recountMs: number;
}

interface Follower {
  streams: Set<Stream>;
  stop: () => void;
  done: Promise<void>;
}

export class LiveHub {
  readonly #followers = new Map<string, Follower>();
  readonly #streams = new Set<Stream>();
  readonly #warn: (message: string) => void;
  #closed = false;

  readonly #index: LogIndex | null;

  /** `index`: the server's index of the logs, which a stream's catch-up reads through (else the folder itself). */
  constructor(warn: (message: string) => void, index: LogIndex | null = null) {
    this.#warn = warn;
    this.#index = index;
  }

  /** Whether one more stream may open for the key named `key`. */
  hasRoom(key: string | null): boolean {
    if (this.#closed || this.#streams.size >= MAX_STREAMS) return false;
    return key === null || [...this.#streams].filter((s) => s.access.keyName === key).length < MAX_STREAMS_PER_KEY;
  }

  /** The ids of the keys open streams were opened with. */
  keyIds(): Set<string> {
    const ids = new Set<string>();
    for (const s of this.#streams) if (s.access.keyId !== null) ids.add(s.access.keyId);
    return ids;
  }

  /** Ends (`event: bye`, why `access`) every stream whose access `allowed` no longer grants; returns how many. */
  endUnless(allowed: (access: StreamAccess) => boolean): number {
    let ended = 0;
    for (const s of [...this.#streams]) {
      if (allowed(s.access)) continue;
      ended += 1;
      this.#streams.delete(s);
      end(s, "access");
    }
    return ended;
  }

  /**
   * Sends each new run of `teams` that `filter` keeps to `res` (after the ones newer than `after`),
   * until the client goes or the hub closes. False when there is no room (`hasRoom`).
   */
  async open(
    res: ServerResponse,
    input: {
      teams: readonly TeamRef[];
      filter: LogFilter;
      access: StreamAccess;
      after: Cursor | null;
      headers: Record<string, string>;
    },
  ): Promise<boolean> {
    if (!this.hasRoom(input.access.keyName)) return false;
    // The viewer left while the teams were listed: its "close" has fired and will not again, so a stream
    // opened now would never end (a follower rescanning, a keep-alive timer holding a stopping server).
    if (res.destroyed || res.writableEnded) return true;
    res.writeHead(200, {
      ...input.headers,
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Accel-Buffering": "no",
    });
    const stream: Stream = {
      filter: input.filter,
      withheld: new Set(input.teams.filter((t) => t.withheld).map((t) => t.name)),
      res,
      access: input.access,
      timer: setInterval(() => send(stream, ": keep-alive\n\n"), KEEPALIVE_MS),
      unconfirmed: 0,
      lastWriteMs: 0,
      held: [],
      heldBytes: 0,
      counting: false,
      recount: null,
      recountMs: RECOUNT_FIRST_MS,
    };
    send(stream, "retry: 2000\n\n");
    this.#streams.add(stream);
    const joined = input.teams.map((team) => this.#join(team, stream));
    res.on("close", () => {
      clearInterval(stream.timer);
      if (stream.recount !== null) clearTimeout(stream.recount);
      this.#streams.delete(stream);
      for (const leave of joined) leave();
    });
    if (input.after) await this.#catchUp(stream, input.teams, input.after);
    return true;
  }

  /** The runs newer than `after` that the stream's filter keeps, oldest first (the page puts each on top). */
  async #catchUp(stream: Stream, teams: readonly TeamRef[], after: Cursor): Promise<void> {
    const rows: RunRow[] = [];
    for (const team of teams) {
      // Through the index when there is one: a hundred pages opening at once list the folder once, not each.
      const filter = { ...stream.filter, sinceMs: Math.max(stream.filter.sinceMs ?? 0, after.timeMs) };
      const query = { filter, limit: CATCH_UP_RUNS, onProblem: () => undefined };
      const { rows: found } = this.#index
        ? await this.#index.query(team.dir, query)
        : await queryLogs(team.dir, { ...query, maxBytes: MAX_WRITTEN_LOG_BYTES, inSlices: true });
      for (const row of found) {
        const r = shownRow(team, row);
        if (newerCursorFirst(cursorOf(r), after) < 0) rows.push(r);
      }
    }
    rows.sort((a, b) => newerCursorFirst(cursorOf(b), cursorOf(a))); // oldest first: the page puts each on top
    for (const r of rows.slice(-CATCH_UP_RUNS)) send(stream, runMessage(r));
  }

  #join(team: TeamRef, stream: Stream): () => void {
    let follower = this.#followers.get(team.dir);
    if (!follower) {
      follower = this.#follow(team);
      this.#followers.set(team.dir, follower);
    }
    follower.streams.add(stream);
    const joined = follower;
    return () => {
      joined.streams.delete(stream);
      if (joined.streams.size === 0 && this.#followers.get(team.dir) === joined) {
        this.#followers.delete(team.dir);
        joined.stop();
      }
    };
  }

  #follow(team: TeamRef): Follower {
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    let ended = false;
    void stopped.then(() => (ended = true));
    const streams = new Set<Stream>();
    const onRow = (row: LogRow): void => {
      // One message for the streams that see what the gate said, one for those it is withheld from.
      const messages = new Map<boolean, string>();
      for (const s of streams) {
        if (!recordMatches(row.record, s.filter)) continue;
        const withheld = s.withheld.has(team.name);
        let message = messages.get(withheld);
        if (message === undefined) {
          message = runMessage(shownRow({ name: team.name, dir: team.dir, withheld }, row));
          messages.set(withheld, message);
        }
        send(s, message);
      }
    };
    // A folder that is not there yet is waited for, not reported: most teams start without logs.
    const onWarning = (m: string): void => {
      if (existsSync(hookLogsDir(team.dir))) this.#warn(`live updates of team ${team.name}: ${m}`);
    };
    const done = (async () => {
      // What is there now is not news: only names that land after this listing are sent. A listing that
      // fails is tried again (as the empty list it would be, it would send every log as new).
      let seen: string[] | null = null;
      while (seen === null && !ended) {
        seen = await listHookLogNames(team.dir, { inSlices: true }).catch(() => null);
        if (seen === null) await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, RESCAN_MS))]);
      }
      if (ended || seen === null) return;
      await followLogs(team.dir, {
        filter: {},
        seen,
        onRow,
        onProblem: () => undefined,
        onWarning,
        stop: stopped,
        rescanMs: RESCAN_MS,
        createDir: false,
        maxBytes: MAX_WRITTEN_LOG_BYTES,
      });
    })().catch((error: unknown) => this.#warn(`live updates of team ${team.name} stopped: ${describeError(error)}`));
    return { streams, stop, done };
  }

  /** Ends every stream (`event: bye`) and stops every follower. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const s of this.#streams) end(s, "stopping");
    const followers = [...this.#followers.values()];
    this.#followers.clear();
    for (const f of followers) f.stop();
    await Promise.all(followers.map((f) => f.done));
  }
}

function runMessage(r: RunRow): string {
  const data = runRowData(r);
  return eventText({ id: data.cursor, event: "run", data });
}

/**
 * One server-sent event. A line break in `id` or `event` would end that field and begin another
 * (a forged event): they are made of names and URL-encoded text, and one that is not is a bug here.
 * `data` is JSON, which escapes every line break.
 */
export function eventText(fields: { id?: string; event: string; data: unknown }): string {
  for (const value of [fields.id ?? "", fields.event]) {
    if (/[\r\n\0]/.test(value)) {
      throw new HooksError("E_INTERNAL", `a server-sent event's field holds a line break: ${JSON.stringify(value)}`);
    }
  }
  const id = fields.id === undefined ? "" : `id: ${fields.id}\n`;
  return `${id}event: ${fields.event}\ndata: ${JSON.stringify(fields.data)}\n\n`;
}

/** Ends a stream with `event: bye` (why: the server stops, or the viewer may no longer look). */
function end(stream: Stream, why: "stopping" | "access"): void {
  clearInterval(stream.timer);
  if (stream.recount !== null) clearTimeout(stream.recount);
  stream.held = [];
  if (!stream.res.writableEnded && !stream.res.destroyed) stream.res.end(eventText({ event: "bye", data: { why } }));
}

/**
 * Writes to a stream that is still open, or keeps the message until its viewer has read enough;
 * a viewer that lets more wait than the bounds allow (see the header) is cut (it reconnects).
 */
function send(stream: Stream, text: string): void {
  const { res } = stream;
  if (res.writableEnded || res.destroyed) return;
  const bytes = Buffer.byteLength(text) + CHUNK_FRAMING_BYTES;
  if (stream.held.length === 0 && stream.unconfirmed + bytes <= MAX_WAITING_BYTES) {
    write(stream, text, bytes);
    return;
  }
  stream.held.push({ text, bytes });
  stream.heldBytes += bytes;
  if (stream.heldBytes > MAX_WAITING_BYTES) res.destroy();
  else if (!stream.counting) void recount(stream);
}

function write(stream: Stream, text: string, bytes: number): void {
  stream.res.write(text);
  stream.unconfirmed += bytes;
  stream.lastWriteMs = performance.now();
}

/** Counts what the viewer has not read yet, writes what now fits, and looks again later while messages wait. */
async function recount(stream: Stream): Promise<void> {
  const { res } = stream;
  stream.counting = true;
  stream.recount = null;
  const socket = res.socket;
  const kernel = socket ? await kernelBacklog(socket, TABLES, stream.lastWriteMs).catch(() => null) : 0;
  if (res.writableEnded || res.destroyed) return;
  // Unknown (not Linux): what waits in the process only.
  stream.unconfirmed = res.writableLength + (kernel ?? 0);
  let wrote = false;
  for (let next = stream.held[0]; next !== undefined; next = stream.held[0]) {
    if (stream.unconfirmed + next.bytes > MAX_WAITING_BYTES) break;
    stream.held.shift();
    stream.heldBytes -= next.bytes;
    write(stream, next.text, next.bytes);
    wrote = true;
  }
  stream.recountMs = wrote ? RECOUNT_FIRST_MS : Math.min(stream.recountMs * 2, RECOUNT_MAX_MS);
  if (stream.held.length === 0) {
    stream.counting = false;
    return;
  }
  stream.recount = setTimeout(() => void recount(stream), stream.recountMs);
}
