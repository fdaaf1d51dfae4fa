import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { inPidWindow, pidMark, pidWindow } from "../../extensions/teams-hooks/runner/sandbox.js";

const mark = { last: 1000, forks: 50_000, tasks: 200 };

describe("the pids a run's end looks at (pidWindow)", () => {
  it("are those given after the mark up to the kernel's last pid, across the wrap at pid_max", () => {
    const window = pidWindow(mark, { last: 1010, forks: 50_012 }, 32_768);
    expect(window).toEqual({ from: 1000, to: 1010 });
    expect([1000, 1001, 1010, 1011, 999, 5].map((pid) => inPidWindow(pid, { from: 1000, to: 1010 }))).toEqual([
      false,
      true,
      true,
      false,
      false,
      false,
    ]);
    // The turn wrapped: after 32,700, then from the bottom up to 400.
    const wrapped = { from: 32_700, to: 400 };
    expect([32_701, 32_767, 301, 400, 401, 32_700, 20_000].map((pid) => inPidWindow(pid, wrapped))).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it("are none to go by once the kernel may have come round past the mark: every process is looked at", () => {
    // 32,768 − 300 pids in a turn; each step gives one (a fork) or passes one in use (200 at the mark, and the made).
    expect(pidWindow(mark, { last: 1010, forks: 50_000 + 16_133 }, 32_768)).toEqual({ from: 1000, to: 1010 });
    expect(pidWindow(mark, { last: 1010, forks: 50_000 + 16_134 }, 32_768)).toBeNull();
    // A count that went back is not one to reason from.
    expect(pidWindow(mark, { last: 1010, forks: 49_999 }, 32_768)).toBeNull();
  });

  it("hold every process made after the mark, as this machine's kernel gives them", async () => {
    const before = pidMark();
    expect(before).not.toBeNull();
    if (!before) return;
    const children = [0, 1, 2].map(() => spawn("/bin/sh", ["-c", "exit 0"], { stdio: "ignore" }));
    await Promise.all(children.map((child) => once(child, "exit")));
    const now = pidMark();
    expect(now).not.toBeNull();
    if (!now) return;
    const pidMax = Number(readFileSync("/proc/sys/kernel/pid_max", "utf8"));
    const window = pidWindow(before, now, pidMax);
    expect(window).not.toBeNull();
    if (!window) return;
    for (const child of children) expect(inPidWindow(child.pid ?? 0, window)).toBe(true);
    expect(inPidWindow(process.pid, window)).toBe(false);
    expect(now.forks - before.forks).toBeGreaterThanOrEqual(3);
  });
});
