/**
 * Mailboxes: `mailboxes/<namespace>/inboxes/<member>.json`, a JSON array of messages. Writers append
 * under the inbox lock and rewrite atomically. Every existing entry is written back as it was, even
 * one this project does not understand: the inbox belongs to the team, not to us. A file that is not
 * a JSON array is reported and never overwritten. What we write here, folders included, is `shared`
 * (json-file.ts): a leader under its own Unix user leaves it writable by the agents' group.
 */
import path from "node:path";
import { MailboxMessageSchema, MailboxSchema, type MailboxMessage } from "../contract/team-files.js";
import { HooksError } from "../contract/errors.js";
import {
  MAX_TEAM_FILE_BYTES,
  checkSchema,
  mkdirUnder,
  parseJsonText,
  readRegularBytes,
  refuseReadInPart,
  writeBytesAtomic,
  type FileProblem,
} from "./json-file.js";
import { withLock } from "./lock.js";
import { inboxFile } from "./paths.js";

/** A message with its position in the file (what `markRead` predicates and replies refer to). */
interface InboxEntry {
  index: number;
  message: MailboxMessage;
}

type InboxReadResult =
  | {
      ok: true;
      file: string;
      /** Entries that are messages, in file order. */
      messages: InboxEntry[];
      /** One problem per entry that is not a message (`field` is `[index].field`); such entries are kept on rewrite. */
      skipped: FileProblem[];
      exists: boolean;
    }
  | { ok: false; problem: FileProblem };

type InboxWriteResult<T> = ({ ok: true; file: string } & T) | { ok: false; problem: FileProblem };

interface MailboxOptions {
  label?: string;
  timeoutMs?: number;
}

interface AppendOptions extends MailboxOptions {
  /**
   * Recognises a message that stands for this one: when the inbox already holds one, nothing is
   * appended (another process sent it first). Checked under the lock, so two senders of the same
   * message append it once.
   */
  unlessPresent?: (message: MailboxMessage) => boolean;
}

/** Reads an inbox without locking (writers replace it atomically). A missing file is an empty inbox. */
export async function readInbox(teamDir: string, namespace: string, member: string): Promise<InboxReadResult> {
  const file = inboxFile(teamDir, namespace, member);
  const loaded = loadEntries(file);
  if (!loaded.ok) return loaded;
  const messages: InboxEntry[] = [];
  const skipped: FileProblem[] = [];
  loaded.entries.forEach((entry, index) => {
    const parsed = parseEntry(entry, index, file);
    if (parsed.ok) messages.push({ index, message: parsed.message });
    else skipped.push(parsed.problem);
  });
  return { ok: true, file, messages, skipped, exists: loaded.exists };
}

/**
 * Appends `message` under the inbox lock, creating the inbox (and its folders) when missing; nothing
 * when `unlessPresent` recognises a message already there (`present`, and the index of that one).
 */
export async function appendMessage(
  teamDir: string,
  namespace: string,
  member: string,
  message: MailboxMessage,
  options: AppendOptions = {},
): Promise<InboxWriteResult<{ index: number; present: boolean }>> {
  const { unlessPresent, ...lock } = options;
  const appended = await appendMessages(teamDir, namespace, member, [{ message, unlessPresent }], lock);
  if (!appended.ok) return appended;
  const [only] = appended.messages;
  if (!only) throw new HooksError("E_INTERNAL", "appendMessages answered for no message");
  return { ok: true, file: appended.file, ...only };
}

/** One message of `appendMessages`, with what recognises it already in the inbox (`AppendOptions`). */
interface ToAppend {
  message: MailboxMessage;
  unlessPresent?: (message: MailboxMessage) => boolean;
}

/**
 * `appendMessage` of several messages in one write of the inbox, in order: a member reads them together
 * or not at all. Each is appended unless its `unlessPresent` recognises one already there.
 */
export async function appendMessages(
  teamDir: string,
  namespace: string,
  member: string,
  items: readonly ToAppend[],
  options: MailboxOptions = {},
): Promise<InboxWriteResult<{ messages: { index: number; present: boolean }[] }>> {
  const file = inboxFile(teamDir, namespace, member);
  for (const { message } of items) {
    const checked = checkSchema(message, MailboxMessageSchema, file);
    if (!checked.ok)
      throw new HooksError("E_INTERNAL", `refusing to append an invalid message: ${checked.problem.message}`);
  }
  mkdirUnder(teamDir, path.dirname(file), { shared: true });
  return withLock(
    file,
    async (): Promise<InboxWriteResult<{ messages: { index: number; present: boolean }[] }>> => {
      const loaded = loadEntries(file);
      if (!loaded.ok) return loaded;
      const messages: { index: number; present: boolean }[] = [];
      // Each message as the file will hold it (JSON's reading, not the object sent: a date is its text, an
      // undefined or a function is not there), what a reader of the file, and the next append, sees.
      const added: string[] = [];
      const entries = [...loaded.entries];
      for (const { message, unlessPresent } of items) {
        // (a shape check, not the schema: this runs for every message sent, over the whole inbox)
        const index = unlessPresent
          ? loaded.entries.findIndex((entry) => isMessageLike(entry) && unlessPresent(entry))
          : -1;
        if (index >= 0) {
          messages.push({ index, present: true });
          continue;
        }
        const entry = JSON.stringify(message, null, 2);
        added.push(entry);
        entries.push(JSON.parse(entry) as unknown);
        messages.push({ index: entries.length - 1, present: false });
      }
      if (added.length === 0) return { ok: true, file, messages };
      writeInbox(file, (loaded.ours && withEntries(loaded.ours, added, file)) ?? [inboxBytes(entries, file)], entries);
      return { ok: true, file, messages };
    },
    lockOptions(options, `append to ${namespace}/${member}`),
  );
}

/**
 * Sets `read: true` on every unread message for which `predicate` is true, under the lock. Entries
 * that are not messages are never passed to `predicate` and are written back unchanged. Nothing is
 * written when nothing changes.
 */
export async function markRead(
  teamDir: string,
  namespace: string,
  member: string,
  predicate: (message: MailboxMessage, index: number) => boolean,
  options: MailboxOptions = {},
): Promise<InboxWriteResult<{ marked: number }>> {
  const file = inboxFile(teamDir, namespace, member);
  // The lock file lives next to the inbox: without the folder there is nothing to mark.
  const before = loadEntries(file);
  if (!before.ok) return before;
  if (!before.exists) return { ok: true, file, marked: 0 };
  return withLock(
    file,
    async (): Promise<InboxWriteResult<{ marked: number }>> => {
      const loaded = loadEntries(file);
      if (!loaded.ok) return loaded;
      let marked = 0;
      const entries = loaded.entries.map((entry, index) => {
        const parsed = parseEntry(entry, index, file);
        if (!parsed.ok || parsed.message.read || !predicate(parsed.message, index)) return entry;
        marked += 1;
        // the raw entry: keeps its key order and unknown fields
        return { ...(entry as Record<string, unknown>), read: true };
      });
      if (marked > 0) writeInbox(file, [inboxBytes(entries, file)], entries);
      return { ok: true, file, marked };
    },
    lockOptions(options, `mark read ${namespace}/${member}`),
  );
}

/**
 * The inboxes this process last wrote, by file: their bytes and entries, up to `REMEMBERED_BYTES` and
 * `REMEMBERED_ENTRIES` in all, the latest written kept first (a team of many members with long inboxes
 * keeps the leader's memory). An inbox only grows while its member does not read it (pi-agent-teams marks
 * messages read and keeps them), and each message sent used to decode, parse and serialize it whole. When
 * the file still holds exactly the bytes written last (compared whole: whoever wrote it since, by any
 * means, is read as before), the entries are these, and the message is written into the bytes just read,
 * before the closing bracket, which is byte for byte what serializing the whole inbox gives.
 */
const written = new Map<string, { pieces: readonly Buffer[]; entries: readonly unknown[] }>();
const REMEMBERED_BYTES = 8 * 1024 * 1024;
// The entries too: each is an object kept beside its bytes, and an inbox of tiny entries (`{}`) would keep
// several times its size in objects.
const REMEMBERED_ENTRIES = 50_000;
let remembered = { bytes: 0, entries: 0 };

/** Writes `pieces`, the inbox's bytes (of `entries`), in place of the file, and remembers them. */
function writeInbox(file: string, pieces: readonly Buffer[], entries: readonly unknown[]): void {
  forget(file); // a write that fails leaves what was there, which is then read as anyone's
  writeBytesAtomic(file, pieces, { shared: true });
  remember(file, pieces, entries);
}

function remember(file: string, pieces: readonly Buffer[], entries: readonly unknown[]): void {
  forget(file);
  const size = length(pieces);
  const fits = (): boolean =>
    remembered.bytes + size <= REMEMBERED_BYTES && remembered.entries + entries.length <= REMEMBERED_ENTRIES;
  for (const oldest of written.keys()) {
    if (fits()) break;
    forget(oldest);
  }
  if (!fits()) return;
  written.set(file, { pieces, entries });
  remembered = { bytes: remembered.bytes + size, entries: remembered.entries + entries.length };
}

function forget(file: string): void {
  const known = written.get(file);
  if (!known) return;
  written.delete(file);
  remembered = {
    bytes: remembered.bytes - length(known.pieces),
    entries: remembered.entries - known.entries.length,
  };
}

/**
 * The raw entries of an inbox file (missing = empty; not a JSON array = a problem), and `ours`: its bytes
 * when they are the ones this process wrote last, whose entries are then the ones remembered (`written`).
 */
function loadEntries(
  file: string,
):
  | { ok: true; entries: readonly unknown[]; exists: boolean; ours: Buffer | null }
  | { ok: false; problem: FileProblem } {
  const read = readRegularBytes(file, { maxBytes: MAX_TEAM_FILE_BYTES });
  if (!read.ok)
    return read.problem.kind === "missing"
      ? { ok: true, entries: [], exists: false, ours: null }
      : { ok: false, problem: read.problem };
  const known = written.get(file);
  if (known && holds(read.bytes, known.pieces))
    return { ok: true, entries: known.entries, exists: true, ours: read.bytes };
  const parsed = parseJsonText(read.bytes.toString("utf8"), file);
  if (!parsed.ok) return parsed;
  const checked = checkSchema(parsed.raw, MailboxSchema, file);
  return checked.ok
    ? { ok: true, entries: checked.value, exists: true, ours: null }
    : { ok: false, problem: notMessages(checked.problem) };
}

/** Whether `bytes` are `pieces` one after the other. */
function holds(bytes: Buffer, pieces: readonly Buffer[]): boolean {
  if (bytes.length !== length(pieces)) return false;
  let at = 0;
  for (const piece of pieces) {
    if (!bytes.subarray(at, at + piece.length).equals(piece)) return false;
    at += piece.length;
  }
  return true;
}

function length(pieces: readonly Buffer[]): number {
  return pieces.reduce((sum, piece) => sum + piece.length, 0);
}

/**
 * `bytes` (an inbox as `writeJsonAtomic` writes it: an array of two-space indented entries, then a newline)
 * with `json` (entries' two-space indented JSON) as its last entries, in two pieces (no copy of the inbox);
 * null when `bytes` does not end as such an array does.
 */
function withEntries(bytes: Buffer, json: readonly string[], file: string): Buffer[] | null {
  const end = bytes.length - CLOSE.length;
  if (end <= 1 || !bytes.subarray(end).equals(CLOSE)) return null;
  // JSON text holds no raw line break inside a value, so each line of an entry is one more level in.
  const tail = json.map((entry) => `,\n  ${entry.replaceAll("\n", "\n  ")}`).join("");
  refuseReadInPart(file, tail);
  return [bytes.subarray(0, end), Buffer.from(`${tail}${CLOSE_TEXT}`, "utf8")];
}

const CLOSE_TEXT = "\n]\n";
const CLOSE = Buffer.from(CLOSE_TEXT);

/** An inbox's bytes as `writeJsonAtomic` writes them. */
function inboxBytes(entries: readonly unknown[], file: string): Buffer {
  const json = JSON.stringify(entries, null, 2);
  refuseReadInPart(file, json);
  return Buffer.from(`${json}\n`, "utf8");
}

/** A file that is JSON but not an array says so; any other problem is its own. */
function notMessages(problem: FileProblem): FileProblem {
  return problem.kind === "invalid"
    ? { ...problem, message: `${problem.file}: not a JSON array of messages — left untouched` }
    : problem;
}

function isMessageLike(entry: unknown): entry is MailboxMessage {
  return (
    typeof entry === "object" &&
    entry !== null &&
    !Array.isArray(entry) &&
    typeof (entry as { text?: unknown }).text === "string"
  );
}

function parseEntry(
  entry: unknown,
  index: number,
  file: string,
): { ok: true; message: MailboxMessage } | { ok: false; problem: FileProblem } {
  const checked = checkSchema(entry, MailboxMessageSchema, file);
  if (checked.ok) return { ok: true, message: checked.value };
  const inner = checked.problem.field;
  const field = `[${index}]${inner ? `.${inner}` : ""}`;
  const detail = checked.problem.message.slice(file.length + 2); // drop the "<file>: " prefix, re-added with the index
  return { ok: false, problem: { ...checked.problem, field, message: `${file}: message [${index}]: ${detail}` } };
}

function lockOptions(options: MailboxOptions, label: string): { label: string; timeoutMs?: number } {
  return {
    label: options.label ?? label,
    timeoutMs: options.timeoutMs,
  };
}
