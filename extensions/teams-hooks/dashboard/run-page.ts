/**
 * One run's page: what `logs show` prints for it (logs/format.ts `formatShow`: context, command,
 * exit, timing, policy and its actions, stdout and stderr), with the verdict the hook gave, a summary
 * at the top, and the task's other runs. The log is found as `logs show` finds it (logs/find.ts
 * `pickRun`: a file name or stem, a run id or a prefix of one) and read by the same reader.
 */
import { formatShow, hookName, policyActions, runWord, decisionWord, shortRunId } from "../logs/format.js";
import { pickRun } from "../logs/find.js";
import type { LogRow } from "../logs/query.js";
import { taskIdOf } from "../logs/record.js";
import { MAX_WRITTEN_LOG_BYTES, readHookLog } from "../logs/hook-log.js";
import { shownRecord } from "../logs/shown.js";
import { type Html, html, queryString } from "./html.js";
import { durationText, outcomeBadge, timeOf } from "./layout.js";
import { type RunRow, heldWord, runRowHtml, RUN_COLUMNS, shownRow, taskRuns } from "./runs.js";
import type { TeamRef } from "./teams.js";

type RunLookup =
  | { kind: "found"; row: LogRow; others: RunRow[] }
  | { kind: "none" }
  | { kind: "ambiguous"; rows: RunRow[] }
  | { kind: "unreadable"; message: string };

export async function findRun(team: TeamRef, id: string): Promise<RunLookup> {
  const picked = await pickRun(team.dir, id, () => undefined, 0, MAX_WRITTEN_LOG_BYTES);
  if (picked.kind === "none") return { kind: "none" };
  if (picked.kind === "ambiguous") return { kind: "ambiguous", rows: picked.rows.map((row) => shownRow(team, row)) };
  const read = await readHookLog(picked.entry.file, { maxBytes: MAX_WRITTEN_LOG_BYTES });
  if (!read.ok) return { kind: "unreadable", message: read.problem.message };
  const record = shownRecord(read.record);
  const row: LogRow = { file: picked.entry.file, name: picked.entry.name, record };
  const taskId = taskIdOf(record);
  const others = taskId === null ? [] : (await taskRuns(team, taskId)).filter((r) => r.row.name !== row.name);
  return { kind: "found", row, others };
}

export function runBody(team: TeamRef, lookup: Exclude<RunLookup, { kind: "none" | "unreadable" }>): Html {
  if (lookup.kind === "ambiguous") {
    return html`<h1>Several runs match</h1><p>Pick one:</p>${runsTable(lookup.rows, "Runs that match")}`;
  }
  const { row, others } = lookup;
  const { record } = row;
  const { result, invocation } = record;
  const taskId = taskIdOf(record);
  const word = decisionWord(record) ?? heldWord(record) ?? runWord(result);
  const actions = policyActions(record);
  const verdict = result.verdict;
  const fact = (name: string, value: Html | string): Html => html`<div><dt>${name}</dt><dd>${value}</dd></div>`;
  // A confidential team's run, for a remote viewer: its lifecycle, not what the task or the gate said.
  const withheld = team.withheld === true;
  const subject =
    invocation.completedTask && !withheld
      ? html` <span class="subject">${invocation.completedTask.subject}</span>`
      : "";
  const task =
    taskId === null
      ? "none"
      : html`<a href="/runs${queryString({ team: team.name, task: taskId })}">#${taskId}</a>${subject}`;
  const signal = result.signal ? `, signal ${result.signal}` : "";
  const exit =
    result.exitCode === null
      ? result.signal
        ? `signal ${result.signal}`
        : "none"
      : `code ${result.exitCode}${signal}`;
  const policy = record.policy
    ? actions.length > 0
      ? actions.join(", ")
      : "applied, nothing to do"
    : "not applied (reported only)";
  const verdictFacts = verdict
    ? [
        fact("Decision", verdict.decision),
        verdict.code && !withheld ? fact("Code", verdict.code) : "",
        verdict.reason && !withheld ? fact("Reason", verdict.reason) : "",
        verdict.message && !withheld ? fact("Message", verdict.message) : "",
        fact("From", verdict.source),
      ]
    : [];
  const show = withheld
    ? html`<p class="quiet" id="log-withheld">Team ${team.name} is confidential: what its task and its gate said \
(the subject, the verdict's code, reason and message, the output, the policy's summary) is not shown to a remote \
viewer, as the task API leaves it out. <code>pi-teams-hooks logs show</code> on the server's machine shows it.</p>`
    : html`<pre class="output" id="log-show">${formatShow(row)}</pre>`;
  const otherRuns = taskId === null ? "Other runs of this task" : `Other runs of task #${taskId}`;
  const otherList =
    taskId === null
      ? html`<p class="quiet">This run has no task.</p>`
      : others.length === 0
        ? html`<p class="quiet">None.</p>`
        : runsTable(others, `Other runs of task #${taskId}`);
  const title = html`Run ${shortRunId(result.runId)} <span class="sub">${hookName(result)}</span>`;
  return html`<h1>${title} ${outcomeBadge(word)}</h1>
<dl class="facts">
${fact("Team", html`<a href="/runs${queryString({ team: team.name })}">${team.name}</a>`)}
${fact("Event", invocation.event)}
<div class="fact-wide"><dt>Task</dt><dd>${task}</dd></div>
${fact("Member", invocation.memberName ?? "unknown")}
${fact("Started", timeOf(record.startedAt))}
${fact("Duration", durationText(result.durationMs))}
${fact("Exit", exit)}
${fact("Policy", policy)}
</dl>
${
  verdict
    ? html`<section aria-labelledby="verdict-h"><h2 id="verdict-h">Verdict</h2><dl class="facts">
${verdictFacts}
</dl>${verdict.patch && !withheld ? html`<pre class="output">${JSON.stringify(verdict.patch, null, 2)}</pre>` : ""}</section>`
    : ""
}
<section aria-labelledby="show-h"><h2 id="show-h">The log (as <code>pi-teams-hooks logs show</code> prints it)</h2>
${show}
</section>
<section aria-labelledby="task-h"><h2 id="task-h">${otherRuns}</h2>
${otherList}
</section>`;
}

function runsTable(rows: readonly RunRow[], caption: string): Html {
  return html`<div class="table-wrap"><table class="runs"><caption>${caption}, newest first</caption>
<thead><tr>${RUN_COLUMNS.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
<tbody>${rows.map(runRowHtml)}</tbody></table></div>`;
}
