/**
 * `pi-teams-hooks demo` (what `npm start` runs): a temporary team made from examples/demo-team/, the
 * leader running in this process with the example gate from hooks/, and two scripted workers. Ada's
 * task passes its gate; Brian's fails, is reopened with a follow-up task and a nudge, and passes once
 * he fixes it. Every write goes through the same lock protocol a real worker uses. The temporary
 * folder is removed at the end (however the demo ends) unless `--keep`, and with it the trust record and
 * settings the leader approved for it in the user's state folder (trust/trust-store.ts approvedFile, seenFile).
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type CliIo, type ParsedArgs, eventLine, runtimeOf, wantsColour } from "./io.js";
import { HooksError } from "../contract/errors.js";
import { Leader } from "../leader/leader.js";
import type { EventReport } from "../leader/notices.js";
import { formatTable } from "../logs/format.js";
import { queryLogs } from "../logs/query.js";
import { appendMessage, readInbox } from "../team/mailbox.js";
import { updateTask } from "../team/tasks.js";
import { resolveTeamSetup } from "../team/setup.js";
import { approvedSettingsFile } from "../team/approved-settings.js";
import { approvedFile, seenFile } from "../trust/trust-store.js";
import { existsNoFollow, userStateDir } from "../team/paths.js";
import { localClock, localOffsetMinutes, terminalWidth } from "../text/terminal.js";

const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/**
 * The demo's check command: every deliverable in the workspace must say `ok`. Bash alone, no grep:
 * a command missing from PATH inside `$(…)` would leave `bad` empty and pass every draft.
 */
const GATE_CMD = `bad=; for f in task-*.txt; do [ "$(< "$f")" = ok ] || bad="$bad $f"; done; if [ -n "$bad" ]; then echo "FAIL:$bad does not say ok"; exit 1; fi; echo "all deliverables say ok"`;

export async function demoCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  if (args.positionals.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${args.positionals[0]}"`);
  const keep = args.values.keep === true;
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "pi-teams-demo-"));
  const made = missingFolders(io.env);
  try {
    return await play(root, keep, io);
  } finally {
    // The temp team goes with the demo, whatever ends it, unless asked to stay (--keep) and it got that far.
    if (!keep) {
      await fs.rm(root, { recursive: true, force: true });
      const teamDir = path.join(root, "demo");
      for (const file of [
        approvedFile(teamDir, io.env),
        seenFile(teamDir, io.env),
        approvedSettingsFile(teamDir, io.env),
      ])
        await fs.rm(file, { force: true });
      for (const folder of made) await removeEmptyFolders(folder);
    }
  }
}

/**
 * The folders of the user's own a leader makes on its first run (its state: the trust records, the runs
 * folder) that are not there yet: the highest missing one of each, which the demo removes again if it
 * holds nothing but empty folders then (another leader's record in it stays, with its folders).
 */
function missingFolders(env: CliIo["env"]): string[] {
  const runtime = env.XDG_RUNTIME_DIR;
  const own = [
    userStateDir(env),
    ...(runtime && path.isAbsolute(runtime) ? [path.join(runtime, "pi-teams-hooks")] : []),
  ];
  const missing: string[] = [];
  for (const folder of own) {
    let top: string | null = null;
    for (let at = folder; at !== path.dirname(at) && !existsNoFollow(at); at = path.dirname(at)) top = at;
    if (top) missing.push(top);
  }
  return missing;
}

/** Removes `folder` and the folders in it, deepest first, each only if empty (rmdir: nothing else goes). */
async function removeEmptyFolders(folder: string): Promise<void> {
  const entries = await fs.readdir(folder, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) if (entry.isDirectory()) await removeEmptyFolders(path.join(folder, entry.name));
  await fs.rmdir(folder).catch(() => undefined);
}

/** The demo itself, in `root`. */
async function play(root: string, keep: boolean, io: CliIo): Promise<number> {
  const teamDir = path.join(root, "demo"); // also in demoCommand
  const hooksDir = path.join(root, "_hooks");
  const workspace = path.join(root, "workspace");
  await fs.cp(path.join(PACKAGE_ROOT, "examples", "demo-team"), teamDir, { recursive: true });
  await fs.mkdir(hooksDir);
  await fs.copyFile(
    path.join(PACKAGE_ROOT, "hooks", "on_task_completed.sh"),
    path.join(hooksDir, "on_task_completed.sh"),
  );
  await fs.mkdir(workspace);

  const say = (text: string): void => io.stdout(`${text}\n`);
  say(`demo team in ${teamDir}\n`);
  const env = { ...io.env, PI_TEAMS_GATE_CMD: GATE_CMD, PI_TEAMS_ROOT_DIR: root };
  const setup = await resolveTeamSetup({
    teamDir,
    hooksDir,
    cwd: workspace,
    timeoutMs: "20000",
    env,
    processCwd: io.cwd,
  });
  const events: EventReport[] = [];
  const waiters: Array<() => void> = [];
  const leader = new Leader({
    setup,
    env,
    concurrency: 1,
    inbox: "observe",
    reconcileMs: 1000,
    poll: false,
    pollIntervalMs: 250,
    catchUp: false,
    runtime: runtimeOf(io),
    report: (notice) => {
      if (notice.kind === "warning") io.stderr(`warning: ${notice.message}\n`);
      if (notice.kind !== "event") return;
      events.push(notice.report);
      // The demo has no idle hook: "idle: no hook" lines would only be noise here.
      if (notice.report.outcome !== "no_hook")
        say(`  leader │ ${eventLine(notice.report, wantsColour(io), localClock)}`);
      waiters.splice(0).forEach((wake) => wake());
    },
  });
  const waitForEvent = async (predicate: (e: EventReport) => boolean, what: string): Promise<EventReport> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const found = events.find(predicate);
      if (found) return found;
      if (Date.now() > deadline) throw new HooksError("E_INTERNAL", `demo: no ${what} within 15 s`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 250);
      });
    }
  };

  await leader.start();
  say(
    `  leader │ watching tasks/demo with gate ${path.join(hooksDir, "on_task_completed.sh")} (policy: reopen_followup)\n`,
  );
  try {
    const worker = (name: string, text: string): void => say(`  ${name.padEnd(6)} │ ${text}`);

    worker("ada", "claims task #1, writes task-1.txt, marks it completed");
    await complete(teamDir, workspace, "1", "ada", "ok");
    await waitForEvent((e) => e.taskId === "1", "gate run for task #1");

    worker("brian", "claims task #2, writes a draft task-2.txt, marks it completed");
    await complete(teamDir, workspace, "2", "brian", "draft");
    const failed = await waitForEvent((e) => e.taskId === "2", "gate run for task #2");
    const inbox = await readInbox(teamDir, "demo", "brian");
    const nudge = inbox.ok
      ? inbox.messages.map((m) => m.message).find((m) => m.text.startsWith("Quality gate"))
      : undefined;
    if (nudge) worker("brian", `reads his inbox: "${nudge.text.split("\n")[0] ?? ""}"`);
    const followupId = failed.followupTaskId;

    worker("brian", "fixes task-2.txt and completes task #2 again");
    await complete(teamDir, workspace, "2", "brian", "ok");
    await waitForEvent((e) => e.taskId === "2" && e !== failed, "second gate run for task #2");
    if (followupId) {
      worker("brian", `completes the follow-up task #${followupId}`);
      await complete(teamDir, workspace, followupId, "brian", null);
      await waitForEvent((e) => e.taskId === followupId, `gate run for task #${followupId}`);
    }
  } finally {
    await leader.stop();
  }

  say(`\nhook logs (${path.join(teamDir, "hook-logs")}):`);
  say(await logsTable(teamDir, terminalWidth(io)));
  const around = "tasks/demo/*.json (qualityGate* metadata), mailboxes/demo/inboxes/brian.json, hook-logs/";
  if (keep) say(`\nteam dir: ${teamDir}\nlook around: ${around}`);
  else say(`\nremoved ${root} (pi-teams-hooks demo --keep keeps it, to look around)`);
  return 0;
}

/** A worker finishing a task: its deliverable, then the task file under its lock, then an idle note. */
async function complete(
  teamDir: string,
  workspace: string,
  taskId: string,
  member: string,
  deliverable: string | null,
): Promise<void> {
  if (deliverable !== null) await fs.writeFile(path.join(workspace, `task-${taskId}.txt`), `${deliverable}\n`);
  const now = new Date().toISOString();
  const updated = await updateTask(teamDir, "demo", taskId, (task) => ({
    ...task,
    owner: member,
    status: "completed",
    updatedAt: now,
    metadata: { ...(task.metadata ?? {}), result: `task-${taskId}.txt written`, completedAt: now },
  }));
  if (!updated.ok) throw new HooksError("E_TASK", updated.problem.message);
  const note = {
    type: "idle_notification",
    from: member,
    timestamp: now,
    completedTaskId: taskId,
    completedStatus: "completed",
  };
  await appendMessage(teamDir, "team", "team-lead", {
    from: member,
    text: JSON.stringify(note),
    timestamp: now,
    read: false,
  });
}

/**
 * The `logs` table of the demo team (logs/format.ts) in `width` columns, every log; a log that cannot be read is left
 * out.
 */
async function logsTable(teamDir: string, width: number): Promise<string> {
  const { rows } = await queryLogs(teamDir, { filter: {}, onProblem: () => undefined });
  const table = formatTable(rows, { width, offsetMinutes: localOffsetMinutes(Date.now()), json: false });
  return `${table.text}${table.note}`.trimEnd();
}
