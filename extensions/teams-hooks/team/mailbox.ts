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
import { checkSchema, mkdirUnder, readJsonFile, writeJsonAtomic, type FileProblem } from "./json-file.js";
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
  const loaded = await loadEntries(file);
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
  const file = inboxFile(teamDir, namespace, member);
  const checked = checkSchema(message, MailboxMessageSchema, file);
  if (!checked.ok)
    throw new HooksError("E_INTERNAL", `refusing to append an invalid message: ${checked.problem.message}`);
  mkdirUnder(teamDir, path.dirname(file), { shared: true });
  return withLock(
    file,
    async (): Promise<InboxWriteResult<{ index: number; present: boolean }>> => {
      const loaded = await loadEntries(file);
      if (!loaded.ok) return loaded;
      const { unlessPresent } = options;
      if (unlessPresent) {
        // (a shape check, not the schema: this runs for every message sent, over the whole inbox)
        const index = loaded.entries.findIndex((entry) => isMessageLike(entry) && unlessPresent(entry));
        if (index >= 0) return { ok: true, file, index, present: true };
      }
      const entries = [...loaded.entries, message];
      await writeJsonAtomic(file, entries, { shared: true });
      return { ok: true, file, index: entries.length - 1, present: false };
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
  const before = await loadEntries(file);
  if (!before.ok) return before;
  if (!before.exists) return { ok: true, file, marked: 0 };
  return withLock(
    file,
    async (): Promise<InboxWriteResult<{ marked: number }>> => {
      const loaded = await loadEntries(file);
      if (!loaded.ok) return loaded;
      let marked = 0;
      const entries = loaded.entries.map((entry, index) => {
        const parsed = parseEntry(entry, index, file);
        if (!parsed.ok || parsed.message.read || !predicate(parsed.message, index)) return entry;
        marked += 1;
        // the raw entry: keeps its key order and unknown fields
        return { ...(entry as Record<string, unknown>), read: true };
      });
      if (marked > 0) await writeJsonAtomic(file, entries, { shared: true });
      return { ok: true, file, marked };
    },
    lockOptions(options, `mark read ${namespace}/${member}`),
  );
}

/** The raw entries of an inbox file: missing = empty; not a JSON array = a problem. */
async function loadEntries(
  file: string,
): Promise<{ ok: true; entries: unknown[]; exists: boolean } | { ok: false; problem: FileProblem }> {
  const read = await readJsonFile(file, MailboxSchema);
  if (read.ok) return { ok: true, entries: read.value, exists: true };
  if (read.problem.kind === "missing") return { ok: true, entries: [], exists: false };
  if (read.problem.kind === "invalid") {
    return {
      ok: false,
      problem: { ...read.problem, message: `${file}: not a JSON array of messages — left untouched` },
    };
  }
  return read;
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
