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
  doctor: `Usage: pi-teams-hooks doctor --team-dir DIR [--hooks-dir DIR] [--json]

Check what would stop a gate from running, without running anything:
  Hooks   for each event, the file that would run and how (bash, node, its #! interpreter), and
          every candidate skipped or shadowed and why: not executable, a directory, no #! line on a
          bare file, a CRLF #! line, an interpreter missing or not on PATH, world-writable
  Team    the team dir, config.json, the task list (each file that is not a task, with its field)
          and the leader's inbox, read as the leader reads them
  Policy  the effective failure policy and hook timeout, and where each value comes from
  Locks   *.lock files anywhere in the team dir: stale ones, and live ones held too long

  --team-dir DIR          the team directory (required)
  --hooks-dir DIR         where hooks live (default: $PI_TEAMS_HOOKS_DIR, relative to the teams
                          root, else <teams root>/_hooks)
  --json                  print the report as one JSON object
  -h, --help              this help

A missing default hooks dir is a warning (no gates at all); a missing --hooks-dir or
$PI_TEAMS_HOOKS_DIR is an error.

Exit status: 0 no errors (warnings allowed); 1 something would stop a gate from running (a hook
that cannot start, a hook file skipped with nothing else to run for its event, a named hooks dir
that is missing, a team dir that cannot be read or written, a task list or inbox that cannot be
read); 2 usage error.
`,
  init: `Usage: pi-teams-hooks init [--hooks-dir DIR | --team-dir DIR] [--force]

Copy the example gates (on_task_completed.sh, on_task_failed.mjs, on_idle.sh) from the package's
hooks/ into a hooks dir, with execute bits, and print what was written.

  --hooks-dir DIR         where to put them (default: the global hooks dir: $PI_TEAMS_HOOKS_DIR,
                          relative to the teams root, else <teams root>/_hooks)
  --team-dir DIR          a team dir, to find the teams root when $PI_TEAMS_ROOT_DIR is not set
                          (the teams root is then its parent folder)
  --force                 replace files that already exist
  -h, --help              this help

Without --hooks-dir, the teams root comes from $PI_TEAMS_ROOT_DIR or --team-dir; with neither
(and no absolute $PI_TEAMS_HOOKS_DIR) init says so and writes nothing.

Exit status: 0 written; 1 a file already exists (nothing is written; the files are named) or the
dir cannot be written; 2 usage error.
`,
  policy: `Usage: pi-teams-hooks policy [get] --team-dir DIR [--json]
       pi-teams-hooks policy set --team-dir DIR [--failure-action A] [--max-reopens N]
                                 [--followup-owner P] [--reset] [--json]

get (the default) prints the effective failure policy of the team and where each value comes from
(config.json "hooks" > environment > default); warnings about bad values go to stderr.
set writes the "hooks" block of config.json under its lock, keeping every other field (a missing
config.json is created with the defaults), then prints the effective policy.

  --team-dir DIR          the team directory (required)
  --failure-action A      warn | followup | reopen | reopen_followup
  --max-reopens N         reopens per task before the gate stops reopening (0 = never)
  --followup-owner P      member | lead | none
  --reset                 remove the three settings from config.json first (the environment and
                          defaults apply again); flags given with it are then set
  --json                  print {policy, sources, origins, warnings, …} as JSON
  -h, --help              this help

Values are checked before anything is written. Exit status: 0 done; 2 usage error (a bad value
names its flag), a missing team dir, or a config.json that is not a JSON object (left untouched).
`,
  schema: `Usage: pi-teams-hooks schema [context|log|task|config]

Print the JSON Schema (draft 2020-12) of a file format, generated from the zod schemas the code
validates with; the same files are in docs/schema/.

  context                 the v1 context document a hook receives (the default)
  log                     one hook log record in <team dir>/hook-logs/
  task                    a task file
  config                  the team's config.json
  -h, --help              this help

Exit status: 0; 2 an unknown schema name.
`,
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
  doctor          check hooks, team files, policy and locks: what would stop a gate from running
  init            copy the example gates into the hooks dir
  policy get|set  show or change the team's failure policy (config.json "hooks")
  schema [name]   print the JSON Schema of the context document, a log record, a task or the config
  help [command]  show help for a command

Every command takes --help. Hook contract: docs/hook-contract.md.
`;
}
