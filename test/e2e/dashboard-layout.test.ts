/**
 * The dashboard's layout at a laptop's and a desktop's width (1280 and 1920 px), in a real headless
 * Chromium against a real `serve` on 127.0.0.1, over logs with the long cells a busy team writes: the
 * runs table shows its first stderr line column without scrolling sideways, every row is one line
 * high, a held run wears the held badge (not a red one), and a run's long task subject reads as a line
 * across the page, not a tall narrow column. Each page is also screenshotted (to a temp folder; with
 * `UPDATE_SCREENSHOTS=1`, to docs/img/ as well).
 */
import { stat } from "node:fs/promises";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { launchBrowser } from "../helpers/browser.js";
import { hookLogRecord } from "../helpers/dashboard-team.js";
import { REPO_ROOT, ensureBuilt } from "../helpers/leader-rig.js";
import { type ServeProcess, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";
import { fileTempDir } from "../helpers/temp-team.js";

const WIDTHS = [1280, 1920] as const;
const LONG_SUBJECT = `Migrate the payroll exports to the new ledger format, keep the old CSV columns for one more release, and document the mapping of every field for finance (${"and more ".repeat(12)}the end)`;

let root: string;
let cleanup: () => Promise<void>;
let serve: ServeProcess;
let browser: Browser;
const shots = fileTempDir("dashboard-layout-");

beforeAll(async () => {
  await ensureBuilt();
  ({ root, cleanup } = await makeTeamsRoot({ wide: {} }));
  const teamDir = path.join(root, "wide");
  const base = Date.now() - 3_600_000;
  for (let i = 0; i < 40; i++) {
    const kind = i % 5;
    await writeHookLog(teamDir, logOf(teamDir, i, new Date(base + i * 1000), kind));
  }
  [serve, browser] = await Promise.all([startServe(root), launchBrowser()]);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  await cleanup?.();
});

/** The `i`th log: kind 0 a failure with long output, 1 a pass, 2 a run by hand, 3 a held event, 4 deferred. */
function logOf(teamDir: string, i: number, startedAt: Date, kind: number): Parameters<typeof writeHookLog>[1] {
  const taskId = String(100 + i);
  const member = ["ada", "brian-the-release-manager", "chen"][i % 3] as string;
  const failed = kind === 0 || kind === 3;
  return hookLogRecord({
    teamDir,
    taskId,
    startedAt,
    member,
    subject: i === 0 ? LONG_SUBJECT : `Task ${taskId}`,
    hookPath: path.join(teamDir, "hooks", "on_task_completed.d", "20-integration-tests-against-staging.sh"),
    runId: `0000${String(i).padStart(4, "0")}-51eb-42cb-945b-c9232b60cf26`,
    result: {
      outcome: kind === 4 ? "deferred" : failed ? "failed" : "passed",
      exitCode: failed ? 1 : 0,
      durationMs: 1234 + i,
      stderr: failed
        ? `FAIL test/integration/ledger-export-${i}.test.ts > keeps every CSV column of the old format in the same order as before\n`
        : "",
      ...(kind === 4 ? { verdict: { decision: "defer", reason: "waiting for review", source: "stdout" } } : {}),
    },
    trigger: kind === 2 ? "hand" : undefined,
    policy:
      kind === 3
        ? {
            passed: false,
            summary: "held for the lead",
            actions: ["held for the lead's approval"],
            gate: "held",
            held: "approval",
          }
        : {
            passed: !failed,
            summary: failed ? "exit code 1" : "passed",
            actions: failed ? ["reopened (1/3)", `follow-up #${500 + i} for ${member}`, `nudge ${member}`] : ["none"],
          },
  });
}

/** A page at `width` × 900 showing `route` (answered 200), and its screenshot written. */
async function look(route: string, width: number, name: string): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width, height: 900 },
    colorScheme: "light",
    timezoneId: "UTC",
  });
  const page = await context.newPage();
  const answer = await page.goto(`${serve.url}${route}`);
  expect(answer?.status()).toBe(200);
  const file = path.join(shots, `${name}-${width}.png`);
  await page.screenshot({ path: file, fullPage: false });
  expect((await stat(file)).size).toBeGreaterThan(10_000);
  if (process.env.UPDATE_SCREENSHOTS === "1")
    await page.screenshot({ path: path.join(REPO_ROOT, "docs", "img", `dashboard-${name}-${width}.png`) });
  return page;
}

describe("the runs table", () => {
  for (const width of WIDTHS) {
    it(`at ${width} px: the first stderr line column is in view, every row one line high, a held run held`, async () => {
      const page = await look("/runs", width, "runs");
      try {
        const geometry = (await page.evaluate(`(() => {
          const wrap = document.querySelector(".table-wrap");
          const head = [...document.querySelectorAll("#runs-table thead th")].at(-1);
          const rows = [...document.querySelectorAll("#runs-body tr")].map((tr) => tr.getBoundingClientRect().height);
          const stderr = [...document.querySelectorAll("#runs-body td.stderr")].filter((td) => td.textContent !== "");
          return {
            scroll: wrap.scrollWidth - wrap.clientWidth,
            wrapRight: wrap.getBoundingClientRect().right,
            headRight: head.getBoundingClientRect().right,
            headLeft: head.getBoundingClientRect().left,
            heading: head.textContent,
            rows,
            stderrWidth: Math.min(...stderr.map((td) => td.getBoundingClientRect().width)),
            stderrShown: stderr.length,
          };
        })()`)) as {
          scroll: number;
          wrapRight: number;
          headRight: number;
          headLeft: number;
          heading: string;
          rows: number[];
          stderrWidth: number;
          stderrShown: number;
        };
        expect(geometry.heading).toBe("First stderr line");
        expect(geometry.scroll).toBeLessThanOrEqual(1);
        expect(geometry.headRight).toBeLessThanOrEqual(geometry.wrapRight + 1);
        expect(geometry.headLeft).toBeLessThan(width - 200);
        expect(geometry.stderrShown).toBeGreaterThan(10);
        expect(geometry.stderrWidth).toBeGreaterThanOrEqual(200);
        expect(geometry.rows.length).toBe(40);
        expect(Math.max(...geometry.rows) - Math.min(...geometry.rows)).toBeLessThanOrEqual(1);
        const held = page.locator("#runs-body .badge", { hasText: /^held$/ });
        expect(await held.count()).toBe(8);
        expect(await held.first().getAttribute("class")).toBe("badge badge-note");
      } finally {
        await page.context().close();
      }
    });
  }
});

describe("a run's page", () => {
  for (const width of WIDTHS) {
    it(`at ${width} px: a long task subject reads across the page, not down a narrow column`, async () => {
      const page = await look("/runs/wide/00000000", width, "run");
      try {
        const box = (await page.evaluate(`(() => {
          const dt = [...document.querySelectorAll(".facts dt")].find((d) => d.textContent === "Task");
          const main = document.querySelector("main").getBoundingClientRect();
          const dd = dt.nextElementSibling.getBoundingClientRect();
          const line = parseFloat(getComputedStyle(dt.nextElementSibling).lineHeight);
          return { width: dd.width, height: dd.height, main: main.width, line };
        })()`)) as { width: number; height: number; main: number; line: number };
        expect(await page.locator(".facts dd", { hasText: "Migrate the payroll exports" }).count()).toBe(1);
        expect(box.width).toBeGreaterThan(box.main * 0.6);
        expect(box.height).toBeLessThanOrEqual(box.line * 3 + 1);
      } finally {
        await page.context().close();
      }
    });
  }
});
