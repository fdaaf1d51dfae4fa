/**
 * A task file of megabytes is read with its long strings cut to their heads, and a rewrite under the
 * task's lock puts the rest back byte for byte: real files in a temp dir, strings that cross the 1 MiB
 * read chunks with escapes, escaped quotes, runs of backslashes and multi-byte characters at every cut.
 */
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Task, TaskSchema } from "../../extensions/teams-hooks/contract/team-files.js";
import { readJsonFile, writeJsonAtomic } from "../../extensions/teams-hooks/team/json-file.js";
import { KEPT_STRING_BYTES } from "../../extensions/teams-hooks/team/long-strings.js";
import { readTask, updateTask } from "../../extensions/teams-hooks/team/tasks.js";
import { makeTask } from "../helpers/temp-team.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "long-strings-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** A deterministic text of `length` characters mixing what JSON escapes and what UTF-8 spreads over bytes. */
function awkwardText(length: number, seed: number): string {
  const pieces = ['"', "\\", "\\\\", '\\"', "\n", "\t", "\u0001", "é", "€", "𝄞", "a", "b ", "</x>", "\u2028"];
  let state = seed;
  let out = "";
  while (out.length < length) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const piece = pieces[state % pieces.length] ?? "a";
    out += state % 7 === 0 ? piece.repeat(state % 23) : piece;
  }
  return out.slice(0, length);
}

describe("a task file with long strings", () => {
  it.each([1, 2, 3, 4, 5])("is read short and rewritten whole (texts of seed %i)", async (seed) => {
    const file = path.join(dir, "tasks", `t${seed}`, "1.json");
    const description = awkwardText(900_000 + seed * 131_071, seed);
    const result = awkwardText(200_000, seed + 100);
    const task = makeTask({ id: "1", description, metadata: { result, short: "kept as is", description: result } });
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, `${JSON.stringify(task, null, 2)}\n`);

    const read = await readTask(file);
    expect(read.ok).toBe(true);
    if (!read.ok) return;
    // The head is the text's own start; the rest is said, not held.
    expect(Buffer.byteLength(read.value.description)).toBeLessThan(KEPT_STRING_BYTES + 200);
    expect(description.startsWith(read.value.description.slice(0, 1000))).toBe(true);
    expect(read.value.description).toMatch(/more bytes of this text are in the file, not read/);
    expect(read.value.metadata?.short).toBe("kept as is");
    // Metadata is read whole, a nested `description` included: a gate is shown it as written.
    expect(read.value.metadata?.result).toBe(result);
    expect(read.value.metadata?.description).toBe(result);

    const updated = await updateTask(path.join(dir), `t${seed}`, "1", (t) => ({
      ...t,
      status: "pending",
      description: `NOTE\n\n${t.description}`,
      metadata: { ...t.metadata, qualityGateStatus: "failed" },
    }));
    expect(updated.ok).toBe(true);
    const back = JSON.parse(await readFile(file, "utf8")) as Task;
    expect(back.description).toBe(`NOTE\n\n${description}`);
    expect(back.metadata?.result).toBe(result);
    expect(back.metadata?.qualityGateStatus).toBe("failed");
    expect(back.status).toBe("pending");
  });

  it.each([
    ["an escaped quote", '"', "b".repeat(1_500_000)],
    ["an escaped backslash that ends the string", "\\", ""],
    ["three backslashes and a quote", '\\"', "c".repeat(300_000)],
  ])("finds where a string ends when %s straddles the 1 MiB read chunks", async (_name, middle, tail) => {
    const file = path.join(dir, `straddle-${middle.length}-${tail.length}.json`);
    const head = `{"id":"1","subject":"s","description":"`;
    const escaped = JSON.stringify(middle).slice(1, -1);
    // The escape's first byte is the last byte of the first chunk.
    const fill = "a".repeat(1024 * 1024 - 1 - Buffer.byteLength(head));
    const description = `${fill}${middle}${tail}`;
    const rest = `","status":"completed","blocks":[],"blockedBy":[],"createdAt":"2025-01-01T00:00:00.000Z","updatedAt":"2025-01-01T00:00:00.000Z","metadata":{"after":"${"d".repeat(70_000)}"}}`;
    await writeFile(file, `${head}${fill}${escaped}${JSON.stringify(tail).slice(1, -1)}${rest}`);
    const read = await readJsonFile(file, TaskSchema, { longStrings: "keep" });
    if (!read.ok) throw new Error(read.problem.message);
    expect(read.value.status).toBe("completed");
    await writeJsonAtomic(file, { ...(read.raw as object), status: "pending" }, { parts: read.parts });
    const back = JSON.parse(await readFile(file, "utf8")) as Task;
    expect(back.description).toBe(description);
    expect(back.metadata?.after).toBe("d".repeat(70_000));
    expect(back.status).toBe("pending");
  });

  it("writes back a task whose own text looks like a marker, as it is", async () => {
    // What an agent could write to have its task's policy refused: a marker's words, without this
    // process's mark.
    const forged = "\u0000pi-teams-hooks: 5 more bytes of this text are in the file, not read\u00000\u0000";
    const file = path.join(dir, "tasks", "forged", "1.json");
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, JSON.stringify(makeTask({ id: "1", description: `do it ${forged}` })));
    const updated = await updateTask(dir, "forged", "1", (t) => ({ ...t, status: "pending" }));
    expect(updated.ok).toBe(true);
    const back = JSON.parse(await readFile(file, "utf8")) as Task;
    expect(back).toMatchObject({ status: "pending", description: `do it ${forged}` });
  });

  it("never lets a value read short be written without its parts", async () => {
    const file = path.join(dir, "alone.json");
    await writeFile(file, JSON.stringify(makeTask({ description: "x".repeat(2_000_000) })));
    const read = await readJsonFile(file, TaskSchema, { longStrings: "short" });
    if (!read.ok) throw new Error(read.problem.message);
    await expect(writeJsonAtomic(path.join(dir, "copy.json"), read.value)).rejects.toThrow(/read in part/);
    const subject = path.join(dir, "subject.json");
    await writeFile(subject, JSON.stringify(makeTask({ subject: "s".repeat(2_000_000) })));
    const short = await readJsonFile(subject, TaskSchema, { longStrings: "short" });
    expect(short.ok && short.value.subject.length).toBeLessThan(KEPT_STRING_BYTES + 200);
  });

  it("refuses to put parts back into a file replaced since it was read", async () => {
    const file = path.join(dir, "replaced.json");
    await writeFile(file, JSON.stringify(makeTask({ description: "y".repeat(2_000_000) })));
    const read = await readJsonFile(file, TaskSchema, { longStrings: "keep" });
    if (!read.ok) throw new Error(read.problem.message);
    await writeFile(`${file}.new`, JSON.stringify(makeTask({ description: "z".repeat(2_000_000) })));
    await rename(`${file}.new`, file);
    await expect(writeJsonAtomic(file, read.value, { parts: read.parts })).rejects.toThrow(
      /changed while it was rewritten/,
    );
    expect((JSON.parse(await readFile(file, "utf8")) as Task).description).toBe("z".repeat(2_000_000));
  });

  it("reads a file under 1 MiB whole, and one that is not JSON as not JSON", async () => {
    const small = path.join(dir, "small.json");
    await writeFile(small, JSON.stringify(makeTask({ description: "s".repeat(500_000) })));
    const read = await readTask(small);
    expect(read.ok && read.value.description).toBe("s".repeat(500_000));
    const broken = path.join(dir, "broken.json");
    await writeFile(broken, `{"id": "1", "description": "${"q".repeat(1_500_000)}`);
    const bad = await readTask(broken);
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.problem.kind).toBe("invalid_json");
  });
});
