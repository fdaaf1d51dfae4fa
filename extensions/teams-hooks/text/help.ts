/** `--help` texts. Each names every flag the command accepts, and nothing it does not. */

import { SETUP_HELP } from "./help-setup.js";

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
                          gate_missing, gate_not_executable) until \`pi-teams-hooks trust\`;
                          a global gate whose settings line says required=false may be dropped
                          by the team (switched off or replaced in <team dir>/hooks) without
                          approval: said as "dropped by the team", never gate_missing
  --allow-insecure-hooks  run world-writable gates and gates owned by another user (refused
                          otherwise: insecure_hook)
`;

const HELP: Readonly<Record<string, string>> = {
  ...SETUP_HELP,
  demo: `Usage: pi-teams-hooks demo

Copy examples/demo-team/ to a temporary folder, start the leader on it with the example gate
hooks/on_task_completed.sh, and play two workers: one task passes its gate; one fails, is reopened
with a follow-up task and a nudge, and passes once fixed. Prints the leader's lines as they happen,
then the hook logs and where the team dir is. Takes a few seconds.

  -h, --help              this help
`,
  run: `Usage: pi-teams-hooks run <event> [--team-dir DIR | --team ID] [options]

Fire one event by hand, exactly as the leader would: find the hook, run it, write its log to
<team dir>/hook-logs/, and print one line, which ends with the run's id ("(run 4a739620)": pass it
to logs show; a chain also prints a line per hook, each with its id). <event> is task_completed,
task_failed, idle or task_started (a worker claimed the task). Before the hook runs, it warns on
stderr about what doctor finds wrong with the gates, as watch does at its start: files that look
like gates and never run (a stray on_* name, an on_<event>.d/ file without an execute bit),
settings lines that stop a gate or are not read (# PI-TEAMS-HOOKS:), gates refused as insecure.

Event:
  --task ID               the task (required for task_completed, task_failed and task_started)
  --member NAME           who caused the event (default: for a task event the task's owner, as the
                          leader has it; for idle or a task without owner none: the hook sees null)
                          (ids and names: A-Z a-z 0-9 _ - only; anything else is refused)
  --timestamp ISO         when it happened (default: none)
  --apply-policy          also apply the failure policy (task metadata, reopen, follow-up, nudge);
                          for task_started, the start gate's answer: a denied claim is put back
                          to pending without owner and the member told (a task that holds no
                          claim is refused: exit 2)

${TEAM_FLAGS}
Output:
  --json                  print the log record as JSON instead of one line (its result.runId;
                          a chain: the deciding run's record, every run id in runIds)
  -h, --help              this help
On a terminal, a hook still running after a second says so on stderr (\`running on_idle.sh… 3s\`),
redrawn in place and cleared when it ends; through a pipe nothing is added.

A gate that answers {"decision":"defer"} holds the event: with --apply-policy the task is marked
deferred and a deferral is recorded for \`pi-teams-hooks decide\` (or the task API) to settle; without
it nothing is held.
A gate that answers {"decision":"patch","patch":{…}} passes: with --apply-policy the patch is written
to the task within hooks.writableFields (default: metadata); without it nothing is written.
A pass that let an error through (a Claude Code gate's non-blocking error; an error under failure
mode open that a later hook passed over) says "passed (non-blocking error: …)", as watch does.
The run's log says it was fired by hand ("trigger": "hand"): logs stats and the dashboard's figures
leave such runs out unless asked for.

With --apply-policy, a gate that cannot judge the work (refused as untrusted, missing or insecure, a
settings line that cannot be read, a gate that cannot start) holds the event instead of failing it:
the task is marked held and its member told once that it waits for the lead; nothing is counted.

Exit status: 0 the gate passed, or there is no hook for the event; 1 the gate failed (or, without
--apply-policy, could not run or was refused as untrusted or insecure), or --apply-policy could not
write the policy; 2 usage error (a bad flag, a missing team dir, task file, named hooks dir or
--cwd); 3 the gate deferred, or (with --apply-policy) the event is held for the lead.

Example:
  pi-teams-hooks run task_completed --team-dir ~/.pi/teams/alpha --task 3 --member alice
`,
  decide: `Usage: pi-teams-hooks decide [--team-dir DIR | --team ID] <run id> allow|deny [--code C] [--reason R]
                              [--message M] [--by NAME] [--failure-action A] [--max-reopens N]
                              [--followup-owner P] [--json]

Settle a held gate: a gate that answered {"decision":"defer"} (a file hook, or an HTTP handler with
202), or an HTTP handler with answer "held" that handed the gate to a CI engine, for a task event.
<run id> is the run id of the run that deferred: the deferral's file name in
<team dir>/hook-state/deferrals/, the "run" of the leader's event line, the X-Pi-Teams-Hook-Run-Id
(or {{runId}}) an HTTP handler was sent; or its first characters (at least 4, like the id column of logs) when they
name one held run. The failure policy then applies exactly as for a pass (allow) or a failure
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
hooks dir, each event's chain of gates in run order, the policy in use (all of it, with each gate's
trust: pi-teams-hooks config), "watching …" once events are taken, "scanned N task(s) …" when the
start-up scan (which looks at every task file in the background) is done, then one line per event,
ending with its deciding run's id ("(run 4a739620)": pass it to logs show). At its start it warns,
as run does, about gates that would not run as written (what doctor finds wrong with them).
Stops on SIGINT / SIGTERM after running hooks finish (up to their timeout).
A change to config.json is picked up while running: its "hooks" block (policy, failure modes,
limits) is read again. An invalid block, or a config.json that is not JSON, deleted or without
"hooks", keeps the block in force (one warning says why); "hooks": {} resets to the defaults. A
limit outside its range is capped (one warning naming the key, the value and the bound); a
handler with "enabled": false is skipped, each event's log saying so.
Its own state (the ledger, the scan state, a first start's mark, the messages sent, the gates it
trusts) is in <team dir>/hook-state/: docs/ledger.md, docs/security.md. The first start trusts the
gates it finds; a gate changed, added or removed later holds its events (not failed) until \`pi-teams-hooks trust\`.

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
  --json                  print events as NDJSON (an event's runId; a chain's every run in runIds;
                          times in UTC, ISO 8601)
  -v, --verbose           also say, for each change looked at, whether it became an event and why
                          not (baseline, in the ledger, same signature, not a task file, no gate, a
                          gate skipped by its matchers…); {"type":"verbose","reason":…} with --json
  -h, --help              this help
Event lines give the time on the machine's clock; the "watching" line names its zone. On a
terminal, hooks running for more than 2 s are shown on a line of their own, redrawn in place.

Exit status: 0 stopped cleanly; 1 a fatal error; 2 usage error, or a team dir, named hooks dir or
--cwd that is not there.
`,
  serve: `Usage: pi-teams-hooks serve [--teams-root DIR] [--listen HOST:PORT] [--allow-remote] [--rate-limit N/PERIOD]
       pi-teams-hooks serve keys create --name NAME --scopes S[,S…] --teams T[,T…] [--templates T[,T…]]
                                        [--rate-limit N/PERIOD] [--url BASE] [--teams-root DIR]
       pi-teams-hooks serve keys list [--json] [--teams-root DIR]
       pi-teams-hooks serve keys revoke NAME [--teams-root DIR]
       pi-teams-hooks serve keys login NAME [--url BASE] [--teams-root DIR]

The task API (docs/remote-gates.md): other systems create tasks from a team's templates
(config.json hooks.templates), poll their status and decide held gates, each with a bearer key
limited to its scopes, teams and templates. Prints "listening on http://HOST:PORT" once it accepts
connections, and runs until SIGINT or SIGTERM. The same server shows a read-only dashboard of every
team's hook runs at / (docs/dashboard.md): the overview, the runs table with the filters of logs,
each run, and new runs as they land.
  GET  /                               the dashboard (pages; /events: server-sent events)
  POST /api/v1/teams/TEAM/tasks        {"template": "SLUG", "parameters": {…}} → 202 (tasks:create)
  GET  /api/v1/teams/TEAM/tasks/ID     id, status, qualityGateStatus, startDenial, updatedAt
                                       (tasks:read; a confidential team's without the denial's
                                       reason and code)
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
                          so put TLS in front (docs/security.md). With it the dashboard too needs a
                          key with logs:read (a login link, or the bearer header), also on loopback
                          (a proxy on this machine); without it the dashboard needs none
  --rate-limit N/PERIOD   requests per key, for keys without their own rate (default 600/min;
                          PERIOD s, min or h); past it: 429 with Retry-After
  -h, --help              this help

keys create prints the new key alone on its last line, the only time it is shown
(KEY=$(pi-teams-hooks serve keys create … | tail -1)); only a salted hash is stored:
  --name NAME             the key's name (keys list, keys revoke, the tasks it creates)
  --scopes S,…            tasks:create, tasks:read, gates:decide, logs:read (the dashboard)
  --teams T,…             the teams (folders of the teams root) it may use
  --templates T,…         the only templates it may create from and read tasks of (default: all)
  --rate-limit N/PERIOD   its own rate instead of the server's
  --url BASE              with logs:read: the dashboard's address for the login URL it prints
                          (http[s]://HOST[:PORT]; default http://127.0.0.1:7420)
keys list prints names, prefixes and what each key may do (--json: as JSON), never a key; keys
revoke NAME deletes the key and ends its dashboard sessions: a running server refuses it from its
next request, and ends its open live streams within a second. keys login NAME prints, alone on its
last line, a new login URL for the dashboard (BASE/login?token=…) for the key NAME, which must have
logs:read; it works once, for 15 minutes, and replaces the key's unused one (keys create prints the
first). Opened in a browser, it shows a Log in button that spends it and starts a session of 12
hours.

Exit status: 0 stopped cleanly (serve) or done; 1 no such key (revoke), or a file cannot be
written; 2 usage error (login: no such key, or one without logs:read), a teams root that is not a
directory, or an address that cannot be used.
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
  policy get|set  show or change the failure policy, failure modes and limits (config.json "hooks")
  config          show every event's chain of gates with its trust, and every setting with its source
  schema [name]   print the JSON Schema of the context document, a log record, a task or the config
  logs            list, show, follow, summarise and prune the hook logs of a team
  trust           show gates changed since they were trusted, and approve them
  serve           the task API: other systems create tasks from templates, with keys
  help [command]  show help for a command

Every command takes --help. Hook contract: docs/hook-contract.md.
Tables fit the terminal (through a pipe: $COLUMNS, else 80 columns); colour only on a terminal, or
with FORCE_COLOR=1, never with NO_COLOR=1; times are the machine's local time. See docs/cli.md.
`;
}
