/**
 * The overview: per team and per gate, runs and pass rate over the last 24 hours and 7 days, median
 * and p95 duration, a chart of each day's outcomes; above them, what needs the lead now (gates held
 * for a decision, gates whose trust is gone, teams that cannot be read). Read through the same
 * library as `logs stats` (logs/query.ts `streamLogs`, logs/stats.ts `statsSample`), only the last
 * 7 days' files, each kept as a small sample between requests (`SampleCache`). As in `logs stats`,
 * runs by hand (`pi-teams-hooks run`) are not the team's gates at work: counted apart, in no figure.
 */
import path from "node:path";
import type { HookEventName } from "../contract/contract.js";
import { describeError } from "../contract/errors.js";
import { inspectConfig } from "../doctor/config-view.js";
import { percentile, statsSample } from "../logs/stats.js";
import { triggerOf } from "../logs/record.js";
import type { HookLogRecord } from "../logs/hook-log.js";
import { streamLogs } from "../logs/query.js";
import { resolveTeamSetup } from "../team/setup.js";
import { type Html, html, queryString } from "./html.js";
import { durationText, rateText, timeOf } from "./layout.js";
import { heldGates, type HeldGate, type TeamRef } from "./teams.js";
import { type HeldEvent, readHolds } from "../holds/holds-view.js";
import { describeLeaderStatus, leaderStatus, type LeaderStatus } from "../team/leader-lock.js";

const DAY_MS = 86_400_000;
const CHART_DAYS = 7;

/** One gate of one team, as the overview shows it. */
interface GateSummary {
  hook: string;
  event: HookEventName;
  day: Tally;
  week: Tally;
  /** Over the 7 days, runs that ran (not skipped, not a held gate's decision). */
  p50Ms: number | null;
  p95Ms: number | null;
  /** Oldest first, one per day (UTC), the last being today. */
  daily: Tally[];
  shadow: boolean;
  /** Passes of the 7 days that let an error through (a Claude Code gate's non-blocking error). */
  nonBlocking: number;
}

/** Runs that ended; `passed` of them; `failed` also counts timed out and error; `deferred` is still held or was. */
interface Tally {
  runs: number;
  passed: number;
  failed: number;
  deferred: number;
}

interface UntrustedGate {
  gate: string;
  event: HookEventName;
  state: string;
  detail: string | null;
}

interface TeamOverview {
  team: TeamRef;
  gates: GateSummary[];
  /** Members whose runs failed most in the 7 days, most first (at most 5). */
  members: Array<{ member: string; failures: number; runs: number }>;
  held: HeldGate[];
  /** Whether a leader holds the team now (its lock and heartbeat). */
  leader: LeaderStatus;
  /** Events a running leader holds because their gate could not judge the work (hook-state/holds.json). */
  waiting: HeldEvent[];
  untrusted: UntrustedGate[];
  /** Logs that could not be read (each is named by `logs`). */
  unreadable: number;
  /** Runs by hand (`pi-teams-hooks run`) in the 7 days: in none of the figures. */
  handRuns: number;
  /** A problem that kept part of the overview from being worked out (config, trust record). */
  problems: string[];
}

export interface Sample {
  hook: string;
  event: HookEventName;
  outcome: string;
  durationMs: number | null;
  timeMs: number;
  member: string | null;
  skipped: boolean;
  shadow: boolean;
  /** Fired by hand (`pi-teams-hooks run`): left out of the figures. */
  hand: boolean;
  /** A pass with a non-blocking error. */
  nonBlocking: boolean;
}

/**
 * What the overview keeps of each team's logs between two requests: a sample per log of the last
 * 7 days, by file name. A request lists the folder and reads only the logs it has not seen (and
 * forgets those that are gone), so the second overview of 10,000 logs opens no file, and the
 * overview fetched again while runs land reads just those runs. One refresh per team at a time.
 */
export class SampleCache {
  readonly #teams = new Map<string, { samples: Map<string, Sample>; refresh: Promise<number> | null }>();

  /** The team's samples from `sinceMs` on, and how many logs could not be read. */
  async samples(teamDir: string, sinceMs: number): Promise<{ samples: Sample[]; unreadable: number }> {
    let entry = this.#teams.get(teamDir);
    if (!entry) {
      entry = { samples: new Map(), refresh: null };
      this.#teams.set(teamDir, entry);
    }
    const team = entry;
    // A refresh under way may have listed the folder before the caller's run landed: wait, then look again.
    while (team.refresh) await team.refresh.catch(() => 0);
    const refresh = this.#refresh(teamDir, team.samples, sinceMs);
    team.refresh = refresh;
    try {
      const unreadable = await refresh;
      return { samples: [...team.samples.values()].filter((s) => s.timeMs >= sinceMs), unreadable };
    } finally {
      team.refresh = null;
    }
  }

  async #refresh(teamDir: string, samples: Map<string, Sample>, sinceMs: number): Promise<number> {
    let unreadable = 0;
    const present = new Set<string>();
    const lacking = (name: string): boolean => {
      present.add(name);
      return !samples.has(name);
    };
    await streamLogs(
      teamDir,
      { filter: { sinceMs }, names: lacking, inSlices: true, onProblem: () => void (unreadable += 1) },
      (row) => [row.name, sampleOf(row.record)] as const,
      ([name, sample]) => samples.set(name, sample),
    );
    for (const name of samples.keys()) if (!present.has(name)) samples.delete(name);
    for (const [name, sample] of samples) if (sample.timeMs < sinceMs) samples.delete(name);
    return unreadable;
  }
}

function sampleOf(record: HookLogRecord): Sample {
  const s = statsSample(record);
  return {
    hook: s.hook,
    event: s.event,
    outcome: s.outcome,
    durationMs: s.decided || s.skipped ? null : s.durationMs,
    timeMs: Date.parse(record.startedAt),
    member: record.invocation.memberName ?? null,
    skipped: s.skipped === true,
    shadow: s.shadow !== undefined,
    hand: triggerOf(record) === "hand",
    nonBlocking: s.nonBlocking === true,
  };
}

export async function teamOverview(
  team: TeamRef,
  opts: { nowMs: number; env: Readonly<Record<string, string | undefined>>; cache: SampleCache },
): Promise<TeamOverview> {
  const problems: string[] = [];
  let unreadable = 0;
  let samples: Sample[] = [];
  try {
    ({ samples, unreadable } = await opts.cache.samples(team.dir, overviewSince(opts.nowMs)));
  } catch (error) {
    problems.push(`hook logs: ${describeError(error)}`);
  }
  const [held, waiting, untrusted, leader] = await Promise.all([
    heldGates(team.dir, opts.nowMs, team.withheld === true).catch((error: unknown) => {
      problems.push(`deferred gates: ${describeError(error)}`);
      return [];
    }),
    readHolds(team.dir).then((read) => {
      if (read.problem) problems.push(`held events: ${read.problem}`);
      return read.holds;
    }),
    untrustedGates(team, opts.env).catch((error: unknown) => {
      problems.push(`gates and trust: ${describeError(error)}`);
      return [];
    }),
    leaderStatus(team.dir, opts.nowMs),
  ]);
  const week = opts.nowMs - CHART_DAYS * DAY_MS;
  const handRuns = samples.filter((s) => s.hand && s.timeMs > week).length;
  const members = bouncing(samples, opts.nowMs);
  return {
    team,
    gates: summarise(samples, opts.nowMs),
    members,
    held,
    leader,
    waiting,
    untrusted,
    unreadable,
    handRuns,
    problems,
  };
}

/** The oldest start the overview counts: the first chart day's midnight (UTC), or 7 × 24 hours ago if earlier. */
export function overviewSince(nowMs: number): number {
  return Math.min(startOfDay(nowMs) - (CHART_DAYS - 1) * DAY_MS, nowMs - CHART_DAYS * DAY_MS);
}

function startOfDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

function emptyTally(): Tally {
  return { runs: 0, passed: 0, failed: 0, deferred: 0 };
}

function count(tally: Tally, outcome: string): void {
  tally.runs += 1;
  if (outcome === "passed") tally.passed += 1;
  else if (outcome === "deferred") tally.deferred += 1;
  else tally.failed += 1;
}

/** One summary per hook and event, in the order `logs stats` lists them; runs by hand and skipped runs are in none. */
export function summarise(samples: readonly Sample[], nowMs: number): GateSummary[] {
  const today = startOfDay(nowMs);
  const groups = new Map<string, GateSummary & { durations: number[] }>();
  for (const s of samples) {
    if (s.skipped || s.hand) continue;
    const id = `${s.hook}\u0000${s.event}`;
    let g = groups.get(id);
    if (!g) {
      const daily = Array.from({ length: CHART_DAYS }, emptyTally);
      const tallies = { day: emptyTally(), week: emptyTally(), daily };
      const none = { p50Ms: null, p95Ms: null, shadow: false, nonBlocking: 0, durations: [] };
      g = { hook: s.hook, event: s.event, ...tallies, ...none };
      groups.set(id, g);
    }
    g.shadow ||= s.shadow;
    if (s.timeMs > nowMs - CHART_DAYS * DAY_MS) count(g.week, s.outcome);
    if (s.nonBlocking && s.timeMs > nowMs - CHART_DAYS * DAY_MS) g.nonBlocking += 1;
    if (s.timeMs > nowMs - DAY_MS) count(g.day, s.outcome);
    const slot = CHART_DAYS - 1 - Math.floor((today - startOfDay(s.timeMs)) / DAY_MS);
    const daily = g.daily[slot];
    if (daily) count(daily, s.outcome);
    if (s.durationMs !== null && s.timeMs > nowMs - CHART_DAYS * DAY_MS) g.durations.push(s.durationMs);
  }
  return [...groups.values()]
    .map(({ durations, ...g }) => {
      const sorted = durations.sort((a, b) => a - b);
      return {
        ...g,
        p50Ms: sorted.length ? percentile(sorted, 0.5) : null,
        p95Ms: sorted.length ? percentile(sorted, 0.95) : null,
      };
    })
    .sort((a, b) => (a.hook === b.hook ? (a.event < b.event ? -1 : 1) : a.hook < b.hook ? -1 : 1));
}

function bouncing(samples: readonly Sample[], nowMs: number): TeamOverview["members"] {
  const byMember = new Map<string, { failures: number; runs: number }>();
  for (const s of samples) {
    if (s.skipped || s.hand || s.member === null || s.timeMs <= nowMs - CHART_DAYS * DAY_MS) continue;
    const m = byMember.get(s.member) ?? { failures: 0, runs: 0 };
    m.runs += 1;
    if (s.outcome !== "passed" && s.outcome !== "deferred") m.failures += 1;
    byMember.set(s.member, m);
  }
  return [...byMember]
    .filter(([, m]) => m.failures > 0)
    .map(([member, m]) => ({ member, ...m }))
    .sort((a, b) => b.failures - a.failures || (a.member < b.member ? -1 : 1))
    .slice(0, 5);
}

/** Gates whose events are held until the lead approves them (`pi-teams-hooks trust`), as `config` sees them. */
async function untrustedGates(
  team: TeamRef,
  env: Readonly<Record<string, string | undefined>>,
): Promise<UntrustedGate[]> {
  const setup = await resolveTeamSetup({ teamDir: team.dir, env, processCwd: team.dir });
  const view = await inspectConfig(setup);
  const out: UntrustedGate[] = [];
  for (const [event, ev] of Object.entries(view.events) as Array<
    [HookEventName, (typeof view.events)[HookEventName]]
  >) {
    for (const gate of ev.gates) {
      if (gate.trust === "changed" || gate.trust === "new")
        out.push({
          gate: gate.gate,
          event,
          state: gate.trust === "new" ? "new, not yet approved" : "changed since it was approved",
          detail: gate.trustDetail,
        });
      else if (gate.insecure) out.push({ gate: gate.gate, event, state: "refused as insecure", detail: gate.insecure });
    }
    for (const gate of ev.missing)
      out.push({ gate: gate.gate, event, state: "approved but no longer runs", detail: gate.trustDetail });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The page

export function overviewBody(teams: readonly TeamOverview[], nowMs: number): Html {
  const attention = teams.flatMap((t) => [
    ...t.held.map((h) => {
      const gate = html`<a href="${runHref(t.team.name, h.logName ?? h.runId)}">${h.gate}</a>`;
      const until = h.expired ? "expired: the leader fails it" : html`until ${timeOf(h.expiresAt)}`;
      const reason = h.reason ? html`: ${h.reason}` : "";
      const what = html`${gate} (${h.event}, task #${h.taskId}) held since ${timeOf(h.deferredAt)}, ${until}${reason}`;
      return html`<li class="attn attn-held"><strong>Deferred</strong> ${t.team.name}: ${what}</li>`;
    }),
    ...t.waiting.map((w) => {
      const title = w.cause === "approval" ? "Waiting for approval" : "Held (our fault)";
      const hook = w.hook ?? "?";
      const gate = w.log ? html`<a href="${runHref(t.team.name, path.basename(w.log))}">${hook}</a>` : hook;
      const task = w.taskId ? `, task #${w.taskId}` : "";
      const what = html`${gate} (${w.event}${task}) held since ${timeOf(w.since)}, not failed: ${w.reason}`;
      return html`<li class="attn attn-held"><strong>${title}</strong> ${t.team.name}: ${what}</li>`;
    }),
    ...t.untrusted.map((u) => {
      const detail = u.detail ? html` (${u.detail})` : "";
      const how = html`its events are held until the lead approves it with <code>pi-teams-hooks trust</code>`;
      const what = html`${u.gate} (${u.event}) ${u.state}${detail}: ${how}`;
      return html`<li class="attn attn-untrusted"><strong>Untrusted</strong> ${t.team.name}: ${what}</li>`;
    }),
    ...t.problems.map(
      (p) => html`<li class="attn attn-problem"><strong>Cannot read</strong> ${t.team.name}: ${p}</li>`,
    ),
  ]);
  const noTeam = html`<p>No team under the teams root (a team is a folder with a <code>config.json</code>).</p>`;
  const attentionList =
    attention.length > 0
      ? html`<ul class="attn-list">${attention}</ul>`
      : html`<p class="quiet">Nothing is held or untrusted.</p>`;
  return html`<h1>Overview</h1>
<section aria-labelledby="attention-h" class="attention">
<h2 id="attention-h">Needs attention</h2>
${attentionList}
</section>
${teams.length === 0 ? noTeam : teams.map((t) => teamSection(t, nowMs))}`;
}

function teamSection(t: TeamOverview, nowMs: number): Html {
  const id = `team-${t.team.name}`;
  const rows = t.gates.map((g) => gateRow(t.team.name, g, nowMs));
  const head = [
    html`<th scope="col">Gate</th><th scope="col">Event</th>`,
    html`<th scope="col" class="num">Runs 24 h</th><th scope="col" class="num">Pass 24 h</th>`,
    html`<th scope="col" class="num">Runs ${CHART_DAYS} d</th><th scope="col" class="num">Pass ${CHART_DAYS} d</th>`,
    html`<th scope="col" class="num">Median</th><th scope="col" class="num">p95</th><th scope="col">Per day</th>`,
  ];
  const failedHref = (member: string): string =>
    `/runs${queryString({ team: t.team.name, member, outcome: "failed,timed_out,error" })}`;
  const members = t.members.map(
    (m, i) => html`${i > 0 ? ", " : ""}<a href="${failedHref(m.member)}">${m.member}</a> ${m.failures} of ${m.runs}`,
  );
  const logs = html`<code>pi-teams-hooks logs --team-dir …</code>`;
  const unreadable = html`<p class="warn">${t.unreadable} log file(s) could not be read: ${logs} names them.</p>`;
  return html`<section class="team" aria-labelledby="${id}">
<h2 id="${id}"><a href="/runs${queryString({ team: t.team.name })}">${t.team.name}</a></h2>
${leaderLine(t.leader)}
${
  t.gates.length === 0
    ? html`<p class="quiet">No gate ran in the last ${CHART_DAYS} days.</p>`
    : html`<div class="table-wrap"><table class="gates">
<caption>Gates of ${t.team.name}: the last 24 hours and ${CHART_DAYS} days</caption>
<thead><tr>${head}</tr></thead>
<tbody>${rows}</tbody>
</table></div>`
}
${t.members.length > 0 ? html`<p class="members">Most failed runs (${CHART_DAYS} d): ${members}</p>` : ""}
${t.handRuns > 0 ? handNote(t.team.name, t.handRuns) : ""}
${t.unreadable > 0 ? unreadable : ""}
</section>`;
}

/** Whether a leader runs the team's gates: running, stale (its process gone or its heartbeat stopped) or none. */
function leaderLine(leader: LeaderStatus): Html {
  const cls = leader.state === "running" ? "quiet" : "warn";
  return html`<p class="${cls} leader" data-leader="${leader.state}">Leader: ${describeLeaderStatus(leader)}</p>`;
}

/** The passes of the 7 days that let an error through: a pass rate alone would hide them. */
function nonBlockingBadge(runs: number): Html {
  if (runs === 0) return html``;
  return html` <span class="badge badge-note" data-k="nb7">${runs} non-blocking error${runs === 1 ? "" : "s"}</span>`;
}

/** Runs by hand are counted apart: said under the team's figures, with a link to them. */
function handNote(team: string, runs: number): Html {
  const href = `/runs${queryString({ team, trigger: "hand" })}`;
  const what = `${runs} run${runs === 1 ? "" : "s"} by hand`;
  const link = html`<a href="${href}" data-k="hand7">${what}</a>`;
  const tool = html`<code>pi-teams-hooks run</code>`;
  return html`<p class="quiet hand-runs">${CHART_DAYS} d: ${link} (${tool}), in none of these figures.</p>`;
}

function gateRow(team: string, g: GateSummary, nowMs: number): Html {
  const runs = `/runs${queryString({ team, hook: g.hook, event: g.event })}`;
  const shadow = g.shadow ? html` <span class="badge badge-note">shadow</span>` : "";
  const marks = html`${shadow}${nonBlockingBadge(g.nonBlocking)}`;
  const dayRate = rateText(g.day.passed, g.day.runs - g.day.deferred);
  const weekRate = rateText(g.week.passed, g.week.runs - g.week.deferred);
  return html`<tr data-gate="${g.hook}" data-event="${g.event}">
<th scope="row"><a href="${runs}">${g.hook}</a>${marks}</th>
<td>${g.event}</td><td class="num" data-k="runs24">${g.day.runs}</td><td class="num" data-k="pass24">${dayRate}</td>
<td class="num" data-k="runs7">${g.week.runs}</td><td class="num" data-k="pass7">${weekRate}</td>
<td class="num" data-k="p50">${durationText(g.p50Ms)}</td><td class="num" data-k="p95">${durationText(g.p95Ms)}</td>
<td>${dayChart(g.daily, nowMs)}</td></tr>`;
}

/** Stacked bars, one per day: passed below, failed above it, deferred on top. Colours come from the stylesheet. */
function dayChart(daily: readonly Tally[], nowMs: number): Html {
  const top = Math.max(1, ...daily.map((d) => d.runs));
  const height = 28;
  const bar = 9;
  const label = daily
    .map(
      (d, i) =>
        `${dayName(nowMs, daily.length - 1 - i)}: ${d.passed} passed, ${d.failed} failed${d.deferred ? `, ${d.deferred} deferred` : ""}`,
    )
    .join("; ");
  const bars = daily.map((d, i) => {
    const x = i * (bar + 3);
    const scale = (n: number): number => (n / top) * height;
    let y = height;
    const part = (n: number, cls: string): Html => {
      if (n === 0) return html``;
      const h = Math.max(1, scale(n));
      y -= h;
      return html`<rect class="${cls}" x="${x}" y="${y.toFixed(1)}" width="${bar}" height="${h.toFixed(1)}"/>`;
    };
    const empty = html`<rect class="bar-none" x="${x}" y="${height - 1}" width="${bar}" height="1"/>`;
    const none = d.runs === 0 ? empty : "";
    return html`${part(d.passed, "bar-pass")}${part(d.failed, "bar-fail")}${part(d.deferred, "bar-defer")}${none}`;
  });
  const width = daily.length * (bar + 3) - 3;
  const aria = `Last ${daily.length} days (UTC): ${label}`;
  const box = html`viewBox="0 0 ${width} ${height}" width="${width}" height="${height}"`;
  return html`<svg class="chart" role="img" aria-label="${aria}" ${box}><title>${label}</title>${bars}</svg>`;
}

function dayName(nowMs: number, daysAgo: number): string {
  return daysAgo === 0 ? "today" : new Date(startOfDay(nowMs) - daysAgo * DAY_MS).toISOString().slice(0, 10);
}

export function runHref(team: string, run: string): string {
  return `/runs/${encodeURIComponent(team)}/${encodeURIComponent(run.replace(/\.json$/, ""))}`;
}
