import { readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MailboxMessage } from "../../extensions/teams-hooks/contract/team-files.js";
import { appendMessage, appendMessages, markRead, readInbox } from "../../extensions/teams-hooks/team/mailbox.js";
import { makeMessage, tempTeams } from "../helpers/temp-team.js";
import { compileModules, runWorker, type CompiledModules } from "../fixtures/workers/modules.js";

let modules: CompiledModules;
const team = tempTeams();

beforeAll(async () => {
  modules = await compileModules(["team/mailbox"]);
});
afterAll(async () => {
  await modules.cleanup();
});

const readJson = async (file: string): Promise<unknown> => JSON.parse(await readFile(file, "utf8")) as unknown;

describe("readInbox", () => {
  it("treats a missing inbox as empty", async () => {
    const t = await team();
    expect(await readInbox(t.teamDir, "team", "team-lead")).toMatchObject({
      ok: true,
      messages: [],
      skipped: [],
      exists: false,
    });
  });

  it("returns messages with their index and one problem per entry that is not a message", async () => {
    const inbox = [
      makeMessage({ text: "a" }),
      { from: "x", text: "b", timestamp: "t", read: "no" },
      "just a string",
      makeMessage({ text: "c", extra: 1 }),
    ];
    const t = await team({ inbox });
    const result = await readInbox(t.teamDir, "team", "team-lead");
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.messages.map((entry) => [entry.index, entry.message.text])).toEqual([
      [0, "a"],
      [3, "c"],
    ]);
    expect(result.messages[1]?.message).toMatchObject({ extra: 1 });
    expect(result.skipped.map((problem) => problem.field)).toEqual(["[1].read", "[2]"]);
    expect(result.skipped[0]?.message).toContain(t.inboxFile("team", "team-lead"));
    expect(result.skipped[0]?.message).toMatch(/message \[1\]: read: expected boolean, got "no"/);
  });

  it.each([
    ["not JSON", "[{", "invalid_json"],
    ["not an array", '{"messages": []}', "invalid"],
  ])("reports an inbox that is %s as a problem", async (_name, raw, kind) => {
    const t = await team({ inbox: raw });
    const result = await readInbox(t.teamDir, "team", "team-lead");
    expect(result).toMatchObject({ ok: false, problem: { kind, file: t.inboxFile("team", "team-lead") } });
  });
});

describe("appendMessage", () => {
  it("creates the inbox and its folders, as a pretty JSON array with a final newline", async () => {
    const t = await team();
    const message = makeMessage({ text: "assigned", color: "blue" });
    const result = await appendMessage(t.teamDir, "tasks-x", "worker/1", message);
    const file = path.join(t.teamDir, "mailboxes", "tasks-x", "inboxes", "worker-1.json");
    expect(result).toEqual({ ok: true, file, index: 0, present: false });
    expect(await readFile(file, "utf8")).toBe(`${JSON.stringify([message], null, 2)}\n`);
  });

  it("keeps every existing entry as it was, even entries that are not messages", async () => {
    const existing = [{ weird: true, nested: { a: [1] } }, makeMessage({ text: "old", zeta: "kept" }), 42];
    const t = await team({ inbox: existing });
    const result = await appendMessage(t.teamDir, "team", "team-lead", makeMessage({ text: "new" }));
    expect(result).toMatchObject({ ok: true, index: 3 });
    expect(await readJson(t.inboxFile("team", "team-lead"))).toEqual([...existing, makeMessage({ text: "new" })]);
  });

  it("writes, append after append, the bytes a whole serialization of the inbox gives", async () => {
    const t = await team({ inbox: [{ foreign: { nested: ["entry", 1] } }] });
    const file = t.inboxFile("team", "team-lead");
    const messages: unknown[] = [{ foreign: { nested: ["entry", 1] } }];
    const texts = ["plain", 'quote " and \\ and \n line', "émoji 🚀 and \u2028", JSON.stringify({ type: "x", a: [1] })];
    for (const text of texts) {
      const message = makeMessage({ text, extra: { deep: { list: [text, null, true] } } });
      messages.push(message);
      expect(await appendMessage(t.teamDir, "team", "team-lead", message)).toMatchObject({ ok: true });
      expect(await readFile(file, "utf8")).toBe(`${JSON.stringify(messages, null, 2)}\n`);
    }
  });

  it("appends several messages in one write, in order, each unless already there", async () => {
    const t = await team({ inbox: [makeMessage({ text: "old" })] });
    const file = t.inboxFile("team", "team-lead");
    await appendMessage(t.teamDir, "team", "team-lead", makeMessage({ text: "mine" }));
    const [a, b, c] = [makeMessage({ text: "a" }), makeMessage({ text: "b" }), makeMessage({ text: "c" })];
    const result = await appendMessages(t.teamDir, "team", "team-lead", [
      { message: a },
      { message: b, unlessPresent: (m) => m.text === "old" },
      { message: c, unlessPresent: (m) => m.text === "c" },
    ]);
    expect(result).toEqual({
      ok: true,
      file,
      messages: [
        { index: 2, present: false },
        { index: 0, present: true },
        { index: 3, present: false },
      ],
    });
    const all = [makeMessage({ text: "old" }), makeMessage({ text: "mine" }), a, c];
    expect(await readFile(file, "utf8")).toBe(`${JSON.stringify(all, null, 2)}\n`);
  });

  it("appends to an inbox of more entries than it keeps in memory, each append from the file", async () => {
    const many: unknown[] = Array.from({ length: 60_000 }, () => ({}));
    const t = await team({ inbox: many });
    const file = t.inboxFile("team", "team-lead");
    for (const text of ["one", "two"]) {
      const message = makeMessage({ text });
      many.push(message);
      expect(await appendMessage(t.teamDir, "team", "team-lead", message)).toMatchObject({ index: many.length - 1 });
      expect(await readFile(file, "utf8")).toBe(`${JSON.stringify(many, null, 2)}\n`);
    }
  });

  it("reads again an inbox that another writer changed since this process wrote it, same size included", async () => {
    const t = await team();
    const file = t.inboxFile("team", "team-lead");
    await appendMessage(t.teamDir, "team", "team-lead", makeMessage({ text: "one" }));
    await appendMessage(t.teamDir, "team", "team-lead", makeMessage({ text: "two" }));
    // a member marks the first read in place, and the text of the second changes at the same length
    const before = await readFile(file, "utf8");
    const changed = before.replace('"read": false', '"read": true ').replace('"two"', '"TWO"');
    expect(changed.length).toBe(before.length);
    await writeFile(file, changed);
    const sent = await appendMessage(t.teamDir, "team", "team-lead", makeMessage({ text: "three" }), {
      unlessPresent: (message) => message.text === "TWO",
    });
    expect(sent).toMatchObject({ ok: true, index: 1, present: true });
    await appendMessage(t.teamDir, "team", "team-lead", makeMessage({ text: "three" }));
    const entries = (await readJson(file)) as MailboxMessage[];
    expect(entries.map((m) => [m.text, m.read])).toEqual([
      ["one", true],
      ["TWO", false],
      ["three", false],
    ]);
  });

  it("checks the next message against each message as the file holds it, whatever the object sent was", async () => {
    const t = await team();
    const file = t.inboxFile("team", "team-lead");
    // Fields JSON writes otherwise than they are: a date as its text, an undefined or a function not at all.
    const sent = { ...makeMessage({ text: "one" }), sentAt: new Date(0), urgent: undefined, later: () => "no data" };
    expect(await appendMessage(t.teamDir, "team", "team-lead", sent)).toMatchObject({ ok: true, index: 0 });
    const inFile = { ...makeMessage({ text: "one" }), sentAt: "1970-01-01T00:00:00.000Z" };
    expect(await readJson(file)).toEqual([inFile]);
    // What a reader of the file sees, this process included.
    const again = await appendMessage(t.teamDir, "team", "team-lead", makeMessage({ text: "two" }), {
      unlessPresent: (m) => m.sentAt === inFile.sentAt && !("urgent" in m) && !("later" in m),
    });
    expect(again).toMatchObject({ ok: true, index: 0, present: true });
    expect(await readJson(file)).toEqual([inFile]);
  });

  it("never overwrites an inbox that is not a JSON array", async () => {
    const t = await team({ inbox: "{ corrupt" });
    const result = await appendMessage(t.teamDir, "team", "team-lead", makeMessage());
    expect(result).toMatchObject({ ok: false, problem: { kind: "invalid_json" } });
    expect(await readFile(t.inboxFile("team", "team-lead"), "utf8")).toBe("{ corrupt");
  });

  it("refuses a message that does not match the schema", async () => {
    const t = await team();
    const bad = { from: "a", text: "b", timestamp: "c" } as unknown as MailboxMessage;
    await expect(appendMessage(t.teamDir, "team", "team-lead", bad)).rejects.toMatchObject({ code: "E_INTERNAL" });
  });

  it("loses no message when several processes append at once, and the inbox always parses", async () => {
    const t = await team({ inbox: [{ foreign: "entry" }] });
    const file = t.inboxFile("team", "team-lead");
    const goFile = path.join(t.teamsRoot, "go");
    const count = 25;
    const workers = Array.from({ length: 4 }, () =>
      runWorker(modules, "append-messages", {
        teamDir: t.teamDir,
        namespace: "team",
        member: "team-lead",
        count,
        goFile,
      }),
    );
    await writeFile(goFile, "");
    let finished = false;
    const all = Promise.all(workers).finally(() => (finished = true));
    const reader = (async () => {
      while (!finished) expect(Array.isArray(await readJson(file))).toBe(true);
    })();
    for (let i = 0; i < count; i++) {
      const result = await appendMessage(
        t.teamDir,
        "team",
        "team-lead",
        makeMessage({ from: "main", text: `message ${i}` }),
      );
      expect(result.ok).toBe(true);
    }
    await all;
    await reader;
    const entries = (await readJson(file)) as Array<{ from?: string; text?: string }>;
    expect(entries).toHaveLength(1 + 5 * count);
    expect(entries[0]).toEqual({ foreign: "entry" });
    const bySender = new Map<string, string[]>();
    for (const entry of entries.slice(1))
      bySender.set(entry.from ?? "", [...(bySender.get(entry.from ?? "") ?? []), entry.text ?? ""]);
    expect(bySender.size).toBe(5);
    for (const texts of bySender.values())
      expect(texts).toEqual(Array.from({ length: count }, (_, i) => `message ${i}`));
  });

  it("appends a message once when several processes send it at once, each recognising it by its note id", async () => {
    const t = await team({ inbox: [{ foreign: "entry" }] });
    const file = t.inboxFile("team", "team-lead");
    const goFile = path.join(t.teamsRoot, "go");
    const count = 25;
    const workers = Array.from({ length: 4 }, () =>
      runWorker<{ appended: number }>(modules, "append-messages", {
        teamDir: t.teamDir,
        namespace: "team",
        member: "team-lead",
        count,
        goFile,
        once: true,
      }),
    );
    await writeFile(goFile, "");
    const results = await Promise.all(workers);
    const entries = (await readJson(file)) as Array<{ text?: string; qualityGateNoteId?: string }>;
    expect(entries[0]).toEqual({ foreign: "entry" });
    expect(
      entries
        .slice(1)
        .map((e) => e.qualityGateNoteId)
        .sort(),
    ).toEqual(Array.from({ length: count }, (_, i) => `note-${i}`).sort());
    expect(results.reduce((sum, r) => sum + r.appended, 0)).toBe(count); // each sender knows whether it was the one
  });
});

describe("markRead", () => {
  it("marks the matching unread messages only, keeping unknown fields and foreign entries", async () => {
    const inbox = [
      makeMessage({ text: "a", x: 1 }),
      makeMessage({ text: "b" }),
      { text: "a", broken: true },
      makeMessage({ text: "a", read: true }),
    ];
    const t = await team({ inbox });
    const seen: number[] = [];
    const result = await markRead(t.teamDir, "team", "team-lead", (message, index) => {
      seen.push(index);
      return message.text === "a";
    });
    expect(result).toMatchObject({ ok: true, marked: 1 });
    expect(seen).toEqual([0, 1]); // never asked about the broken entry or an already read one
    expect(await readJson(t.inboxFile("team", "team-lead"))).toEqual([
      { ...inbox[0], read: true },
      inbox[1],
      inbox[2],
      inbox[3],
    ]);
  });

  it("writes nothing when nothing matches, and nothing at all for a missing inbox", async () => {
    const t = await team({ inbox: [makeMessage()] });
    const file = t.inboxFile("team", "team-lead");
    const before = await stat(file);
    expect(await markRead(t.teamDir, "team", "team-lead", () => false)).toMatchObject({ ok: true, marked: 0 });
    expect((await stat(file)).mtimeMs).toBe(before.mtimeMs);
    expect(await markRead(t.teamDir, "team", "nobody", () => true)).toMatchObject({ ok: true, marked: 0 });
    await expect(stat(t.inboxFile("team", "nobody"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("returns a problem for a corrupt inbox and leaves it alone", async () => {
    const t = await team({ inbox: '"not an array"' });
    expect(await markRead(t.teamDir, "team", "team-lead", () => true)).toMatchObject({
      ok: false,
      problem: { kind: "invalid" },
    });
    expect(await readFile(t.inboxFile("team", "team-lead"), "utf8")).toBe('"not an array"');
  });
});
