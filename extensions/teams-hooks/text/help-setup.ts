/** `--help` texts of the commands that set up, inspect and read a team: doctor, init, policy, config, schema, logs, trust. */

export const SETUP_HELP: Readonly<Record<string, string>> = {
  doctor: `Usage: pi-teams-hooks doctor [--team-dir DIR | --team ID] [--hooks-dir DIR] [--json]

Check what would stop a gate from running, without running anything (run it as the leader's user):
  Hooks   for each event, the file that would run and how (bash, node, its #! interpreter), and
          every candidate skipped or shadowed and why: not executable, a directory, no #! line on a
          bare file, a CRLF #! line, an interpreter missing or not on PATH, world-writable
  Team    the team dir, config.json, the task list (each file that is not a task, with its field)
          and the leader's inbox, read as the leader reads them
  Access  who besides the user doctor runs as (the leader's) could change a gate, hook-state/,
          hook-logs/ or the approved trust record: their owner, a group with other members,
          every user, or a folder above them others can write (a warning each); which users
          write the team's files; team folders the leader could not rewrite files in
  Policy  every setting watch would apply without flags (failure policy, hook timeout, failure
          mode per event, limits), computed as the leader computes it, and where each comes from;
          a "hooks" block with a bad value is refused whole, as the leader refuses it
  Locks   *.lock files anywhere in the team dir: stale ones, and live ones held too long

  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir
  --hooks-dir DIR         where hooks live (default: $PI_TEAMS_HOOKS_DIR, relative to the teams
                          root, else <teams root>/_hooks)
  --json                  print the report as one JSON object; its "problems" holds every
                          warning and error as {kind, path, message} (kinds: docs/cli.md,
                          "Problems as data")
  -h, --help              this help

A missing default hooks dir is a warning (no gates at all); a missing $PI_TEAMS_HOOKS_DIR is an
error; a --team-dir, --team or --hooks-dir that is not there is exit 2, before any check.

Exit status: 0 no errors (warnings allowed); 1 something would stop a gate from running (a hook
that cannot start, a hook file skipped with nothing else to run for its event, a $PI_TEAMS_HOOKS_DIR
that is missing, a team dir that cannot be read or written, a task list or inbox that cannot be
read); 2 usage error, or a team dir or --hooks-dir that is not there.
`,
  init: `Usage: pi-teams-hooks init [--hooks-dir DIR | --team-dir DIR | --team ID] [--from-claude FILE] [--force]

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
                          (the teams root is then its parent folder); it must exist
  --team ID               the team ID under $PI_TEAMS_ROOT_DIR: the gates go to that team's
                          global hooks dir, where run --team ID looks for them; it must exist
  --from-claude FILE      a Claude Code settings file (.claude/settings.json): write its
                          TaskCompleted and TeammateIdle command hooks as gates
  --force                 replace files that already exist
  -h, --help              this help

Without --hooks-dir, the teams root comes from $PI_TEAMS_ROOT_DIR or --team-dir; with neither
(and no absolute $PI_TEAMS_HOOKS_DIR) init says so and writes nothing. init creates the hooks dir,
not the folders above it: a parent that is not there is exit 2.

Exit status: 0 written; 1 a file already exists (nothing is written; the files are named), the
dir cannot be written, or the settings file has no TaskCompleted or TeammateIdle command hook
(nothing is written); 2 usage error, a team dir or the hooks dir's parent folder that is not there,
or a settings file that is missing, not JSON or of the wrong shape (nothing is written; each problem
is named by its JSON path).
`,
  policy: `Usage: pi-teams-hooks policy [get] [--team-dir DIR | --team ID] [--json]
       pi-teams-hooks policy set [--team-dir DIR | --team ID] [--failure-action A] [--max-reopens N]
                                 [--followup-owner P] [--failure-mode [EVENT=]MODE]...
                                 [--max-hooks-per-event N] [--chain-deadline-ms N]
                                 [--max-payload-bytes N] [--reset] [--json]

get (the default) prints every setting the leader would apply (failure policy, hook timeout, failure
mode per event, limits) and where each comes from (config.json "hooks" > environment > default),
computed as the leader computes it: a "hooks" block with a bad value is refused whole. Warnings go
to stderr.
set writes the "hooks" block of config.json under its lock, keeping every other field and key (a
missing config.json is created with the defaults), then prints the effective policy.

  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir
  --failure-action A      warn | followup | reopen | reopen_followup
  --max-reopens N         reopens per task before the gate stops reopening (0 = never)
  --followup-owner P      member | lead | none
  --failure-mode MODE     what a hook error means (a hook that could not start, timed out, gave an
                          invalid verdict): open (the event passes) | closed (it fails), for every
                          event (hooks.failureMode); EVENT=MODE for one event, the others kept
                          (EVENT: task_completed, task_failed, idle, task_started); repeatable
  --max-hooks-per-event N
                          hooks in one event's chain, 1 to 64 (hooks.limits.maxHooksPerEvent)
  --chain-deadline-ms N   the whole chain of one event, in ms, 1 to 2147483647
                          (hooks.limits.chainDeadlineMs)
  --max-payload-bytes N   the context document of one invocation, in bytes, 1024 to 1073741824
                          (hooks.limits.maxPayloadBytes)
  --reset                 remove every setting set writes (failureAction, maxReopensPerTask,
                          followupOwner, failureMode, limits) first: the environment and defaults
                          apply again; flags given with it are then set
  --json                  print {policy, sources, origins, timeoutMs, failureModes, limits, block,
                          warnings, …} as JSON
  -h, --help              this help

Values are checked before anything is written; a bad one names its flag, its config.json field and
what it accepts. (A limit written in config.json by hand outside its range is capped to it, with one
warning naming the key, the value and the bound; the rest of the block stays in force.) Exit status: 0 done; 2 usage error (a bad value), a missing team dir, or a
config.json that is not a JSON object, or whose failureMode or limits cannot be added to (left
untouched).
`,
  config: `Usage: pi-teams-hooks config [--team-dir DIR | --team ID] [--hooks-dir DIR] [options] [--json]

Print the settings a leader started with the same flags (pi-teams-hooks watch …) would apply, and
where each comes from (flag, config.json, environment, default), without running anything:
  Gates     for each event, its whole chain in run order: the v1 file, the on_<event>.d/ files
            (the team layer <team dir>/hooks replacing or switching off global ones), then the HTTP
            handlers of config.json hooks.handlers; each with its layer, kind, settings line
            (timeout, matchers, mode=shadow) and trust state as pi-teams-hooks trust compares it
            (trusted, CHANGED, NEW, MISSING: a trusted gate that no longer runs; "no record" before
            the leader's first start); files that look like gates and do not run, with why
  Settings  the failure policy, hook timeout, failure mode per event, limits, setsid sweep, exit
            codes, defer timeout, writable fields, confidential, redact env, projection, and the
            hooks block's state (a block with a bad value is refused whole, and each problem shown)
Nothing is written: the trust record is read, never recorded.

  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir
  --task-list ID          task list id (default: config.json taskListId, else the team id)
  --lead NAME             the leader's name (default: config.json leadName, else team-lead)
  --hooks-dir DIR         where hooks live (default: $PI_TEAMS_HOOKS_DIR, relative to the teams
                          root, else <teams root>/_hooks)
  --cwd DIR               the hooks' working directory (default: this one)
  --timeout-ms N          hook timeout (default: $PI_TEAMS_HOOK_TIMEOUT_MS, else 60000)
  --timeout DURATION      the same as a duration: 90s, 5m, 1.5h (a bare number is seconds)
  --failure-action A      warn | followup | reopen | reopen_followup
  --max-reopens N         reopens per task before the gate stops reopening (0 = never)
  --followup-owner P      member | lead | none
  --trust-changes         as watch would run with it: gates not as trusted run as they are now
  --allow-insecure-hooks  as watch would run with it: world-writable gates and gates of another
                          owner run
  --json                  print the view as one JSON object: each setting as {value, source,
                          origin}, each event's gates with their trust, and "problems": each
                          as {kind, path, message} (kinds: docs/cli.md, "Problems as data")
  -h, --help              this help

Exit status: 0 shown; 1 config.json's "hooks" block is refused (its problems are shown); 2 usage
error (a bad flag value, a missing team dir or named hooks dir).
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
       pi-teams-hooks logs show <id> | last [--task ID] [--failed] [--json]
       pi-teams-hooks logs stats [filters] [--include-hand-runs] [--limit N] [--json]
       pi-teams-hooks logs prune [--keep N] [--older-than AGE] [--dry-run] [--json]

Read the hook logs in <team dir>/hook-logs/ (one JSON file per hook invocation).

  logs            a table, newest last: the run's id, time (in the machine's time zone, named in
                  the header), event, task, member, hook, outcome (passed, failed, timed out, error,
                  deferred; "passed (error)": a pass with a non-blocking error), duration, the
                  policy's actions (first "by hand" for a run of pi-teams-hooks run), and the
                  first stderr line (else the spawn error). It fits the terminal ($COLUMNS through
                  a pipe, else 80): the widest text is cut with …, and when that is not enough
                  hook, duration, event, member are left out (said on stderr)
  logs show <id>  one run in full: context, command, exit, timing, policy, stdout, stderr. <id> is:
                    the id in the first column of logs, or of the lines of run and watch (the
                    start of the run id: any 4 characters or more that only it starts with; a
                    chain's later hooks end in .2, .3…), or the whole run id;
                    last: the newest run; with --task ID the newest of that task, with --failed
                    the newest that failed, timed out or errored (a denied gate too); either flag
                    alone means last;
                    a time as the table prints it, "2026-03-01 09:12:44" (quoted or not): the
                    runs that started in that second;
                    the log's file name, path or stem, or a unique prefix or suffix of the name
                    ("2026-03-01T09-12", "task-3_2").
                  Several matches are listed, newest first, with their ids (exit 2)
  logs stats      per hook and event: runs, pass rate, failed / timed out / error counts, p50 and
                  p95 duration (nearest rank), and the tasks with the most failed runs (a narrow
                  terminal leaves out p50, then p95, then the tasks); under it, the passes with a
                  non-blocking error. Runs by hand (pi-teams-hooks run) are left out unless
                  --include-hand-runs or --trigger asks for them
  logs prune      remove old logs, printing each one: --keep N keeps the newest N, --older-than AGE
                  removes those started before then; both: the old ones beyond the newest N.
                  At least one is needed. Only files named like a hook log are ever removed

Team (one of):
  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team directory <$PI_TEAMS_ROOT_DIR>/<ID> (needs PI_TEAMS_ROOT_DIR)

Filters (logs and logs stats; all must hold):
  --event E[,E…]          task_completed, task_failed, idle, task_started
  --task ID               runs for this task (logs show: the newest run of this task)
  --member NAME           runs caused by this member
  --hook NAME             runs of this hook, named as the table shows it (on_task_completed.sh,
                          10-lint.sh, http:ci)
  --outcome O[,O…]        passed, failed, timed_out, error, deferred
  --since WHEN            started at or after WHEN: an age (30m, 1.5h, 1d12h, 1w) or an ISO 8601 time
                          (2026-03-01, 2026-03-01T09:00, 2026-03-01 09:00:00, 2026-03-01T11:00+02:00;
                          the machine's time zone unless it has an offset, like the times shown)
  --trigger T             what fired the run: hand (pi-teams-hooks run) or leader (watch, pi; a log
                          older than the field is the leader's)
  --limit N               the newest N matching logs, shown oldest first (default 50 for logs,
                          all for stats; 0 = all)

Output and more:
  --json                  NDJSON: one object per line (a log: {"file": …, …the log record})
  -f, --follow            after the table, print new logs as they land (fs.watch plus a rescan
                          every second); stop with Ctrl-C
  --failed                for show: the newest run that did not pass (failed, timed out, error)
  --include-hand-runs     for stats: count runs by hand (pi-teams-hooks run) too
  --keep N, --older-than AGE, --dry-run    for prune (AGE as for --since); --dry-run only lists
  -h, --help              this help

A file in hook-logs/ that is not a readable log is named in a warning on stderr and skipped.

Exit status: 0 done (also when files were skipped); 1 hook-logs/ cannot be listed, the log to show
cannot be read, or prune could not remove a file; 2 usage error (naming the flag), a missing team
dir, or a show <id> (or last) that matches no log, or several (they are listed).

Examples:
  pi-teams-hooks logs --team-dir ~/.pi/teams/alpha --outcome failed,timed_out --since 2h
  pi-teams-hooks logs show 4a739620 --team alpha
  pi-teams-hooks logs show last --failed --task 3 --team alpha
  pi-teams-hooks logs prune --team alpha --older-than 30d --dry-run
`,
  trust: `Usage: pi-teams-hooks trust [--team-dir DIR | --team ID] [--hooks-dir DIR] [--all | PATH…] [--yes] [--json]

The leader runs only gates it trusts: the sha256 and mode of every gate file (and the definition of
every HTTP handler) are recorded at its first start, and by this command, in an approved copy under
your state directory ($XDG_STATE_HOME/pi-teams-hooks/trust/, else ~/.local/state/…), written first,
and in <team dir>/hook-state/trust.json. The approved copy is the record in force: trust.json changed
by anything but this command is said to the lead, not trusted, and written back. A gate that is new,
changed (content or mode), or no longer runs (deleted, disabled or replaced through the team layer,
shadowed, no longer executable) holds its events until the change is approved here.

Without --all or paths, trust lists every such change: old and new hash and mode, and a diff for
a text file (from the copy kept in hook-state/trusted/), and records nothing.

Approving is a person's act: at a terminal, trust shows the changes and asks [y/N]; without one
(a script, an agent's tool call) it records nothing unless given --yes. Every approval is told to
the lead's inbox, saying how it was given.

  --all                   approve every change listed (the gates as they are now)
  PATH…                   approve only these gates' changes (a removed gate: its absence; an HTTP
                          handler by its gate name, http:NAME, as config lists it)
  --yes                   approve without a terminal (said so to the lead); at a terminal, it asks
  --team-dir DIR          the team directory (default: the team dir you are in)
  --team ID               the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir
  --hooks-dir DIR         where hooks live (default: $PI_TEAMS_HOOKS_DIR, else <teams root>/_hooks)
  --json                  print {changes, recorded} as JSON
  -h, --help              this help

A running leader takes an approval at once: it runs the events the change held, once each.

Exit status: 0 nothing left untrusted; 1 changes are listed and not recorded (none chosen, or not
approved); 2 usage error (a path that is not a changed gate, a gate that changed again while shown,
a missing team dir, an unreadable record without --all).
`,
};
