/** `--help` texts. Each names every flag the command accepts, and nothing it does not. */

const TEAM_FLAGS = `Team:
  --team-dir DIR          the team directory (required)
  --task-list ID          task list id (default: config.json taskListId, else the team id)
  --lead NAME             the leader's name (default: config.json leadName, else team-lead)
  --hooks-dir DIR         where hooks live (default: $PI_TEAMS_HOOKS_DIR, relative to the teams
                          root, else <teams root>/_hooks; the teams root is $PI_TEAMS_ROOT_DIR,
                          else the team dir's parent)
  --cwd DIR               the hooks' working directory (default: this one)
  --timeout-ms N          hook timeout (default: $PI_TEAMS_HOOK_TIMEOUT_MS, else 60000)

Failure policy (flag > config.json "hooks" > environment > default):
  --failure-action A      warn | followup | reopen | reopen_followup   (default warn)
  --max-reopens N         reopens per task before the gate stops reopening (default 3; 0 = never)
  --followup-owner P      member | lead | none                          (default member)
`;

const HELP: Readonly<Record<string, string>> = {
  demo: `Usage: pi-teams-hooks demo

Copy examples/demo-team/ to a temporary folder, start the leader on it with the example gate
hooks/on_task_completed.sh, and play two workers: one task passes its gate; one fails, is reopened
with a follow-up task and a nudge, and passes once fixed. Prints the leader's lines as they happen,
then the hook logs and where the team dir is. Takes a few seconds.

  -h, --help              this help
`,
  run: `Usage: pi-teams-hooks run <event> --team-dir DIR [options]

Fire one event by hand, exactly as the leader would: find the hook, run it, write its log to
<team dir>/hook-logs/, and print one line. <event> is task_completed, task_failed or idle.

Event:
  --task ID               the task (required for task_completed and task_failed)
  --member NAME           who caused the event (default: none — the hook sees null / no variable)
  --timestamp ISO         when it happened (default: none)
  --apply-policy          also apply the failure policy (task metadata, reopen, follow-up, nudge)

${TEAM_FLAGS}
Output:
  --json                  print the log record as JSON instead of one line
  -h, --help              this help

Exit status: 0 the gate passed, or there is no hook for the event; 1 the gate failed (or could not
run); 2 usage error (a bad flag, a missing team dir or task file).

Example:
  pi-teams-hooks run task_completed --team-dir ~/.pi/teams/alpha --task 3 --member alice
`,
  watch: `Usage: pi-teams-hooks watch --team-dir DIR [options]

Be the team's quality-gate leader: watch the task list and the leader's inbox, run each event's
hook once, apply the failure policy, and log every invocation to <team dir>/hook-logs/. Prints one
line per event. Stops on SIGINT / SIGTERM after running hooks finish (up to their timeout).

Events and sources:
  --inbox MODE            observe (default: read the leader's inbox, never mark messages read),
                          consume (also mark handled idle notifications read), off (ignore it)
  --concurrency N         events of different tasks run in parallel, up to N (default 1)
  --reconcile-ms N        scan the task list every N ms for changes a watcher missed (default 5000)
  --poll                  poll instead of using file-system notifications (network file systems)
  --poll-interval-ms N    polling interval with --poll (default 250)
  --catch-up              on the first start, run completions that already exist (default: record
                          them as a baseline and run only what happens from now on)
  --once                  handle what is pending, then exit (for cron and CI)

${TEAM_FLAGS}
Output:
  --json                  print events as NDJSON
  -h, --help              this help

Exit status: 0 stopped cleanly; 1 a fatal error; 2 usage error.
`,
};

export function commandHelp(name: string): string {
  return HELP[name] ?? mainHelp();
}

export function mainHelp(): string {
  return `Usage: pi-teams-hooks <command> [options]

Quality gates for agent teams: run hook scripts when tasks complete or fail and when members go
idle, apply the team's failure policy, and log every invocation.

Commands:
  run <event>     fire one event by hand (task_completed, task_failed, idle)
  watch           be the leader: watch a team directory and run its gates
  demo            play a small team through a passing, a failing and a fixed gate (npm start)
  help [command]  show help for a command

Every command takes --help. Hook contract: docs/hook-contract.md.
`;
}
