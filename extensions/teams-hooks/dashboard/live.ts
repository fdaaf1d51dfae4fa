/**
 * Live updates: server-sent events of each new run, fed by `logs --follow`'s code (logs/follow.ts
 * `followLogs`: the team watcher the leader uses, plus a rescan every 2 seconds for what a watcher
 * misses), never by polling every file. One follower per team while anyone listens to it; each
 * stream gets the runs its filter keeps, as the table row the runs page prints.
 *
 * A stream is `retry: 2000`, then `event: run` / `data: {"team", "name", "html"}` per run, a comment
 * every 15 s to keep proxies from closing it, and `event: bye` when the server stops.
 */
import type { ServerResponse } from "node:http";
import { describeError } from "../contract/errors.js";
import type { LogFilter } from "../logs/filter.js";
import { recordMatches } from "../logs/filter.js";
import { followLogs } from "../logs/follow.js";
import { type LogRow, listLogFiles } from "../logs/query.js";
import { runRowHtml, timeOfRow } from "./runs.js";
import type { TeamRef } from "./teams.js";

/** Streams open at once, for all viewers: one more is refused (503) rather than starving the server. */
export const MAX_STREAMS = 64;
const KEEPALIVE_MS = 15_000;
/** The rescan behind the watcher: a listing of every log name, so not every second; still within the 2 s a viewer waits at most. */
const RESCAN_MS = 2_000;

interface Listener {
  filter: LogFilter;
  res: ServerResponse;
}

interface Follower {
  listeners: Set<Listener>;
  stop: () => void;
  done: Promise<void>;
}

export class LiveHub {
  readonly #followers = new Map<string, Follower>();
  readonly #streams = new Set<ServerResponse>();
  readonly #warn: (message: string) => void;
  #closed = false;

  constructor(warn: (message: string) => void) {
    this.#warn = warn;
  }

  get streams(): number {
    return this.#streams.size;
  }

  /** Sends each new run of `teams` that `filter` keeps to `res`, until the client goes or the hub closes. False when full. */
  open(res: ServerResponse, teams: readonly TeamRef[], filter: LogFilter): boolean {
    if (this.#closed || this.#streams.size >= MAX_STREAMS) return false;
    // The viewer left while the teams were listed: its "close" has fired and will not again, so a stream
    // opened now would never end (a follower rescanning, a keep-alive timer holding a stopping server).
    if (res.destroyed || res.writableEnded) return true;
    res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" });
    res.write("retry: 2000\n\n");
    this.#streams.add(res);
    const listener: Listener = { filter, res };
    const joined = teams.map((team) => this.#join(team, listener));
    const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), KEEPALIVE_MS);
    res.on("close", () => {
      clearInterval(keepAlive);
      this.#streams.delete(res);
      for (const leave of joined) leave();
    });
    return true;
  }

  #join(team: TeamRef, listener: Listener): () => void {
    let follower = this.#followers.get(team.dir);
    if (!follower) {
      follower = this.#follow(team);
      this.#followers.set(team.dir, follower);
    }
    follower.listeners.add(listener);
    const joined = follower;
    return () => {
      joined.listeners.delete(listener);
      if (joined.listeners.size === 0 && this.#followers.get(team.dir) === joined) {
        this.#followers.delete(team.dir);
        joined.stop();
      }
    };
  }

  #follow(team: TeamRef): Follower {
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const listeners = new Set<Listener>();
    const send = (row: LogRow): void => {
      const message = JSON.stringify({ team: team.name, name: row.name, html: runRowHtml({ team: team.name, timeMs: timeOfRow(row), row }).text });
      for (const l of listeners) if (recordMatches(row.record, l.filter)) l.res.write(`event: run\ndata: ${message}\n\n`);
    };
    const done = (async () => {
      // What is there now is not news: only names that land after this listing are sent.
      const seen = (await listLogFiles(team.dir).catch(() => [])).map((e) => e.name);
      await followLogs(team.dir, { filter: {}, seen, onRow: send, onProblem: () => undefined, onWarning: (m) => this.#warn(`live updates of team ${team.name}: ${m}`), stop: stopped, rescanMs: RESCAN_MS });
    })().catch((error: unknown) => this.#warn(`live updates of team ${team.name} stopped: ${describeError(error)}`));
    return { listeners, stop, done };
  }

  /** Ends every stream (`event: bye`) and stops every follower. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const res of this.#streams) res.end("event: bye\ndata: {}\n\n");
    const followers = [...this.#followers.values()];
    this.#followers.clear();
    for (const f of followers) f.stop();
    await Promise.all(followers.map((f) => f.done));
  }
}
