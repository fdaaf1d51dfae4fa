/** `--help` texts. Each names every flag the command accepts, and nothing it does not. */

const TEAM_FLAGS = `Team:
  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir
  --task-list ID          task list id (default: config.json taskListId, else the team id)
  --lead NAME             the leader's name (default: config.json leadName, else team-lead)
  --hooks-dir DIR         where hooks live (default: $PI_TEAMS_HOOKS_DIR, relative to the teams
                          root, else <teams root>/_hooks; the teams root is $PI_TEAMS_ROOT_DIR,
                          else the team dir's parent)
  --cwd DIR               the hooks' working directory (default: this one)
  --timeout-ms N          hook timeout (default: $PI_TEAMS_HOOK_TIMEOUT_MS, else 60000)
  --timeout DURATION      the same as a duration: 90s, 5m, 1.5h (a bare number is seconds)

Failure policy (flag > config.json "hooks" > environment > default):
  --failure-action A      warn | followup | reopen | reopen_followup   (default warn)
  --max-reopens N         reopens per task before the gate stops reopening (default 3; 0 = never)
  --followup-owner P      member | lead | none                          (default member)

Trust (docs/security.md):
  --trust-changes         run gates that changed, appeared or went since they were trusted, as they
                          are now (for writing gates; each change is still said, the log keeps
                          both hashes); without it such an event fails (untrusted_hook,
                          gate_missing, gate_not_executable) until \`pi-teams-hooks trust\`
  --allow-insecure-hooks  run world-writable gates and gates owned by another user (refused
                          otherwise: insecure_hook)
`;

const HELP: Readonly<Record<string, string>> = {
  doctor: `Usage: pi-teams-hooks doctor [--team-dir DIR | --team ID] [--hooks-dir DIR] [--json]

Check what would stop a gate from running, without running anything:
  Hooks   for each event, the file that would run and how (bash, node, its #! interpreter), and
          every candidate skipped or shadowed and why: not executable, a directory, no #! line on a
          bare file, a CRLF #! line, an interpreter missing or not on PATH, world-writable
  Team    the team dir, config.json, the task list (each file that is not a task, with its field)
          and the leader's inbox, read as the leader reads them
  Policy  every setting watch would apply without flags (failure policy, hook timeout, failure
          mode per event, limits), computed as the leader computes it, and where each comes from;
          a "hooks" block with a bad value is refused whole, as the leader refuses it
  Locks   *.lock files anywhere in the team dir: stale ones, and live ones held too long

  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir
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
  init: `Usage: pi-teams-hooks init [--hooks-dir DIR | --team-dir DIR] [--from-claude FILE] [--force]

Copy the example gates (on_task_completed.sh, on_task_failed.mjs, on_idle.sh) from the package's
hooks/ into a hooks dir, with execute bits, and print what was written.

With --from-claude FILE, write gates from a Claude Code settings file instead of the examples: each
command hook of TaskCompleted becomes on_task_completed.d/claude-<n>.sh, each of TeammateIdle
on_idle.d/claude-<n>.sh (n = 1, 2, … per event, in file order), a bash script that runs the
command unchanged; its second line, "# pi-teams-hooks: format=claude timeout=<N>s", carries the
hook's timeout (the key is left out when the hook gives none). Hooks of another type (http, prompt,
agent) are skipped, a matcher on these two events is ignored (as Claude Code ignores it), and the
other events are listed as not mapped; each is named in the output.

  --hooks-dir DIR         where to put them (default: the global hooks dir: $PI_TEAMS_HOOKS_DIR,
                          relative to the teams root, else <teams root>/_hooks)
  --team-dir DIR          a team dir, to find the teams root when $PI_TEAMS_ROOT_DIR is not set
                          (the teams root is then its parent folder)
  --from-claude FILE      a Claude Code settings file (.claude/settings.json): write its
                          TaskCompleted and TeammateIdle command hooks as gates
  --force                 replace files that already exist
  -h, --help              this help

Without --hooks-dir, the teams root comes from $PI_TEAMS_ROOT_DIR or --team-dir; with neither
(and no absolute $PI_TEAMS_HOOKS_DIR) init says so and writes nothing.

Exit status: 0 written; 1 a file already exists (nothing is written; the files are named), the
dir cannot be written, or the settings file has no TaskCompleted or TeammateIdle command hook
(nothing is written); 2 usage error, or a settings file that is missing, not JSON or of the wrong
shape (nothing is written; each problem is named by its JSON path).
`,
  policy: `Usage: pi-teams-hooks policy [get] [--team-dir DIR | --team ID] [--json]
       pi-teams-hooks policy set [--team-dir DIR | --team ID] [--failure-action A] [--max-reopens N]
                                 [--followup-owner P] [--reset] [--json]

get (the default) prints every setting the leader would apply (failure policy, hook timeout, failure
mode per event, limits) and where each comes from (config.json "hooks" > environment > default),
computed as the leader computes it: a "hooks" block with a bad value is refused whole. Warnings go
to stderr.
set writes the "hooks" block of config.json under its lock, keeping every other field (a missing
config.json is created with the defaults), then prints the effective policy.

  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir
  --failure-action A      warn | followup | reopen | reopen_followup
  --max-reopens N         reopens per task before the gate stops reopening (0 = never)
  --followup-owner P      member | lead | none
  --reset                 remove the three settings from config.json first (the environment and
                          defaults apply again); flags given with it are then set
  --json                  print {policy, sources, origins, timeoutMs, failureModes, limits, block,
                          warnings, …} as JSON
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
  logs: `Usage: pi-teams-hooks logs [--team-dir DIR | --team ID] [filters] [--limit N] [--json] [--follow]
       pi-teams-hooks logs show <id> [--json]
       pi-teams-hooks logs stats [filters] [--limit N] [--json]
       pi-teams-hooks logs prune [--keep N] [--older-than AGE] [--dry-run] [--json]

Read the hook logs in <team dir>/hook-logs/ (one JSON file per hook invocation).

  logs            a table, newest last: time (UTC), event, task, member, hook, outcome (passed,
                  failed, timed out, error, deferred), duration, the policy's actions, and the first stderr
                  line (else the spawn error)
  logs show <id>  one invocation in full: context, command, exit, timing, policy, stdout, stderr.
                  <id> is the file name, its stem, or a unique prefix or suffix of it
                  (e.g. the time "2026-03-01T09-12" or "task-3_2"); several matches are listed
  logs stats      per hook and event: runs, pass rate, failed / timed out / error counts, p50 and
                  p95 duration (nearest rank), and the tasks with the most failed runs
  logs prune      remove old logs, printing each one: --keep N keeps the newest N, --older-than AGE
                  removes those started before then; both: the old ones beyond the newest N.
                  At least one is needed. Only files named like a hook log are ever removed

Team (one of):
  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team directory <$PI_TEAMS_ROOT_DIR>/<ID> (needs PI_TEAMS_ROOT_DIR)

Filters (logs and logs stats; all must hold):
  --event E[,E…]          task_completed, task_failed, idle, task_started
  --task ID               runs for this task
  --member NAME           runs caused by this member
  --outcome O[,O…]        passed, failed, timed_out, error, deferred
  --since WHEN            started at or after WHEN: an age (30m, 1.5h, 1d12h, 1w) or an ISO 8601 time
                          (2026-03-01, 2026-03-01T09:00, 2026-03-01T11:00+02:00; UTC unless it
                          has an offset, like the times shown)
  --limit N               the newest N matching logs, shown oldest first (default 50 for logs,
                          all for stats; 0 = all)

Output and more:
  --json                  NDJSON: one object per line (a log: {"file": …, …the log record})
  -f, --follow            after the table, print new logs as they land (fs.watch plus a rescan
                          every second); stop with Ctrl-C
  --keep N, --older-than AGE, --dry-run    for prune (AGE as for --since); --dry-run only lists
  -h, --help              this help

A file in hook-logs/ that is not a readable log is named in a warning on stderr and skipped.

Exit status: 0 done (also when files were skipped); 1 hook-logs/ cannot be listed, the log to show
matches no file or cannot be read, or prune could not remove a file; 2 usage error (naming the
flag), a missing team dir, or a show <id> that matches several logs (they are listed).

Examples:
  pi-teams-hooks logs --team-dir ~/.pi/teams/alpha --outcome failed,timed_out --since 2h
  pi-teams-hooks logs show 2026-03-01T09-12-44-123Z_task_completed_task-3 --team alpha
  pi-teams-hooks logs prune --team alpha --older-than 30d --dry-run
`,
  trust: `Usage: pi-teams-hooks trust [--team-dir DIR | --team ID] [--hooks-dir DIR] [--all | PATH…] [--json]

The leader runs only gates it trusts: the sha256 and mode of every gate file are recorded in
<team dir>/hook-state/trust.json at its first start, and by this command. A gate that is new,
changed (content or mode), or no longer runs (deleted, disabled or replaced through the team
layer, shadowed, no longer executable) makes its events fail until the change is recorded here.

Without --all or paths, trust lists every such change: old and new hash and mode, and a diff for
a text file (from the copy kept in hook-state/trusted/), and records nothing.

  --all                   record every change listed (the gates as they are now)
  PATH…                   record only these gates' changes (a removed gate: its absence)
  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir
  --hooks-dir DIR         where hooks live (default: $PI_TEAMS_HOOKS_DIR, else <teams root>/_hooks)
  --json                  print {changes, recorded} as JSON
  -h, --help              this help

A running leader reads the record again before its next event and says what changed in it.

Exit status: 0 nothing left untrusted; 1 changes are listed and not recorded; 2 usage error (a
path that is not a changed gate, a gate that changed again while shown, a missing team dir, an
unreadable record without --all).
`,
  demo: `Usage: pi-teams-hooks demo

Copy examples/demo-team/ to a temporary folder, start the leader on it with the example gate
hooks/on_task_completed.sh, and play two workers: one task passes its gate; one fails, is reopened
with a follow-up task and a nudge, and passes once fixed. Prints the leader's lines as they happen,
then the hook logs and where the team dir is. Takes a few seconds.

  -h, --help              this help
`,
  run: `Usage: pi-teams-hooks run <event> [--team-dir DIR | --team ID] [options]

Fire one event by hand, exactly as the leader would: find the hook, run it, write its log to
<team dir>/hook-logs/, and print one line. <event> is task_completed, task_failed, idle or
task_started (a worker claimed the task).

Event:
  --task ID               the task (required for task_completed, task_failed and task_started)
  --member NAME           who caused the event (default: none — the hook sees null / no variable)
                          (ids and names: A-Z a-z 0-9 _ - only; anything else is refused)
  --timestamp ISO         when it happened (default: none)
  --apply-policy          also apply the failure policy (task metadata, reopen, follow-up, nudge);
                          for task_started, the start gate's answer: a denied claim is put back
                          to pending without owner and the member told (a task that holds no
                          claim is refused: exit 2)

${TEAM_FLAGS}
Output:
  --json                  print the log record as JSON instead of one line
  -h, --help              this help

A gate that answers {"decision":"defer"} holds the event: with --apply-policy the task is marked
deferred and a deferral is recorded for \`pi-teams-hooks decide\` (or the task API) to settle; without
it nothing is held.
A gate that answers {"decision":"patch","patch":{…}} passes: with --apply-policy the patch is written
to the task within hooks.writableFields (default: metadata); without it nothing is written.

Exit status: 0 the gate passed, or there is no hook for the event; 1 the gate failed (or could not
run, or was refused as untrusted or insecure), or --apply-policy could not write the policy; 2 usage
error (a bad flag, a missing team dir, task file or named hooks dir); 3 the gate deferred (held).

Example:
  pi-teams-hooks run task_completed --team-dir ~/.pi/teams/alpha --task 3 --member alice
`,
  decide: `Usage: pi-teams-hooks decide [--team-dir DIR | --team ID] <run id> allow|deny [--code C] [--reason R]
                              [--message M] [--by NAME] [--failure-action A] [--max-reopens N]
                              [--followup-owner P] [--json]

Settle a held gate: a gate that answered {"decision":"defer"} (a file hook, or an HTTP handler with
202) for a task event. <run id> is the run id of the run that deferred: the deferral's file name in
<team dir>/hook-state/deferrals/, the "run" of the leader's event line, the X-Pi-Teams-Hook-Run-Id an
HTTP handler was sent. The failure policy then applies exactly as for a pass (allow) or a failure
(deny, with the code, reason and message given), logged as a second hook log that names the
deferred run. A running leader applies it (this command waits up to 10 s to say so); with no leader
running, this command applies it itself, holding the leader lock for that moment.

  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir
  --code C                the denial's code (a-z 0-9 _ . -, starting with a letter; at most 64 bytes)
  --reason R              one line, at most 1,024 bytes
  --message M             free text, at most 8 KiB
  --by NAME               who decided (default: $USER)
  --failure-action A, --max-reopens N, --followup-owner P
                          the policy this command applies when no leader runs (above config.json
                          "hooks", the environment and the defaults); a running leader applies its own
  --json                  print the answer as one JSON object ({kind, runId, …})
  -h, --help              this help

A deferral is decided once: the same decision again answers as the first did; another is refused.
A deferral past its deadline (config.json hooks.deferTimeoutMs, default 24 h) has expired: its gate
failed as the closed error defer_expired, whatever is asked now.

Exit status: 0 applied, or recorded for the running leader to apply; 1 refused (decided otherwise
before, or expired), or recorded but not applied (a task lock held too long: the next start of the
leader, or this command again, applies it); 2 usage error (a bad flag or value, naming it; a missing
team dir; no deferral with that run id).

Example:
  pi-teams-hooks decide --team-dir ~/.pi/teams/alpha 5f0c…e1 deny --code ci.failed --reason "2 tests fail"
`,
  watch: `Usage: pi-teams-hooks watch [--team-dir DIR | --team ID] [options]

Be the team's quality-gate leader: watch the task list and the leader's inbox, run each event's
hook once, apply the failure policy, and log every invocation to <team dir>/hook-logs/. Prints the
hooks and the policy in use, "watching …" once events are taken, "scanned N task(s) …" when the
start-up scan (which looks at every task file in the background) is done, then one line per event.
Stops on SIGINT / SIGTERM after running hooks finish (up to their timeout).
A change to config.json is picked up while running: its "hooks" block (policy, failure modes,
limits) is read again. An invalid block, or a config.json that is not JSON, deleted or without
"hooks", keeps the block in force (one warning says why); "hooks": {} resets to the defaults.
Its own state (the ledger, the scan state, a first start's mark, the messages sent, the gates it
trusts) is in <team dir>/hook-state/: docs/ledger.md, docs/security.md. The first start trusts the
gates it finds; a gate changed, added or removed later fails its events until \`pi-teams-hooks trust\`.

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
  serve: `Usage: pi-teams-hooks serve [--teams-root DIR] [--listen HOST:PORT] [--allow-remote] [--rate-limit N/PERIOD]
       pi-teams-hooks serve keys create --name NAME --scopes S[,S…] --teams T[,T…] [--templates T[,T…]]
                                        [--rate-limit N/PERIOD] [--teams-root DIR]
       pi-teams-hooks serve keys list [--json] [--teams-root DIR]
       pi-teams-hooks serve keys revoke NAME [--teams-root DIR]

The task API (docs/remote-gates.md): other systems create tasks from a team's templates
(config.json hooks.templates), poll their status and decide held gates, each with a bearer key
limited to its scopes, teams and templates. Prints "listening on http://HOST:PORT" once it accepts
connections, and runs until SIGINT or SIGTERM.
  POST /api/v1/teams/TEAM/tasks        {"template": "SLUG", "parameters": {…}} → 202 (tasks:create)
  GET  /api/v1/teams/TEAM/tasks/ID     id, status, qualityGateStatus, updatedAt (tasks:read)
  POST /api/v1/teams/TEAM/runs/RUN_ID/decision
                                       {"decision": "allow"|"deny", "code"?, "reason"?, "message"?}
                                       → 200 applied, or 202 recorded for the team's running leader
                                       (gates:decide); as \`pi-teams-hooks decide\`
  GET  /healthz

  --teams-root DIR        the teams root: each team is a folder in it (default: $PI_TEAMS_ROOT_DIR,
                          else ~/.pi/agent/teams); the keys live in DIR/.pi-teams-hooks/keys.json
  --listen HOST:PORT      where to listen (default 127.0.0.1:7420; port 0 picks a free one;
                          [::1]:PORT for IPv6)
  --allow-remote          listen on an address other than loopback; keys then cross the network,
                          so put TLS in front (docs/security.md)
  --rate-limit N/PERIOD   requests per key, for keys without their own rate (default 600/min;
                          PERIOD s, min or h); past it: 429 with Retry-After
  -h, --help              this help

keys create prints the new key alone on its last line, the only time it is shown
(KEY=$(pi-teams-hooks serve keys create … | tail -1)); only a salted hash is stored:
  --name NAME             the key's name (keys list, keys revoke, the tasks it creates)
  --scopes S,…            tasks:create, tasks:read, gates:decide
  --teams T,…             the teams (folders of the teams root) it may use
  --templates T,…         the only templates it may create from and read tasks of (default: all)
  --rate-limit N/PERIOD   its own rate instead of the server's
keys list prints names, prefixes and what each key may do (--json: as JSON), never a key; keys
revoke NAME deletes the key, and a running server refuses it from its next request.

Exit status: 0 stopped cleanly (serve) or done; 1 no such key (revoke), or a file cannot be
written; 2 usage error, a teams root that is not a directory, or an address that cannot be used.
`,
};

export function commandHelp(name: string): string {
  return HELP[name] ?? mainHelp();
}

export function mainHelp(): string {
  return `Usage: pi-teams-hooks <command> [options]

Quality gates for agent teams: run hook scripts when tasks complete or fail, when members go
idle and when workers claim tasks, apply the team's failure policy, and log every invocation.

Commands:
  run <event>     fire one event by hand (task_completed, task_failed, idle, task_started)
  decide          settle a held gate (a gate that answered defer): allow or deny
  watch           be the leader: watch a team directory and run its gates
  demo            play a small team through a passing, a failing and a fixed gate (npm start)
  doctor          check hooks, team files, policy and locks: what would stop a gate from running
  init            copy the example gates into the hooks dir (or write gates from Claude Code hooks)
  policy get|set  show or change the team's failure policy (config.json "hooks")
  schema [name]   print the JSON Schema of the context document, a log record, a task or the config
  logs            list, show, follow, summarise and prune the hook logs of a team
  trust           show gates changed since they were trusted, and approve them
  serve           the task API: other systems create tasks from templates, with keys
  help [command]  show help for a command

Every command takes --help. Hook contract: docs/hook-contract.md.
`;
}
