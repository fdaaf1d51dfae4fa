/**
 * What the leader (or `run --apply-policy`) told whom: `hook-state/sent.jsonl`, one line per step of
 * each message, so that a nudge, an assignment or a note to the lead goes out once per event, even
 * after a crash, a retry, or a worker that has already read its inbox and rewritten it without our
 * fields (real workers drop message fields they do not know when they pop their inbox, so the inbox
 * alone cannot say what was sent).
 *
 *   {"id":"nudge:task_completed:3:2026-…:alice","state":"sending","at":"…"}   before the append
 *   {"id":"…","state":"sent","at":"…"}                                        after it
 *   {"id":"…","state":"failed","at":"…"}                                      the append failed: may be sent again
 *
 * A message recorded as sent is never sent again. One left at "sending" (a crash between the two
 * lines, a window of microseconds) is looked for in the inbox before it is sent again: found, it
 * counts as sent; not found, it is sent (it was lost, or — only if the worker read the inbox in that
 * same window — it goes out twice). Two processes sending the same message at once (two leaders, `trust`
 * beside the leader) append it once: the append looks for it in the inbox under the inbox lock. Lines are appended with
 * O_APPEND (several processes may append at once: a small write is atomic), written synchronously, and not fsync'ed
 * (after a power cut the last lines may be gone, and then a message may go out again). `state` reads only what others
 * appended since the last look.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import path from "node:path";
import { HooksError, describeError } from "../contract/errors.js";
import { mkdirUnder, writeAll } from "./json-file.js";
import { leaderStateDir } from "./paths.js";

function sentLogFile(teamDir: string): string {
  return path.join(leaderStateDir(teamDir), "sent.jsonl");
}

/** The id of one message: what it is, the event (or change) it is about, and whom it is for. */
export function sentId(kind: string, key: string, to: string): string {
  return `${kind}:${key}:${to}`;
}

type SentState = "sending" | "sent";

export class SentLog {
  readonly file: string;
  readonly #teamDir: string;
  readonly #sent = new Map<string, SentState>();
  #offset = 0;
  #ino = 0;
  #partial = "";

  constructor(teamDir: string) {
    this.file = sentLogFile(teamDir);
    this.#teamDir = teamDir;
  }

  /** Where the message `id` is: sent, being sent when a process died, or null (never, or failed). */
  state(id: string): SentState | null {
    this.#refresh();
    return this.#sent.get(id) ?? null;
  }

  /**
   * Records that the message `id` is about to be sent. Throws E_IO when the line cannot be written: then nothing may be
   * sent.
   */
  claim(id: string, at: string): void {
    this.#append({ id, state: "sending", at });
    this.#sent.set(id, "sending");
  }

  /**
   * The message `id` is in its inbox. A line that cannot be written leaves it at "sending" (looked for before any
   * resend).
   */
  confirm(id: string, at: string): void {
    this.#sent.set(id, "sent");
    try {
      this.#append({ id, state: "sent", at });
    } catch {
      // Left at "sending" on disk: a later attempt looks in the inbox first, and finds it.
    }
  }

  /** The message `id` could not be delivered after `claim`: a later attempt may send it. */
  release(id: string, at: string): void {
    this.#sent.delete(id);
    try {
      this.#append({ id, state: "failed", at });
    } catch {
      // Left at "sending" on disk: a later attempt looks in the inbox first, and sends it if it is not there.
    }
  }

  #append(line: { id: string; state: SentState | "failed"; at: string }): void {
    mkdirUnder(this.#teamDir, path.dirname(this.file));
    let fd: number;
    try {
      // O_NONBLOCK: a FIFO planted here fails the open (ENXIO) instead of blocking the leader.
      fd = openSync(
        this.file,
        constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK,
        0o600,
      );
    } catch (error) {
      throw new HooksError("E_IO", `cannot write ${this.file}: ${describeError(error)}`, { cause: error });
    }
    try {
      if (!fstatSync(fd).isFile()) throw new Error("not a regular file");
      writeAll(fd, `${JSON.stringify(line)}\n`);
    } catch (error) {
      throw new HooksError("E_IO", `cannot write ${this.file}: ${describeError(error)}`, { cause: error });
    } finally {
      closeSync(fd);
    }
  }

  /** Reads what was appended since the last look (by this process or another). */
  #refresh(): void {
    let fd: number;
    try {
      fd = openSync(this.file, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch {
      return; // no file yet (or not one we can open): nothing was sent that we can see
    }
    try {
      const info = fstatSync(fd);
      if (!info.isFile()) return; // a FIFO or a device in its place holds no record
      const size = info.size;
      if (info.ino !== this.#ino || size < this.#offset) {
        // Another file now (the team dir re-created, or the file removed): read it from its start.
        // What was known to be sent stays known: a message never goes out again for that.
        this.#ino = info.ino;
        this.#offset = 0;
        this.#partial = "";
      }
      if (size === this.#offset) return;
      const buffer = Buffer.alloc(size - this.#offset);
      const read = readSync(fd, buffer, 0, buffer.length, this.#offset);
      this.#offset += read;
      const text = this.#partial + buffer.toString("utf8", 0, read);
      const lines = text.split("\n");
      this.#partial = lines.pop() ?? ""; // a line still being written
      for (const line of lines) this.#apply(line);
    } finally {
      closeSync(fd);
    }
  }

  #apply(line: string): void {
    if (line.trim() === "") return;
    try {
      const record = JSON.parse(line) as { id?: unknown; state?: unknown };
      if (typeof record.id !== "string") return;
      if (record.state === "failed") this.#sent.delete(record.id);
      else if (record.state === "sent") this.#sent.set(record.id, "sent");
      else if (this.#sent.get(record.id) !== "sent") this.#sent.set(record.id, "sending");
    } catch {
      // A torn line (a crash mid-append): it said nothing complete.
    }
  }
}
