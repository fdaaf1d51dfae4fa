import { describe, expect, it } from "vitest";
import { createKeyedQueue } from "../../extensions/teams-hooks/leader/queue.js";

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("createKeyedQueue", () => {
  it("runs one group's jobs in order, one at a time", async () => {
    const q = createKeyedQueue({ concurrency: 4, onError: () => {} });
    const order: string[] = [];
    let inGroup = 0;
    let maxInGroup = 0;
    for (let i = 0; i < 5; i++) {
      q.push("task-1", async () => {
        inGroup += 1;
        maxInGroup = Math.max(maxInGroup, inGroup);
        await new Promise((r) => setImmediate(r));
        order.push(`job${i}`);
        inGroup -= 1;
      });
    }
    await q.onIdle();
    expect(order).toEqual(["job0", "job1", "job2", "job3", "job4"]);
    expect(maxInGroup).toBe(1);
  });

  it("runs different groups in parallel up to the concurrency", async () => {
    const q = createKeyedQueue({ concurrency: 2, onError: () => {} });
    const gates = [deferred(), deferred(), deferred()];
    let running = 0;
    let maxRunning = 0;
    gates.forEach((gate, i) =>
      q.push(`g${i}`, async () => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        await gate.promise;
        running -= 1;
      }),
    );
    expect(q.running).toBe(2);
    gates.forEach((g) => g.resolve());
    await q.onIdle();
    expect(maxRunning).toBe(2);
  });

  it("a failing job is reported and does not stop the queue", async () => {
    const errors: unknown[] = [];
    const q = createKeyedQueue({ concurrency: 1, onError: (e) => errors.push(e) });
    let ran = false;
    q.push("a", async () => {
      throw new Error("boom");
    });
    q.push("a", async () => {
      ran = true;
    });
    await q.onIdle();
    expect(errors).toHaveLength(1);
    expect(ran).toBe(true);
  });

  it("close drops waiting jobs, waits for running ones, and refuses new ones", async () => {
    const q = createKeyedQueue({ concurrency: 1, onError: () => {} });
    const gate = deferred();
    let finished = false;
    q.push("a", async () => {
      await gate.promise;
      finished = true;
    });
    q.push("b", async () => {});
    const closed = q.close();
    expect(q.push("c", async () => {})).toBe(false);
    gate.resolve();
    expect(await closed).toBe(1);
    expect(finished).toBe(true);
    expect(q.close()).toBe(closed);
  });

  it("rejects a concurrency below 1", () => {
    expect(() => createKeyedQueue({ concurrency: 0, onError: () => {} })).toThrow(/concurrency/);
  });
});
