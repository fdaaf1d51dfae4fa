/**
 * The dashboard in a real headless Chromium, served by a real `pi-teams-hooks serve` on 127.0.0.1 over
 * a teams root made by real gate runs (test/helpers/dashboard-team.ts): the overview's numbers (runs
 * by hand left out of them), the runs table and its filters (with and without JavaScript), a run by
 * hand and a pass with a non-blocking error marked, a run's page, a run that appears live, a hook's
 * markup shown as text and never run, times in the viewer's zone, a phone and dark mode, and a
 * server started with --allow-remote that refuses a viewer without a key.
 *
 * `UPDATE_SCREENSHOTS=1 npx vitest run test/e2e/dashboard.test.ts` also writes the three pages to
 * docs/img/.
 */
import { existsSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../helpers/browser.js";
import { type DashboardTeams, HOSTILE_OUTPUT, makeDashboardTeams } from "../helpers/dashboard-team.js";
import { REPO_ROOT, ensureBuilt, runBin } from "../helpers/leader-rig.js";
import { type ServeProcess, createKey, startServe } from "../helpers/serve-rig.js";

const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === "1" ? path.join(REPO_ROOT, "docs", "img") : null;

/**
 * Runs in the page: the lowest WCAG contrast ratio between a text's colour and the background behind
 * it (the first opaque background up its ancestors), over every element that holds text of its own.
 */
const CONTRAST_PROBE = `(() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const bg = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || c[3] > 0) return c;
    }
    return rgb(getComputedStyle(document.documentElement).backgroundColor);
  };
  let worst = { ratio: 99, text: "" };
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent.trim()).join("");
    if (!own || el.closest("svg")) continue;
    const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(bg(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < worst.ratio) worst = { ratio, text: own.slice(0, 60) };
  }
  return worst;
})()`;

/** How long a page may take to say its stream is open: expect.poll's 1 s is too short on a busy machine. */
const LIVE = { timeout: 10_000 };

let teams: DashboardTeams;
let serve: ServeProcess;
let browser: Browser;

beforeAll(async () => {
  await ensureBuilt();
  [teams, browser] = await Promise.all([makeDashboardTeams(), launchBrowser()]);
  serve = await startServe(teams.root);
}, 240_000);

/**
 * The contexts a test opened, closed when it ends: a page left open keeps its live stream, and so its
 * renderer and the server, busy for the rest of the file (an overview fetches itself again on every run).
 */
const contexts: BrowserContext[] = [];

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});

afterAll(async () => {
  await browser?.close();
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  await teams?.cleanup();
});

/** A context of the test's own (a viewer with no cookies and no cache), closed when the test ends. */
async function newContext(options: Parameters<Browser["newContext"]>[0] = {}): Promise<BrowserContext> {
  const context = await browser.newContext(options);
  contexts.push(context);
  return context;
}

/**
 * A page at `url` (answered 200) in a context of the test's own, which notes the dialogs it opens. Each
 * context costs the browser a renderer (most of a test's CPU): a test that looks at a second URL with
 * the same settings goes there with `visit` in the same page.
 */
async function open(
  url: string,
  opts: {
    javaScript?: boolean;
    timezoneId?: string;
    colorScheme?: "light" | "dark";
    viewport?: { width: number; height: number };
  } = {},
): Promise<Page> {
  const context = await newContext({
    javaScriptEnabled: opts.javaScript ?? true,
    timezoneId: opts.timezoneId ?? "UTC",
    colorScheme: opts.colorScheme ?? "light",
    viewport: opts.viewport ?? { width: 1280, height: 800 },
  });
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  (page as Page & { dialogs?: string[] }).dialogs = dialogs;
  return visit(page, url);
}

/** `page` gone to `url`, which answered 200. */
async function visit(page: Page, url: string): Promise<Page> {
  const answer = await page.goto(url);
  expect(answer?.status(), url).toBe(200);
  return page;
}

/** The cells of a gate's row in a team's table on the overview, by their data keys. */
async function gateCells(page: Page, team: string, gate: string): Promise<Record<string, string>> {
  const row = page.locator(`section[aria-labelledby="team-${team}"] tr[data-gate="${gate}"]`);
  const cells: Record<string, string> = {};
  for (const key of ["runs24", "pass24", "runs7", "pass7"])
    cells[key] = (await row.locator(`[data-k="${key}"]`).textContent()) ?? "";
  return cells;
}

describe("overview", () => {
  it("counts each gate's runs and pass rate, and puts the held and the untrusted gate first", async () => {
    const page = await open(`${serve.url}/`);
    expect(await gateCells(page, "alpha", "on_task_completed.sh")).toEqual({
      runs24: "5",
      pass24: "60%",
      runs7: "5",
      pass7: "60%",
    });
    expect(await gateCells(page, "alpha", "on_idle.sh")).toEqual({
      runs24: "1",
      pass24: "100%",
      runs7: "1",
      pass7: "100%",
    });
    expect(await gateCells(page, "alpha", "on_task_failed.sh")).toMatchObject({ runs24: "1", pass24: "–" });
    // The run by hand (task 9) is in none of the figures above; the team says how many there were, and links them.
    const hand = page.locator('section[aria-labelledby="team-alpha"] [data-k="hand7"]');
    expect(await hand.textContent()).toBe("1 run by hand");
    expect(await hand.getAttribute("href")).toBe("/runs?team=alpha&trigger=hand");
    const attention = page.getByRole("region", { name: "Needs attention" });
    await expect.poll(() => attention.locator(".attn-held").textContent()).toContain("on_task_failed");
    expect(await attention.locator(".attn-held").textContent()).toContain("task #6");
    expect(await attention.locator(".attn-untrusted").textContent()).toMatch(
      /on_idle \(idle\) changed since it was approved/,
    );
    expect(await page.locator('section[aria-labelledby="team-beta"]').textContent()).toContain(
      "No gate ran in the last 7 days",
    );
    // Each gate's chart has an accessible name that reads out today's figures.
    const alpha = page.locator('section[aria-labelledby="team-alpha"]');
    const chart = alpha.locator('tr[data-gate="on_task_completed.sh"] svg[role="img"]');
    expect(await chart.getAttribute("aria-label")).toContain("today: 3 passed, 2 failed");
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, "dashboard-overview.png"), fullPage: true });
  });

  it("marks a gate whose passes let errors through: the pass rate alone would hide them", async () => {
    const page = await open(`${serve.url}/`);
    const figures = { runs24: "1", pass24: "100%", runs7: "1", pass7: "100%" };
    expect(await gateCells(page, "gamma", "on_task_completed.sh")).toEqual(figures);
    const gamma = page.locator('section[aria-labelledby="team-gamma"]');
    const badge = gamma.locator('tr[data-gate="on_task_completed.sh"] [data-k="nb7"]');
    expect(await badge.textContent()).toBe("1 non-blocking error");
    expect(await page.locator('section[aria-labelledby="team-alpha"] [data-k="nb7"]').count()).toBe(0);
    const runs = await visit(page, `${serve.url}/runs?team=gamma`);
    const outcome = runs.locator("#runs-body tr td .badge").first();
    const shown = [await outcome.textContent(), await outcome.getAttribute("class")];
    expect(shown).toEqual(["passed (error)", "badge badge-note"]);
    expect(await runs.locator("#runs-body tr td.stderr").first().textContent()).toBe("linter crashed");
  });

  it("shows the same numbers with JavaScript off", async () => {
    const page = await open(`${serve.url}/`, { javaScript: false });
    expect(await gateCells(page, "alpha", "on_task_completed.sh")).toEqual({
      runs24: "5",
      pass24: "60%",
      runs7: "5",
      pass7: "60%",
    });
    expect(await page.locator(".attn-untrusted").count()).toBe(1);
  });
});

describe("runs", () => {
  const rows = (page: Page) => page.locator("#runs-body tr");

  it("lists every run newest first, and the filters narrow the table (a plain form: also without JavaScript)", async () => {
    for (const javaScript of [true, false]) {
      const page = await open(`${serve.url}/runs`, { javaScript });
      expect(await rows(page).count()).toBeGreaterThanOrEqual(7);
      expect(await rows(page).first().getAttribute("data-name")).toMatch(/_idle_member-ada\.json$/);
      await page.getByLabel("Outcome", { exact: true }).selectOption("failed");
      await page.getByLabel("Team", { exact: true }).selectOption("alpha");
      await Promise.all([page.waitForURL(/outcome=failed/), page.getByRole("button", { name: "Filter" }).click()]);
      const names = await rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-name")));
      expect(names, `javaScript ${javaScript}`).toHaveLength(2);
      expect(names.join(" ")).toMatch(/task-4\.json .*task-2\.json/);
      await page.getByLabel("Member", { exact: true }).fill("brian");
      await page.getByLabel("Task", { exact: true }).fill("#2");
      await Promise.all([page.waitForURL(/task=%232/), page.getByRole("button", { name: "Filter" }).click()]);
      expect(await rows(page).count()).toBe(1);
      if (SCREENSHOTS && javaScript) {
        const all = await open(`${serve.url}/runs`);
        await all.screenshot({ path: path.join(SCREENSHOTS, "dashboard-runs.png"), fullPage: true });
      }
    }
  });

  it("marks the runs by hand, and the Fired by filter keeps them apart (also without JavaScript)", async () => {
    for (const javaScript of [true, false]) {
      const page = await open(`${serve.url}/runs?team=alpha`, { javaScript });
      const marked = (): Promise<string[]> =>
        rows(page).evaluateAll((trs) =>
          trs.filter((tr) => tr.textContent?.includes("by hand")).map((tr) => tr.getAttribute("data-name") ?? ""),
        );
      expect(
        (await marked()).some((name) => name.endsWith("_task-9.json")),
        `javaScript ${javaScript}`,
      ).toBe(true);
      expect((await marked()).some((name) => name.endsWith("_task-2.json"))).toBe(false);
      await page.getByLabel("Fired by", { exact: true }).selectOption("hand");
      await Promise.all([page.waitForURL(/trigger=hand/), page.getByRole("button", { name: "Filter" }).click()]);
      expect(await rows(page).count()).toBeGreaterThanOrEqual(1);
      expect((await marked()).length).toBe(await rows(page).count());
      await page.getByLabel("Fired by", { exact: true }).selectOption("leader");
      await Promise.all([page.waitForURL(/trigger=leader/), page.getByRole("button", { name: "Filter" }).click()]);
      expect(await rows(page).count()).toBeGreaterThanOrEqual(7);
      expect(await marked()).toEqual([]);
    }
  });

  it("says which filter it cannot read, and shows nothing rather than everything", async () => {
    const context = await newContext();
    const page = await context.newPage();
    const answer = await page.goto(`${serve.url}/runs?since=yesterday-ish&event=idle`);
    expect(answer?.status()).toBe(400);
    expect(await page.getByRole("alert").textContent()).toContain('since: "yesterday-ish" must be an age');
    expect(await rows(page).count()).toBe(0);
  });

  it("adds a new run at the top without a reload, within 2 s of its log", async () => {
    const page = await open(`${serve.url}/runs?team=alpha&event=task_completed`);
    await expect.poll(() => page.locator("#live-status").textContent(), LIVE).toMatch(/^Live/);
    const before = await rows(page).count();
    await page.evaluate("window.marker = true"); // gone after a reload
    await teams.run("task_completed", ["--task", "7", "--member", "ada"]);
    await page.locator('#runs-body tr[data-name$="_task-7.json"]').waitFor({ timeout: 2_000 });
    expect(await rows(page).count()).toBe(before + 1);
    expect(await rows(page).first().getAttribute("data-name")).toMatch(/_task-7\.json$/);
    expect(await page.evaluate("window.marker")).toBe(true);
    // A run the filter does not keep never shows.
    await teams.run("idle", ["--member", "brian"]);
    await teams.run("task_completed", ["--task", "8", "--member", "brian"]);
    await page.locator('#runs-body tr[data-name$="_task-8.json"]').waitFor({ timeout: 2_000 });
    expect(await page.locator('#runs-body tr[data-name*="_idle_"]').count()).toBe(0);
  });
});

describe("a run", () => {
  it("shows what logs show prints, the hook's markup as text that never runs, and the task's other runs", async () => {
    const list = await open(`${serve.url}/runs?team=alpha&task=2`);
    await Promise.all([list.waitForURL(/\/runs\/alpha\//), list.locator("#runs-body tr a").first().click()]);
    const page = list as Page & { dialogs?: string[] };
    const show = (await page.locator("#log-show").textContent()) ?? "";
    expect(show).toContain("event:        task_completed");
    expect(show).toContain("exit:         exit code 1");
    expect(show).toContain(HOSTILE_OUTPUT);
    expect(show).toContain("<b>not bold</b>");
    expect(await page.locator("#log-show img, #log-show b, #log-show script").count()).toBe(0);
    // Only the dashboard's own script is on the page, and nothing opened a dialog.
    expect(await page.locator("script").evaluateAll((s) => s.map((e) => e.getAttribute("src")))).toEqual([
      "/assets/app.js",
    ]);
    await page.waitForTimeout(200);
    expect(page.dialogs).toEqual([]);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toMatch(/on_task_completed\.sh\s+failed/);
    expect(await page.locator("h1").textContent()).not.toContain("<");
    expect(await page.getByRole("heading", { name: "Other runs of task #2" }).count()).toBe(1);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, "dashboard-run.png"), fullPage: true });
  });

  it("answers 404 for a run or a team that is not there, and never reads outside the teams root", async () => {
    const context = await newContext();
    const page = await context.newPage();
    expect((await page.goto(`${serve.url}/runs/alpha/no-such-run`))?.status()).toBe(404);
    expect((await page.goto(`${serve.url}/runs/..%2F..%2Fetc/passwd`))?.status()).toBe(404);
    expect((await page.goto(`${serve.url}/runs/ghost/abc`))?.status()).toBe(404);
  });
});

describe("for people", () => {
  it("shows times in the viewer's time zone (UTC without JavaScript)", async () => {
    const tokyo = await open(`${serve.url}/runs?team=alpha`, { timezoneId: "Asia/Tokyo" });
    const time = tokyo.locator("#runs-body time").first();
    const iso = (await time.getAttribute("datetime")) ?? "";
    const local = new Date(Date.parse(iso) + 9 * 3600_000).toISOString();
    await expect.poll(() => time.textContent()).toBe(`${local.slice(0, 10)} ${local.slice(11, 19)} GMT+9`);
    const plain = await open(`${serve.url}/runs?team=alpha`, { javaScript: false });
    expect(await plain.locator("#runs-body time").first().textContent()).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
    );
  });

  it("fits a phone's width, and follows a dark system theme", async () => {
    const phone = await open(`${serve.url}/`, { viewport: { width: 390, height: 844 }, colorScheme: "dark" });
    const widths = (await phone.evaluate(
      "({ page: document.documentElement.scrollWidth, screen: window.innerWidth })",
    )) as { page: number; screen: number };
    expect(widths.page).toBeLessThanOrEqual(widths.screen);
    const background = await phone.evaluate("getComputedStyle(document.documentElement).backgroundColor");
    expect(background).toBe("rgb(13, 17, 23)");
    await phone.emulateMedia({ colorScheme: "light" });
    expect(await phone.evaluate("getComputedStyle(document.documentElement).backgroundColor")).toBe(
      "rgb(255, 255, 255)",
    );
  });

  it("keeps text at a contrast of at least 4.5:1 in light and dark, and names every control and chart", async () => {
    const page = await open(`${serve.url}/`);
    for (const colorScheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme });
      for (const route of ["/", "/runs", "/runs?since=nonsense"]) {
        await page.goto(`${serve.url}${route}`);
        const worst = (await page.evaluate(CONTRAST_PROBE)) as { ratio: number; text: string };
        expect(worst.ratio, `${colorScheme} ${route}: "${worst.text}"`).toBeGreaterThanOrEqual(4.5);
      }
    }
    const runs = await visit(page, `${serve.url}/runs`);
    for (const label of ["Team", "Event", "Outcome", "Member", "Hook", "Task", "Since", "Fired by"]) {
      expect(await runs.getByLabel(label, { exact: true }).count(), label).toBe(1);
    }
    expect(await runs.getByRole("navigation", { name: "Dashboard" }).count()).toBe(1);
    expect(await runs.getByRole("table", { name: /newest runs/ }).count()).toBe(1);
    const overview = await visit(page, `${serve.url}/`);
    const charts = overview.getByRole("img");
    expect(await charts.count()).toBeGreaterThanOrEqual(3);
    for (const name of await charts.evaluateAll((els) => els.map((e) => e.getAttribute("aria-label") ?? "")))
      expect(name).toMatch(/^Last 7 days \(UTC\): /);
  });

  it("sends a strict Content-Security-Policy and nothing from another origin", async () => {
    const page = await open(`${serve.url}/`);
    const answer = await page.goto(`${serve.url}/`);
    const csp = answer?.headers()["content-security-policy"] ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    const origins = await page.evaluate(() =>
      performance.getEntriesByType("resource").map((e) => new URL(e.name).origin),
    );
    expect(new Set(origins)).toEqual(new Set([new URL(serve.url).origin]));
  });
});

describe("the overview, live", () => {
  it("counts a new run of the leader's without a reload, and a run by hand apart", async () => {
    const page = await open(`${serve.url}/`);
    await expect.poll(() => page.locator("#live-status").textContent(), LIVE).toMatch(/^Live/);
    const alpha = page.locator('section[aria-labelledby="team-alpha"]');
    const runs24 = alpha.locator('tr[data-gate="on_task_completed.sh"] [data-k="runs24"]');
    const hand7 = alpha.locator('[data-k="hand7"]');
    const before = Number(await runs24.textContent());
    const handBefore = Number.parseInt((await hand7.textContent()) ?? "", 10);
    await page.evaluate("window.marker = true");
    await teams.run("task_completed", ["--task", "3"]);
    await teams.complete(3);
    await expect.poll(() => runs24.textContent(), { timeout: 10_000 }).toBe(String(before + 1));
    await expect.poll(() => hand7.textContent(), { timeout: 10_000 }).toBe(`${handBefore + 1} runs by hand`);
    expect(await page.evaluate("window.marker")).toBe(true);
  });
});

/** Reads `/events?…` until `count` runs arrived or `ms` passed; the run events' log names, in order. */
async function streamedRuns(
  url: string,
  query: string,
  count: number,
  ms: number,
  headers: Record<string, string> = {},
): Promise<string[]> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const names: string[] = [];
    let text = "";
    const req = request({ host: hostname, port, path: `/events?${query}`, headers }, (res) => {
      res.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk;
        for (const m of text.matchAll(/^data: (\{.*\})$/gm)) {
          const name = (JSON.parse(m[1] ?? "{}") as { name?: string }).name;
          if (name && !names.includes(name)) names.push(name);
        }
        if (names.length >= count) done();
      });
    });
    const timer = setTimeout(() => done(), ms);
    const done = (): void => {
      clearTimeout(timer);
      req.destroy();
      resolve(names);
    };
    req.on("error", () => done());
    req.end();
  });
}

describe("live streams", () => {
  it("catch up from where the page (after=) or the broken connection (Last-Event-ID) left off, in order, filter applied", async () => {
    const page = await open(`${serve.url}/runs?team=alpha&event=task_completed`);
    const cursors = await page
      .locator("#runs-body tr")
      .evaluateAll((trs) =>
        trs.map((tr) => [tr.getAttribute("data-cursor") ?? "", tr.getAttribute("data-name") ?? ""]),
      );
    expect(cursors.length).toBeGreaterThanOrEqual(5);
    const [oldest, oldestName] = cursors.at(-1) ?? ["", ""];
    const newerNames = cursors
      .slice(0, -1)
      .map(([, name]) => name)
      .reverse();
    const query = `view=runs&team=alpha&event=task_completed`;
    expect(
      await streamedRuns(serve.url, `${query}&after=${encodeURIComponent(oldest)}`, newerNames.length, 5_000),
    ).toEqual(newerNames);
    expect(await streamedRuns(serve.url, query, 1, 5_000, { "Last-Event-ID": oldest })).toEqual(newerNames.slice(0, 1));
    expect(newerNames).not.toContain(oldestName);
    // HEAD says what a GET would start, and ends.
    const head = await page.request.head(`${serve.url}/events?${query}`);
    expect([head.status(), head.headers()["content-type"]]).toEqual([200, "text/event-stream; charset=utf-8"]);
  });

  it("watching a team that has no hook-logs/ yet does not make one (the dashboard writes nothing in a team)", async () => {
    const page = await open(`${serve.url}/runs`);
    await expect.poll(() => page.locator("#live-status").textContent(), LIVE).toMatch(/^Live/);
    await page.waitForTimeout(300); // the followers of both teams have started
    expect(existsSync(path.join(teams.root, "beta", "hook-logs"))).toBe(false);
    expect(existsSync(path.join(teams.root, "beta"))).toBe(true);
  });

  it("a viewer that leaves while its stream is being opened leaves nothing behind: the server still stops at once", async () => {
    const own = await startServe(teams.root);
    const { hostname, port } = new URL(own.url);
    for (let i = 0; i < 40; i++) {
      await new Promise<void>((resolve) => {
        const req = request({
          host: hostname,
          port,
          path: "/events?view=runs",
          headers: { Accept: "text/event-stream" },
        });
        req.on("error", () => resolve());
        req.on("close", () => resolve());
        req.end(() => setImmediate(() => req.destroy()));
      });
    }
    expect(await own.stop(10_000)).toMatchObject({ code: 0, signal: null });
  });
});

describe("a server started with --allow-remote", () => {
  it("answers 401 to a viewer without a key, for pages, streams and assets alike", async () => {
    const remote = await startServe(teams.root, ["--allow-remote"]);
    try {
      // A viewer's requests with the context's cookies (none), without a page: nothing here needs one drawn.
      const viewer = (await newContext()).request;
      for (const route of ["/", "/runs", "/events?view=runs", "/assets/app.js"]) {
        const answer = await viewer.get(`${remote.url}${route}`);
        expect(answer.status(), route).toBe(401);
      }
    } finally {
      await remote.stop();
    }
  });

  it("lets in a key with logs:read through its one-time login link (its teams only) or its bearer header", async () => {
    const remote = await startServe(teams.root, ["--allow-remote"]);
    try {
      const key = await createKey(teams.root, [
        "--name",
        "viewer",
        "--scopes",
        "logs:read",
        "--teams",
        "alpha",
        "--url",
        remote.url,
      ]);
      const login = await runBin(["serve", "keys", "login", "viewer", "--teams-root", teams.root, "--url", remote.url]);
      expect(login.code).toBe(0);
      const link = login.stdout.trimEnd().split("\n").pop() ?? "";
      expect(link).toMatch(new RegExp(`^${remote.url}/login\\?token=`));
      // A link checker's or a preview's fetch (GET, HEAD) spends nothing and gets no session.
      const preview = (await newContext()).request;
      expect((await preview.head(link)).status()).toBe(200);
      const peek = await preview.get(link);
      expect(peek.status()).toBe(200);
      expect(peek.headers()["set-cookie"]).toBeUndefined();
      const context = await newContext();
      const page = await context.newPage();
      await page.goto(link);
      await Promise.all([page.waitForURL(`${remote.url}/`), page.getByRole("button", { name: "Log in" }).click()]);
      expect(await page.locator('section[aria-labelledby="team-alpha"]').count()).toBe(1);
      expect(await page.locator('section[aria-labelledby="team-beta"]').count()).toBe(0);
      expect((await page.goto(`${remote.url}/runs?team=alpha`))?.status()).toBe(200);
      const again = await (await newContext()).newPage();
      await again.goto(link);
      const [spent] = await Promise.all([
        again.waitForResponse((r) => r.url() === `${remote.url}/login`),
        again.getByRole("button", { name: "Log in" }).click(),
      ]);
      expect(spent.status()).toBe(401);
      const bearer = await again.request.get(`${remote.url}/runs`, { headers: { Authorization: `Bearer ${key}` } });
      expect(bearer.status()).toBe(200);
      expect(await bearer.text()).not.toContain('data-team="beta"');

      // A link clicked on another site (a mail read in webmail): the session still starts.
      const fresh =
        (await runBin(["serve", "keys", "login", "viewer", "--teams-root", teams.root, "--url", remote.url])).stdout
          .trimEnd()
          .split("\n")
          .pop() ?? "";
      const token = new URL(fresh).searchParams.get("token") ?? "";
      // The other site also tries to post the token itself (a login into its own key): refused.
      const mail = createServer((_req, res) =>
        res
          .writeHead(200, { "Content-Type": "text/html" })
          .end(
            `<a id="go" href="${fresh}">log in</a><form id="forged" method="post" action="${remote.url}/login"><input name="token" value="${token}"><button>go</button></form>`,
          ),
      );
      await new Promise<void>((resolve) => mail.listen(0, "127.0.0.1", resolve));
      try {
        const elsewhere = await (await newContext()).newPage();
        const mailPage = `http://localhost:${(mail.address() as AddressInfo).port}/`; // another site than 127.0.0.1
        await elsewhere.goto(mailPage);
        const [forged] = await Promise.all([
          elsewhere.waitForResponse((r) => r.url() === `${remote.url}/login`),
          elsewhere.click("#forged button"),
        ]);
        expect(forged.status()).toBe(403);
        await elsewhere.goto(mailPage);
        await elsewhere.click("#go");
        await Promise.all([
          elsewhere.waitForURL(`${remote.url}/`),
          elsewhere.getByRole("button", { name: "Log in" }).click(),
        ]);
        await expect.poll(() => elsewhere.locator('section[aria-labelledby="team-alpha"]').count()).toBe(1);
      } finally {
        mail.close();
      }
    } finally {
      await remote.stop();
    }
  });
});
