/**
 * The command table: each command's usage, summary, description, flags, exit statuses and examples,
 * written once. The parser's options (cli/main.ts), every `--help` (text/help.ts) and the reference
 * blocks of docs/cli.md (text/cli-reference.ts, `npm run docs:cli`) are made from it, and a test fails
 * when docs/cli.md is stale. Data only: it loads on every call, so it imports nothing at run time.
 */
import type { CommandSpec, FlagGroup, FlagSpec, ProgramSpec } from "../text/help.js";
import { SETTINGS, flagDefault, rangeText, type SettingName } from "../settings/table.js";

// Flags that several commands take with the same meaning, each written once.

const TEAM_DIR: FlagSpec = {
  name: "team-dir",
  type: "string",
  value: "DIR",
  default: "the team dir you are in",
  help: "the team directory",
};
const TEAM: FlagSpec = {
  name: "team",
  type: "string",
  value: "ID",
  help: "the team $PI_TEAMS_ROOT_DIR/ID instead of --team-dir (needs PI_TEAMS_ROOT_DIR)",
};
const HOOKS_DIR: FlagSpec = {
  name: "hooks-dir",
  type: "string",
  value: "DIR",
  default:
    "$PI_TEAMS_HOOKS_DIR, relative to the teams root, else <teams root>/_hooks; the teams root is $PI_TEAMS_ROOT_DIR, else the team dir's parent",
  help: "where hooks live",
};
/** The flag of a setting of the settings table (settings/table.ts): its name, default and doc are the table's. */
function settingFlag(name: SettingName, value: string): FlagSpec {
  const flag = SETTINGS[name].flag ?? SETTINGS[name].setFlag ?? `--${name}`;
  return { name: flag.slice(2), type: "string", value, default: flagDefault(name), help: SETTINGS[name].doc };
}
/** The flag of `policy set` that writes a limit's field: the table's doc, the range and the field. */
function limitFlag(name: "maxHooksPerEvent" | "chainDeadlineMs" | "maxPayloadBytes"): FlagSpec {
  const { setFlag, doc, field } = SETTINGS[name];
  return { name: setFlag.slice(2), type: "string", value: "N", help: `${doc}, ${rangeText(name)} (${field})` };
}

const FAILURE_ACTION = settingFlag("failureAction", "A");
const MAX_REOPENS = settingFlag("maxReopensPerTask", "N");
const FOLLOWUP_OWNER = settingFlag("followupOwner", "P");

/** The team and the hooks, as `run`, `watch` and `config` take them. */
const TEAM_GROUP: FlagGroup = {
  title: "Team",
  home: "run",
  rows: [
    TEAM_DIR,
    TEAM,
    {
      name: "task-list",
      type: "string",
      value: "ID",
      default: "config.json taskListId, else the team id",
      help: "the task list id",
    },
    {
      name: "lead",
      type: "string",
      value: "NAME",
      default: "config.json leadName, else team-lead",
      help: "the leader's name",
    },
    HOOKS_DIR,
    { name: "cwd", type: "string", value: "DIR", default: "this one", help: "the hooks' working directory" },
    settingFlag("timeoutMs", "N"),
    {
      name: "timeout",
      type: "string",
      value: "DURATION",
      help: "the same as a duration: 90s, 5m, 1.5h, 1m30s, 1500ms (a bare number is seconds); not together with --timeout-ms",
    },
  ],
};

/** The failure policy a leader (or a command acting as one) applies. */
const POLICY_GROUP: FlagGroup = {
  title: 'Failure policy (flag > config.json "hooks" > environment > default)',
  home: "run",
  rows: [FAILURE_ACTION, MAX_REOPENS, FOLLOWUP_OWNER],
};

const TRUST_GROUP: FlagGroup = {
  title: "Trust (docs/security.md)",
  home: "run",
  rows: [
    {
      name: "trust-changes",
      type: "boolean",
      help: 'run gates that changed, appeared or went since they were trusted, as they are now (for writing gates; each change is still said, the log keeps both hashes); without it such a gate is refused (untrusted_hook, gate_missing, gate_not_executable) until `pi-teams-hooks trust`: the leader and run --apply-policy hold its event for the lead, run alone fails. On a team with no trust record yet, nothing is compared. A global gate whose settings line says required=false may be dropped by the team (switched off or replaced in <team dir>/hooks) without approval: said as "dropped by the team", never gate_missing',
    },
    {
      name: "allow-insecure-hooks",
      type: "boolean",
      help: "run world-writable gates and gates owned by another user (refused otherwise: insecure_hook)",
    },
  ],
};

/** `pi-teams-hooks --help`, around the command list. */
export const PROGRAM: ProgramSpec = {
  name: "pi-teams-hooks",
  description: [
    "Quality gates for agent teams: run hook scripts when tasks complete or fail, when members go idle and when workers claim tasks, apply the team's failure policy, and log every invocation.",
  ],
  footer: [
    "Every command takes --help; -v, --version prints the version. Hook contract: docs/hook-contract.md.\nA team is a folder of a teams root, where pi keeps its teams: ~/.pi/agent/teams, or $PI_TEAMS_ROOT_DIR. A command takes the teams root from $PI_TEAMS_ROOT_DIR, else the parent of --team-dir (serve: else ~/.pi/agent/teams); --team ID is $PI_TEAMS_ROOT_DIR/ID. A command not told which team uses the team dir it is run in.\nExit status: 0 success; 1 a gate failed or a check found a problem; 2 a usage or setup error; 3 (run) a gate held the event.\nTables fit the terminal (through a pipe: $COLUMNS, else 80 columns); colour only on a terminal, or with FORCE_COLOR=1, never with NO_COLOR=1; times are the machine's local time. See docs/cli.md.",
  ],
};

const RUN: CommandSpec = {
  name: "run",
  synopsis: "run <event>",
  summary: "fire one event by hand (task_completed, task_failed, idle, task_started)",
  usage: [
    "run <event> [--team-dir DIR | --team ID] [--task ID] [--member NAME] [--timestamp ISO] [--apply-policy] [--task-list ID] [--lead NAME] [--hooks-dir DIR] [--cwd DIR] [--timeout-ms N | --timeout DURATION] [--failure-action A] [--max-reopens N] [--followup-owner P] [--trust-changes] [--allow-insecure-hooks] [--json]",
  ],
  description: [
    `Fire one event by hand, exactly as the leader would: find the hook, run it, write its log to <team dir>/hook-logs/, and print one line, which ends with the run's id ("(run 4a739620)": pass it to logs show; a chain also prints a line per hook, each with its id). <event> is task_completed, task_failed, idle or task_started (a worker claimed the task). The team's HTTP handlers (config.json hooks.handlers) run too, after the files, as in the leader. Without --apply-policy nothing in the team changes but the log.`,
    "Before the hook runs, it warns on stderr about what doctor finds wrong with the gates, as watch does at its start: files that look like gates and never run (a stray on_* name, an on_<event>.d/ file without an execute bit), settings lines that stop a gate or are not read (# PI-TEAMS-HOOKS:), gates refused as insecure.",
  ],
  groups: [
    {
      title: "Event",
      rows: [
        {
          name: "task",
          type: "string",
          value: "ID",
          help: "the task (required for task_completed, task_failed and task_started; refused for idle)",
        },
        {
          name: "member",
          type: "string",
          value: "NAME",
          help: "who caused the event (default: for a task event the task's owner, as the leader has it, so a gate's members= matcher judges the run as it would the leader's; for idle or a task without owner none: the hook sees null and no variable)",
        },
        {
          name: "timestamp",
          type: "string",
          value: "ISO",
          help: "when it happened (default: none: the hook sees null and no variable)",
        },
        {
          name: "apply-policy",
          type: "boolean",
          help: "also apply the failure policy (task metadata, reopen, follow-up, nudge); for task_started, the start gate's answer: a denied claim is put back to pending without owner and the member told (a task that holds no claim is refused: exit 2)",
        },
      ],
    },
    TEAM_GROUP,
    POLICY_GROUP,
    TRUST_GROUP,
    {
      title: "Output",
      rows: [
        {
          name: "json",
          type: "boolean",
          help: "print the log record as JSON instead of one line (its result.runId is the whole run id; a chain: the deciding run's record, every run id in runIds)",
        },
      ],
    },
  ],
  notes: [
    "--task, --member and --lead take safe names only: A-Z a-z 0-9 _ and -. A name with any other character is refused (exit 2), never mapped: in a file name it would become another (a/b and a.b are both a-b.json, another task's file).\nOn a terminal, a hook still running after a second says so on stderr (`running on_idle.sh… 3s`), redrawn in place and cleared when it ends; through a pipe nothing is added.",
    'A gate that answers {"decision":"defer"} holds the event: with --apply-policy the task is marked deferred and a deferral is recorded for `pi-teams-hooks decide` (or the task API) to settle; without it nothing is held.\nA gate that answers {"decision":"patch","patch":{…}} passes: with --apply-policy the patch is written to the ' +
      `task within hooks.writableFields (default: metadata); without it nothing is written.\nA pass that let an error through (a Claude Code gate's non-blocking error; an error under failure mode open that a later hook passed over) says "passed (non-blocking error: …)", as watch does.\nThe run's log says it was fired by hand ("trigger": "hand"): logs stats and the dashboard's figures leave such runs out unless asked for.`,
    "With --apply-policy, a gate that cannot judge the work (refused as untrusted, missing or insecure, a settings line that cannot be read, a gate that cannot start) holds the event instead of failing it: the task is marked held and its member told once that it waits for the lead; nothing is counted. A policy step that cannot be written (a task lock held past 10 s, a full disk) is said, and the log says what was applied; run the command again once the cause is gone.",
  ],
  exit: [
    {
      code: 0,
      when: "the gate passed, or there is no hook for the event (a file skipped as not executable is then listed), or an idle hook failed: idle is observe-only, so its failure is reported (the line says failed, and a note that nothing is enforced) but stops nothing",
    },
    {
      code: 1,
      when: "the gate of a task event failed or timed out (or, without --apply-policy, could not start or was refused as untrusted or insecure), or --apply-policy could not write the policy",
    },
    {
      code: 2,
      when: "usage error (a bad flag or name, a missing team dir, task file, named hooks dir or --cwd; a task_started with --apply-policy on a task that holds no claim)",
    },
    { code: 3, when: "the gate deferred, or (with --apply-policy) the event is held for the lead" },
  ],
  examples: ["pi-teams-hooks run task_completed --team-dir ~/.pi/agent/teams/alpha --task 3 --member alice"],
};

const DECIDE: CommandSpec = {
  name: "decide",
  summary: "settle a held gate (one that answered defer, or a CI handler's): allow or deny",
  usage: [
    "decide [--team-dir DIR | --team ID] <run id> allow|deny [--code C] [--reason R] [--message M] [--by NAME] [--failure-action A] [--max-reopens N] [--followup-owner P] [--yes] [--json]",
  ],
  description: [
    `Settle a held gate: a gate that answered {"decision":"defer"} (a file hook, or an HTTP handler with 202), or an HTTP handler with answer "held" that handed the gate to a CI engine, for a task event. <run id> is the run id of the run that deferred: the "(run …)" of the leader's event line, the held: line of run --apply-policy, the deferral's file name in <team dir>/hook-state/deferrals/, the X-Pi-Teams-Hook-Run-Id (or {{runId}}) an HTTP handler was sent; or its first characters (at least 4, like the id column of logs) when they name one held run (several: they are listed, exit 2). The failure policy then applies exactly as for a pass (allow) or a failure (deny, with the code, reason and message given), logged as a second hook log that names the deferred run. The task API's decision route does the same.`,
    "A running leader applies it (this command waits up to 10 s to say so); with no leader running, this command applies it itself, holding the leader lock for that moment.",
    "Either way it is applied under the settings in force when the gate held the event (the failure policy, the failure mode, the timeout, hooks.confidential, hooks.reassignOnReopen), stamped into the deferral then, whatever config.json or the flags say now; the output says so, and which of them changed since.",
    "A decision by hand is a person's, as an approval of `trust` is: at a terminal it shows what is held and asks ([y/N]); without one it needs --yes. Its output and a note to the lead's inbox say which, and who decided (--by). Names that start with api: are refused: they are the task API's keys, set by serve for a decision made with that key.",
  ],
  groups: [
    {
      rows: [
        TEAM_DIR,
        TEAM,
        {
          name: "code",
          type: "string",
          value: "C",
          help: "the denial's code (a-z 0-9 _ . -, starting with a letter; at most 64 bytes)",
        },
        { name: "reason", type: "string", value: "R", help: "one line, at most 1,024 bytes" },
        { name: "message", type: "string", value: "M", help: "free text, at most 8 KiB" },
        {
          name: "by",
          type: "string",
          value: "NAME",
          default: "$USER",
          help: "who decided: in the task's qualityGateDecidedBy and the log; not api:… (the task API's keys, set by serve)",
        },
        {
          name: "yes",
          type: "boolean",
          help: "decide without a terminal (said so in the output and to the lead); at a terminal, it asks all the same",
        },
      ],
    },
    {
      title:
        'Failure policy of a deferral held before its settings were stamped, applied when no leader runs (flag > config.json "hooks" > environment > default; a running leader applies its own)',
      rows: [FAILURE_ACTION, MAX_REOPENS, FOLLOWUP_OWNER],
    },
    {
      title: "Output",
      rows: [
        {
          name: "json",
          type: "boolean",
          help: "print the answer as one JSON object: runId, decidedHow (at a terminal, or without a terminal (--yes)), kind (applied, recorded, conflict, expired, invalid, unknown) and what goes with it (deferral, actions, logFile, appliedUnder, existing, expiresAt, problem)",
        },
      ],
    },
  ],
  notes: [
    "--code, --reason and --message are checked as a gate's verdict is (docs/hook-contract.md); a bad one is a usage error naming the flag.\nA deferral is decided once: the same decision again answers as the first did; another is refused. A deferral past its deadline (config.json hooks.deferTimeoutMs, default 24 h) has expired: its gate failed as the closed error defer_expired, whatever is asked now.",
  ],
  exit: [
    { code: 0, when: "applied, or recorded for the running leader to apply" },
    {
      code: 1,
      when: "refused (decided otherwise before, or expired), not confirmed at the terminal, or recorded but not applied (a task lock held too long: the next start of the leader, or this command again, applies it)",
    },
    {
      code: 2,
      when: "usage error (a bad flag or value, naming it; a --by that starts with api:; no terminal and no --yes; a missing team dir; no deferral with that run id, or several)",
    },
  ],
  examples: [
    'pi-teams-hooks decide --team alpha 5f0c1e2a deny --code ci.failed --reason "2 tests fail in auth/"',
    'pi-teams-hooks decide --team-dir "$PI_TEAMS_TEAM_DIR" "$PI_TEAMS_RUN_ID" allow --by buildkite --yes',
  ],
};

const WATCH: CommandSpec = {
  name: "watch",
  summary: "be the leader: watch a team directory and run its gates",
  usage: [
    "watch [--team-dir DIR | --team ID] [--inbox observe|consume|off] [--concurrency N] [--reconcile-ms N] [--poll] [--poll-interval-ms N] [--catch-up] [--once] [team, policy and trust flags as for run] [--json] [-v | --verbose]",
  ],
  description: [
    `Be the team's quality-gate leader: watch the task list and the leader's inbox, run each event's hook once, apply the failure policy, and log every invocation to <team dir>/hook-logs/. Prints the hooks dir, each event's chain of gates in run order, the policy in use (all of it, with each gate's trust: pi-teams-hooks config), "watching …" once events are taken, "scanned N task(s) …" when the start-up scan (which looks at every task file in the background) is done, then one line per event, ending with its deciding run's id ("(run 4a739620)": pass it to logs show). At its start it warns, as run does, about gates that would not run as written (what doctor finds wrong with them).\nStops on SIGINT / SIGTERM after running hooks finish (up to their timeout; the later hooks of a chain do not start, and the event runs again at the next start); a second signal ends them at once.\nA change to config.json is picked up while running: its "hooks" block (policy, failure modes, limits) is read again. An invalid block, or a config.json that is not JSON, deleted or without "hooks", keeps the block in force (one warning says why); "hooks": {} resets to the defaults. A limit outside its range is capped (one warning naming the key, the value and the bound); a handler with "enabled": false is skipped, each event's ` +
      "log saying so.\nIts own state (the ledger, the scan state, a first start's mark, the messages sent, the gates it trusts) is in <team dir>/hook-state/: docs/ledger.md, docs/security.md. The first start trusts the gates it finds; a gate changed, added or removed later holds its events (not failed) until `pi-teams-hooks trust`.",
  ],
  groups: [
    {
      title: "Events and sources",
      rows: [
        {
          name: "inbox",
          type: "string",
          value: "MODE",
          help: "observe (default: read the leader's inbox, never mark messages read), consume (also mark handled idle notifications read), off (ignore it)",
        },
        {
          name: "concurrency",
          type: "string",
          value: "N",
          default: "1",
          help: "events of different tasks run in parallel, up to N",
        },
        {
          name: "reconcile-ms",
          type: "string",
          value: "N",
          default: "5000",
          help: "scan the task list every N ms for changes a watcher missed",
        },
        {
          name: "poll",
          type: "boolean",
          help: "poll instead of using file-system notifications (network file systems)",
        },
        { name: "poll-interval-ms", type: "string", value: "N", default: "250", help: "polling interval with --poll" },
        {
          name: "catch-up",
          type: "boolean",
          help: "on the first start, run completions that already exist (default: record them as a baseline and run only what happens from now on)",
        },
        { name: "once", type: "boolean", help: "handle what is pending, then exit (for cron and CI)" },
      ],
    },
    TEAM_GROUP,
    POLICY_GROUP,
    TRUST_GROUP,
    {
      title: "Output",
      rows: [
        {
          name: "json",
          type: "boolean",
          help: "print events as NDJSON (an event's runId; a chain's every run in runIds; times in UTC, ISO 8601)",
        },
        {
          name: "verbose",
          short: "v",
          type: "boolean",
          help: 'also say, for each change looked at, whether it became an event and why not (baseline, in the ledger, same signature, not a task file, no gate, a gate skipped by its matchers…); {"type":"verbose","reason":…} with --json',
        },
      ],
    },
  ],
  notes: [
    `Event lines give the time on the machine's clock; the "watching" line names its zone. On a terminal, hooks running for more than 2 s are shown on a line of their own, redrawn in place.`,
  ],
  exit: [
    { code: 0, when: "stopped cleanly" },
    { code: 1, when: "a fatal error" },
    {
      code: 2,
      when: "usage error, another leader already watching this team, or a team dir, named hooks dir or --cwd that is not there",
    },
  ],
  examples: [
    "pi-teams-hooks watch --team-dir ~/.pi/agent/teams/alpha --failure-action reopen_followup",
    "pi-teams-hooks watch --team alpha --once --json",
  ],
};

const DEMO: CommandSpec = {
  name: "demo",
  summary: "play a small team through a passing, a failing and a fixed gate (npm start)",
  usage: ["demo [--keep]"],
  description: [
    "Copy examples/demo-team/ to a temporary folder, start the leader on it with the example gate hooks/on_task_completed.sh, and play two workers: one task passes its gate; one fails, is reopened with a follow-up task and a nudge, and passes once fixed. Prints the leader's lines as they happen, then the hook logs. The temporary folder is removed at the end, however the demo ends, and so are the folders of the user's state that its leader's first run made (trust records, runs), when nothing else is in them. Takes a few seconds.",
  ],
  groups: [
    {
      rows: [
        {
          name: "keep",
          type: "boolean",
          help: "keep the temporary team (its tasks, inboxes and hook logs) and say where it is, to look around",
        },
      ],
    },
  ],
  exit: [
    { code: 0, when: "the demo played to its end" },
    { code: 1, when: "a step did not happen within 15 s (said on stderr)" },
    { code: 2, when: "usage error (it takes no argument)" },
  ],
};

const DOCTOR: CommandSpec = {
  name: "doctor",
  summary: "what would stop a gate from running: hooks, team files, access, policy, locks",
  usage: ["doctor [--team-dir DIR | --team ID] [--hooks-dir DIR] [--json]"],
  description: [
    "Check what would stop a gate from running, without running anything (run it as the leader's user):",
    {
      list: [
        [
          "Hooks",
          "for each event, the file that would run and how (bash, node, its #! interpreter), and every candidate skipped or shadowed and why: not executable, a directory, no #! line on a bare file, a CRLF #! line, an interpreter missing or not on PATH, world-writable; each gate's settings line as it will apply, and each HTTP handler: its method and URL, its body template and answer, its secret variables (set or NOT SET, never a value), signing, and its trust",
        ],
        [
          "Team",
          "the team dir, config.json, the task list (each file that is not a task, with its field) and the leader's inbox, read as the leader reads them",
        ],
        [
          "Access",
          "who besides the user doctor runs as (the leader's) could change a gate, hook-state/, hook-logs/ or the approved trust record: their owner, a group with other members, every user, or a folder above them others can write (a warning each); which users write the team's files; team folders the leader could not rewrite files in",
        ],
        [
          "Policy",
          'every setting watch would apply without flags (failure policy, hook timeout, failure mode per event, limits, sweep, exit codes, defer timeout, writable fields, what hooks are shown and what is redacted, reassignment on reopen), computed as the leader computes it, and where each comes from; a "hooks" block with a bad value is refused whole, as the leader refuses it',
        ],
        ["Locks", "*.lock files anywhere in the team dir: stale ones, and live ones held for more than 10 s"],
      ],
    },
  ],
  groups: [
    {
      rows: [
        TEAM_DIR,
        TEAM,
        { ...HOOKS_DIR, help: "the hooks dir to check" },
        {
          name: "json",
          type: "boolean",
          help: `print the report as one JSON object: hooksDir, hooks[] (each candidate with its status: chosen, skipped, absent, shadowed; a handler's url, method, template, answer, timeoutMs, headers, secretHeaders, bodySecrets, signing, trust), team, policy (as policy get --json, with checks), locks, access, leader, errors, warnings; its "problems" holds every warning and error as {kind, path, message} (kinds: docs/cli.md, "Problems as data")`,
        },
      ],
    },
  ],
  notes: [
    "Marks: ok, -- (information), warn, FAIL; on a terminal with colour ✓ · ! ✗. A missing default hooks dir is a warning (no gates at all); a missing $PI_TEAMS_HOOKS_DIR is an error; a --team-dir, --team or --hooks-dir that is not there is exit 2, before any check.",
  ],
  exit: [
    { code: 0, when: "no errors (warnings allowed)" },
    {
      code: 1,
      when: "something would stop a gate from running (a hook that cannot start, a hook file skipped with nothing else to run for its event, a settings line that cannot be read, a gate or handler new or changed since it was trusted or trusted and gone (its events are held until the lead approves), an event the leader holds (hook-state/holds.json), a $PI_TEAMS_HOOKS_DIR that is missing, a team dir that cannot be read or written, a task list or inbox that cannot be read)",
    },
    { code: 2, when: "usage error, or a team dir or --hooks-dir that is not there" },
  ],
  examples: ["pi-teams-hooks doctor --team-dir ~/.pi/agent/teams/alpha"],
};

const INIT: CommandSpec = {
  name: "init",
  summary: "copy the example gates into the hooks dir (or write gates from Claude Code hooks)",
  usage: ["init [--hooks-dir DIR | --team-dir DIR | --team ID] [--from-claude FILE] [--force]"],
  description: [
    "Copy the example gates (on_task_completed.sh, on_task_failed.mjs, on_idle.sh) from the package's hooks/ into a hooks dir, with execute bits, and print what was written. A file earlier in the lookup order that would run instead of a copied gate is pointed out.",
    `With --from-claude FILE, write gates from a Claude Code settings file instead of the examples: each command hook of TaskCompleted becomes on_task_completed.d/claude-<n>.sh, each of TeammateIdle on_idle.d/claude-<n>.sh (n = 1, 2, … per event, in file order), a bash script that runs the command unchanged; its second line, "# pi-teams-hooks: format=claude timeout=<N>s", carries the hook's timeout (the key is left out when the hook gives none). Hooks of another type (http, prompt, agent) are skipped, a matcher on these two events is ignored (as Claude Code ignores it), and the other events are listed as not mapped; each is named in the output.`,
  ],
  groups: [
    {
      rows: [
        {
          ...HOOKS_DIR,
          default: "the global hooks dir: $PI_TEAMS_HOOKS_DIR, relative to the teams root, else <teams root>/_hooks",
          help: "where to put them",
        },
        {
          name: "team-dir",
          type: "string",
          value: "DIR",
          help: "a team dir, to find the teams root when $PI_TEAMS_ROOT_DIR is not set (the teams root is then its parent folder); it must exist",
        },
        {
          name: "team",
          type: "string",
          value: "ID",
          help: "the team ID under $PI_TEAMS_ROOT_DIR: the gates go to that team's global hooks dir, where run --team ID looks for them (the next steps printed name it by --team); it must exist",
        },
        {
          name: "from-claude",
          type: "string",
          value: "FILE",
          help: "a Claude Code settings file (.claude/settings.json): write its TaskCompleted and TeammateIdle command hooks as gates",
        },
        {
          name: "force",
          type: "boolean",
          help: "replace files that already exist (each through a temp file and a rename)",
        },
      ],
    },
  ],
  notes: [
    "Without --hooks-dir, the teams root comes from $PI_TEAMS_ROOT_DIR or --team-dir; with neither (and no absolute $PI_TEAMS_HOOKS_DIR) init says so and writes nothing. init creates the hooks dir, not the folders above it: a parent that is not there is exit 2. An existing file is never overwritten without --force: init then writes nothing and names the files.",
  ],
  exit: [
    { code: 0, when: "written" },
    {
      code: 1,
      when: "a file already exists (nothing is written; the files are named), the dir cannot be written, or the settings file has no TaskCompleted or TeammateIdle command hook (nothing is written)",
    },
    {
      code: 2,
      when: "usage error, a team dir or the hooks dir's parent folder that is not there, or a settings file that is missing, not JSON or of the wrong shape (nothing is written; each problem is named by its JSON path)",
    },
  ],
  examples: [
    "pi-teams-hooks init --team-dir ~/.pi/agent/teams/alpha",
    "pi-teams-hooks init --team-dir ~/.pi/agent/teams/alpha --from-claude .claude/settings.json",
  ],
};

/** What `policy set` takes: each setting it writes (the settings table's `setFlag`), in the table's order, then `--reset`. */
const POLICY_SET_FLAGS = [
  ...Object.values(SETTINGS).flatMap((setting) => (setting.setFlag === null ? [] : [setting.setFlag.slice(2)])),
  "reset",
];

const POLICY: CommandSpec = {
  name: "policy",
  synopsis: "policy get|set",
  summary: 'show or change the failure policy, failure modes and limits (config.json "hooks")',
  usage: [],
  description: [],
  subcommands: [
    {
      name: "get",
      term: "policy get",
      usage: "policy [get] [--team-dir DIR | --team ID] [--json]",
      help: '(the default) print every setting the leader would apply (failure policy, hook timeout, failure mode per event, limits, and the rest of the block as doctor shows it) and where each comes from (config.json "hooks" > environment > default), computed as the leader computes it: a "hooks" block with a bad value is refused whole. Warnings (each problem, naming the file and field; bad environment values) go to stderr.',
      flags: ["team-dir", "team", "json"],
    },
    {
      name: "set",
      term: "policy set",
      usage:
        "policy set [--team-dir DIR | --team ID] [--failure-action A] [--max-reopens N] [--followup-owner P] [--failure-mode [EVENT=]MODE]... [--max-hooks-per-event N] [--chain-deadline-ms N] [--max-payload-bytes N] [--reset] [--json]",
      help: `write the "hooks" block of config.json under its lock, keeping every other field and key (a missing config.json is created with the defaults), then print the effective policy. A failure mode for one event keeps the others', a limit keeps the other limits. Values are checked before anything is written; a bad one names its flag, its config.json field and what it accepts. A negative number needs =: --max-reopens=-1 (and is then refused). (A limit written in config.json by hand outside its range is capped to it, with one warning naming the key, the value and the bound; the rest of the block stays in force.)`,
      flags: ["team-dir", "team", "json", ...POLICY_SET_FLAGS],
    },
  ],
  groups: [
    {
      rows: [
        TEAM_DIR,
        TEAM,
        { ...FAILURE_ACTION, default: undefined },
        { ...MAX_REOPENS, default: undefined },
        { ...FOLLOWUP_OWNER, default: undefined },
        {
          name: SETTINGS.failureMode.setFlag.slice(2),
          type: "string",
          multiple: true,
          value: "MODE",
          help: `${SETTINGS.failureMode.doc}, for every event (${SETTINGS.failureMode.field}); EVENT=MODE for one event, the others kept (EVENT: task_completed, task_failed, idle, task_started); repeatable, applied in order`,
        },
        limitFlag("maxHooksPerEvent"),
        limitFlag("chainDeadlineMs"),
        limitFlag("maxPayloadBytes"),
        {
          name: "reset",
          type: "boolean",
          help: 'remove every setting set writes (failureAction, maxReopensPerTask, followupOwner, failureMode, limits) first: the environment and defaults apply again (a block that held only them is left as "hooks": {}); flags given with it are then set',
        },
        {
          name: "json",
          type: "boolean",
          help: "print {teamDir, configFile, written?, policy, sources, origins, timeoutMs, failureModes, limits, sweep, exitCodes, sandbox, handlers, templates, deferTimeoutMs, writableFields, projection, confidential, redactEnv, reassignOnReopen, events (each hook point: modes, participation, writableFields, projection, limits), block, warnings} as JSON: each setting {value, source, origin}; block {valid, from, problems}",
        },
      ],
    },
  ],
  exit: [
    { code: 0, when: "done" },
    {
      code: 2,
      when: "usage error (a bad value, named by its flag, nothing written; nothing to set), a missing team dir, or a config.json that is not a JSON object, whose hooks is not an object, or whose failureMode or limits cannot be added to (an invalid mode string, a limits that is not an object; left untouched)",
    },
  ],
  examples: [
    "pi-teams-hooks policy get --team-dir ~/.pi/agent/teams/alpha",
    "pi-teams-hooks policy set --team alpha --failure-action reopen_followup --max-reopens 2",
    "pi-teams-hooks policy set --team alpha --failure-mode idle=closed --max-hooks-per-event 8",
  ],
};

const CONFIG: CommandSpec = {
  name: "config",
  summary: "show every event's chain of gates with its trust, and every setting with its source",
  usage: [
    "config [--team-dir DIR | --team ID] [--task-list ID] [--lead NAME] [--hooks-dir DIR] [--cwd DIR] [--timeout-ms N | --timeout DURATION] [--failure-action A] [--max-reopens N] [--followup-owner P] [--trust-changes] [--allow-insecure-hooks] [--json]",
  ],
  description: [
    "Print the settings a leader started with the same flags (pi-teams-hooks watch …) would apply, and where each comes from (flag, config.json, environment, default), without running anything:",
    {
      list: [
        [
          "Gates",
          `for each event, its whole chain in run order: the v1 file, the on_<event>.d/ files (the team layer <team dir>/hooks replacing or switching off global ones), then the HTTP handlers of config.json hooks.handlers; each with its layer, kind, settings line (timeout, matchers, mode=shadow) and trust state as pi-teams-hooks trust compares it (trusted, CHANGED, NEW, MISSING: a trusted gate that no longer runs; "no record" before the leader's first start); files that look like gates and do not run, with why`,
        ],
        [
          "Settings",
          "the failure policy, hook timeout, failure mode per event, limits, setsid sweep, exit codes, defer timeout, writable fields, confidential, redact env, reassign on reopen, projection, trust changes, allow insecure hooks, and the hooks block's state (a block with a bad value is refused whole, and each problem shown)",
        ],
      ],
    },
    "Nothing is written: the trust record is read, never recorded. Other warnings (an environment value that falls back, a bad identity field of config.json) go to stderr.",
  ],
  groups: [
    TEAM_GROUP,
    POLICY_GROUP,
    {
      title: "As watch would run with",
      rows: [
        { name: "trust-changes", type: "boolean", help: SETTINGS.trustChanges.doc },
        { name: "allow-insecure-hooks", type: "boolean", help: SETTINGS.allowInsecureHooks.doc },
      ],
    },
    {
      title: "Output",
      rows: [
        {
          name: "json",
          type: "boolean",
          help: `print the view as one JSON object: each setting as {value, source, origin}, each event's gates in run order with their trust, the trust record, the block's state and the warnings, and "problems": each as {kind, path, message} (kinds: docs/cli.md, "Problems as data")`,
        },
      ],
    },
  ],
  exit: [
    { code: 0, when: "shown" },
    {
      code: 1,
      when: `config.json's "hooks" block is refused (its problems are shown; the view says what a leader starting now would apply; a running one keeps its last valid block)`,
    },
    { code: 2, when: "usage error (a bad flag value, a missing team dir or named hooks dir)" },
  ],
  examples: ["pi-teams-hooks config --team-dir ~/.pi/agent/teams/alpha --failure-action reopen_followup"],
};

const SCHEMA: CommandSpec = {
  name: "schema",
  synopsis: "schema [name]",
  summary: "print the JSON Schema of the context document, a log record, a task or the config",
  usage: ["schema [context|log|task|config]"],
  description: [
    "Print the JSON Schema (draft 2020-12) of a file format, generated from the zod schemas the code validates with; the same files are in docs/schema/. Schemas describe what a reader accepts: objects allow fields they do not name (additions keep contract version 1).",
  ],
  groups: [
    {
      rows: [
        { word: "context", help: "the v1 context document a hook receives (the default)" },
        { word: "log", help: "one hook log record in <team dir>/hook-logs/" },
        { word: "task", help: "a task file" },
        { word: "config", help: "the team's config.json" },
      ],
    },
  ],
  exit: [
    { code: 0, when: "printed" },
    { code: 2, when: "an unknown schema name" },
  ],
  examples: ["pi-teams-hooks schema log | head -4"],
};

const LOGS_TEAM = ["team-dir", "team", "json"];
const LOGS_FILTERS = ["event", "task", "member", "hook", "outcome", "since", "trigger", "limit"];

const LOGS: CommandSpec = {
  name: "logs",
  summary: "list, show, follow, summarise and prune the hook logs of a team",
  usage: [],
  description: ["Read the hook logs in <team dir>/hook-logs/ (one JSON file per hook invocation; docs/logs.md)."],
  subcommands: [
    {
      name: "",
      term: "logs",
      usage: "logs [--team-dir DIR | --team ID] [filters] [--limit N] [--json] [--follow]",
      help: `a table, newest last: the run's id, time (in the machine's time zone, named in the header), event, task, member, hook, outcome (passed, failed, timed out, error, deferred; "passed (error)": a pass with a non-blocking error), duration, the policy's actions (first "by hand" for a run of pi-teams-hooks run), and the first stderr line (else the spawn error). It fits the terminal ($COLUMNS through a pipe, else 80): the widest text is cut with …, and when that is not enough hook, duration, event, member are left out (said on stderr)`,
      flags: [...LOGS_TEAM, ...LOGS_FILTERS, "follow"],
    },
    {
      name: "show",
      term: "logs show <id>",
      usage: "logs show <id> | last [--task ID] [--failed] [--json]",
      help: `one run in full: context, command, exit, timing, policy, stdout, stderr. <id> is:\n  the id in the first column of logs, or of the lines of run and watch (the start of the run id: any 4 characters or more that only it starts with; a chain's later hooks end in .2, .3…), or the whole run id;\n  last: the newest run; with --task ID the newest of that task, with --failed the newest that failed, timed out or errored (a denied gate too); either flag alone means last;\n  a time as the table prints it, "2026-03-01 09:12:44" (quoted or not): the runs that started in that second;\n  the log's file name, path or stem, or a unique prefix or suffix of the name ("2026-03-01T09-12", "task-3_2").\nSeveral matches are listed, newest first, with their ids (exit 2)`,
      flags: [...LOGS_TEAM, "task", "failed"],
    },
    {
      name: "stats",
      term: "logs stats",
      usage: "logs stats [filters] [--include-hand-runs] [--limit N] [--json]",
      help: "per hook and event: runs, pass rate, failed / timed out / error counts, p50 and p95 duration (nearest rank), and the tasks with the most failed runs (a narrow terminal leaves out p50, then p95, then the tasks); under it, the passes with a non-blocking error. Runs by hand (pi-teams-hooks run) are left out unless --include-hand-runs or --trigger asks for them",
      flags: [...LOGS_TEAM, ...LOGS_FILTERS, "include-hand-runs"],
    },
    {
      name: "prune",
      term: "logs prune",
      usage: "logs prune [--keep N] [--older-than AGE] [--dry-run] [--json]",
      help: "remove old logs, printing each one: --keep N keeps the newest N, --older-than AGE removes those started before then; both: the old ones beyond the newest N. At least one is needed. Only files named like a hook log are ever removed",
      flags: [...LOGS_TEAM, "keep", "older-than", "dry-run"],
    },
  ],
  groups: [
    { title: "Team (one of)", rows: [TEAM_DIR, TEAM] },
    {
      title: "Filters (logs and logs stats; all must hold)",
      rows: [
        { name: "event", type: "string", value: "E[,E…]", help: "task_completed, task_failed, idle, task_started" },
        {
          name: "task",
          type: "string",
          value: "ID",
          help: "runs for this task (3 or #3; logs show: the newest run of this task; a task event whose task file was gone counts by the id in its event key)",
        },
        { name: "member", type: "string", value: "NAME", help: "runs caused by this member" },
        {
          name: "hook",
          type: "string",
          value: "NAME",
          help: "runs of this hook, named as the table shows it (on_task_completed.sh, 10-lint.sh of on_<event>.d/, http:ci for a handler)",
        },
        {
          name: "outcome",
          type: "string",
          value: "O[,O…]",
          help: "passed, failed, timed_out, error, deferred (held runs, decided or not)",
        },
        {
          name: "since",
          type: "string",
          value: "WHEN",
          help: "started at or after WHEN: an age (45s, 30m, 1.5h, 1d12h, 1w: ms, s, m, h, d, w, any case) or an ISO 8601 time (2026-03-01, 2026-03-01T09:00, 2026-03-01 09:00:00, 2026-03-01T11:00+02:00; the machine's time zone unless it has an offset, like the times shown)",
        },
        {
          name: "trigger",
          type: "string",
          value: "T[,T…]",
          help: "what fired the run: hand (pi-teams-hooks run) or leader (watch, pi; a log older than the field is the leader's)",
        },
        {
          name: "limit",
          type: "string",
          value: "N",
          help: "the newest N matching logs, shown oldest first (default: 50 for logs, all for stats; 0 = all)",
        },
      ],
    },
    {
      title: "Output and more",
      rows: [
        { name: "json", type: "boolean", help: 'NDJSON: one object per line (a log: {"file": …, …the log record})' },
        {
          name: "follow",
          short: "f",
          type: "boolean",
          help: "after the table, print new logs as they land (fs.watch plus a rescan every second); stop with Ctrl-C",
        },
        {
          name: "failed",
          type: "boolean",
          help: "for show: the newest run that did not pass (failed, timed out, error)",
        },
        { name: "include-hand-runs", type: "boolean", help: "for stats: count runs by hand (pi-teams-hooks run) too" },
        { name: "keep", type: "string", value: "N", help: "for prune: keep the newest N logs" },
        {
          name: "older-than",
          type: "string",
          value: "AGE",
          help: "for prune: remove the logs started more than AGE ago (AGE as for --since)",
        },
        { name: "dry-run", type: "boolean", help: "for prune: only list what would be removed" },
      ],
    },
  ],
  notes: ["A file in hook-logs/ that is not a readable log is named in a warning on stderr and skipped."],
  exit: [
    { code: 0, when: "done (also when files were skipped)" },
    { code: 1, when: "hook-logs/ cannot be listed, the log to show cannot be read, or prune could not remove a file" },
    {
      code: 2,
      when: "usage error (naming the flag), a missing team dir, --team without PI_TEAMS_ROOT_DIR, or a show <id> (or last) that matches no log, or several (they are listed)",
    },
  ],
  examples: [
    "pi-teams-hooks logs --team-dir ~/.pi/agent/teams/alpha --outcome failed,timed_out --since 2h",
    "pi-teams-hooks logs show 4a739620 --team alpha",
    "pi-teams-hooks logs show last --failed --task 3 --team alpha",
    "pi-teams-hooks logs prune --team alpha --older-than 30d --dry-run",
  ],
};

const TRUST: CommandSpec = {
  name: "trust",
  summary: "show gates changed since they were trusted, and approve them",
  usage: [
    "trust [--team-dir DIR | --team ID] [--hooks-dir DIR] [--all | PATH… | http:NAME… | binding:NAME… | settings] [--yes] [--json]",
  ],
  description: [
    "The leader runs only gates it trusts: the sha256 and mode of every gate file (and the definition of every HTTP handler) are recorded at its first start, and by this command, in an approved copy under your state directory ($XDG_STATE_HOME/pi-teams-hooks/trust/, else ~/.local/state/…), written first, and in <team dir>/hook-state/trust.json. The approved copy is the record in force: trust.json changed by anything but this command is said to the lead, not trusted, and written back. A gate that is new, changed (content or mode), or no longer runs (deleted, disabled or replaced through the team layer, shadowed, no longer executable) holds its events until the change is approved here.",
    "Settings of config.json's hooks block that can weaken a verdict (failureMode, exitCodes, projection, limits, writableFields, sandbox, confidential, redactEnv, and each hook point's events.<event>) are trusted the same way: what the file says at the leader's first start is approved (a file beside the approved copy); a later change that could turn a failing gate into a pass, blind it or give it more authority is held, the approved value stays in force, and the lead is told; one that can only make a gate stricter applies at once. `trust settings` (or --all) approves the held changes.",
    "Without --all or paths, trust lists every such change: old and new hash and mode, and a diff for a text file (from the copy kept in hook-state/trusted/; for a handler, of its definition's JSON), and records nothing.",
    "Approving is a person's act: at a terminal, trust shows the changes and asks [y/N]; without one (a script, an agent's tool call) it records nothing unless given --yes. In pi, /gates trust typed by the person in the session approves. Every approval is told to the lead's inbox, saying how it was given.",
    "A gate approved whose own file does not parse (bash -n, node --check; .ts gates are not checked) is recorded as asked and said at once, on stderr and to the lead, naming its file and line: its events are held until it is fixed.",
  ],
  groups: [
    {
      rows: [
        { name: "all", type: "boolean", help: "approve every change listed (the gates as they are now)" },
        {
          word: "PATH…",
          help: "approve only these gates' changes (a removed gate: its absence; an HTTP handler or a binding by its gate name, http:NAME or binding:NAME, as config lists it)",
        },
        {
          name: "yes",
          type: "boolean",
          help: "approve without a terminal (said so to the lead); at a terminal, it asks all the same",
        },
        TEAM_DIR,
        TEAM,
        HOOKS_DIR,
        {
          name: "json",
          type: "boolean",
          help: "print {teamDir, trustFile, changes: [{path, event, events, change, detail, trusted, now, diff}], recorded, unparsed: [{path, error}]} as JSON",
        },
      ],
    },
  ],
  notes: ["A running leader takes an approval at once: it runs the events the change held, once each."],
  exit: [
    { code: 0, when: "nothing left untrusted (or everything listed was approved)" },
    { code: 1, when: "changes are listed and not recorded (none chosen, or not approved)" },
    {
      code: 2,
      when: "usage error (a path that is not a changed gate, a gate that changed again while shown, a missing team dir, an unreadable record without --all)",
    },
  ],
  examples: [
    "pi-teams-hooks trust --team-dir ~/.pi/agent/teams/alpha",
    "pi-teams-hooks trust --team-dir ~/.pi/agent/teams/alpha --all",
  ],
};

const SERVE: CommandSpec = {
  name: "serve",
  summary: "the task API (tasks from templates, by key) and a dashboard of every team's runs",
  usage: [],
  description: [
    "Serve a teams root over HTTP, on one port:",
    {
      list: [
        [
          "dashboard",
          "every team's hook runs at /, read-only (docs/dashboard.md): the overview, the runs table with the filters of logs, each run, and new runs as they land",
        ],
        [
          "task API",
          "other systems create tasks from a team's templates (config.json hooks.templates), poll their status, decide held gates, ask whether a team's gates are ready and list its runs, each with a bearer key limited to its scopes, teams and templates (docs/remote-gates.md; keys: docs/security.md)",
        ],
      ],
    },
    {
      termWidth: 37,
      list: [
        ["GET  /", "the dashboard (pages; /events: server-sent events)"],
        ["POST /api/v1/teams/TEAM/tasks", '{"template": "SLUG", "parameters": {…}} → 202 (tasks:create)'],
        [
          "GET  /api/v1/teams/TEAM/tasks/ID",
          "id, status, qualityGateStatus, gateState (where its current event is in its gate life), startDenial, updatedAt, decidingRun (the run that decided its gate), createdBy (tasks:read; a confidential team's without the denial's reason and code, and the run's summary and code)",
        ],
        [
          "GET  /api/v1/teams/TEAM/gates",
          "the team's gate readiness: each event's chain with trust, executable, settings valid, and ready (gates:read)",
        ],
        [
          "GET  /api/v1/teams/TEAM/runs?outcome=failed&since=24h",
          "the team's runs, with the filters of logs (event, outcome, task, member, hook, since, trigger), 50 a page, newest first; next: the URL of the older ones (logs:read; a confidential team's without summary, code and stderr)",
        ],
        [
          "GET  /api/v1/teams/TEAM/bindings",
          "the team's bindings (a handler or a gate file, its events and settings) with their trust; POST one ({name, handler or file, events, settings}) → 202: trusted content, its events wait for the lead's approval (pi-teams-hooks trust); DELETE …/bindings/NAME (gates:admin)",
        ],
        [
          "POST /api/v1/teams/TEAM/runs/RUN_ID/decision",
          '{"decision": "allow"|"deny", "code"?, "reason"?, "message"?} → 200 applied, or 202 recorded for the ' +
            "team's running leader (gates:decide); as `pi-teams-hooks decide`",
        ],
        ["GET  /healthz", "200 while it runs"],
      ],
    },
  ],
  subcommands: [
    {
      name: "",
      term: "serve",
      usage: "serve [--teams-root DIR] [--listen HOST:PORT] [--allow-remote] [--rate-limit N/PERIOD]",
      help: 'the server. Prints "listening on http://HOST:PORT" once it accepts connections, then where the dashboard is and whether it needs a key, a line for each key added, removed or changed while it runs (a change that lets a key do more is a warning), and runs until SIGINT or SIGTERM (requests under way get 5 s)',
      flags: ["teams-root", "listen", "allow-remote", "rate-limit"],
    },
    {
      name: "keys create",
      term: "serve keys create",
      usage:
        "serve keys create --name NAME --scopes S[,S…] --teams T[,T…] (--templates T[,T…] | --all-templates) [--rate-limit N/PERIOD] [--url BASE] [--teams-root DIR]",
      help: "a new key. It is printed alone on the last line, the only time it is shown (KEY=$(pi-teams-hooks serve keys create … | tail -1)); only a salted hash is stored. With logs:read, a one-time dashboard login URL comes before it",
      flags: ["teams-root", "name", "scopes", "teams", "templates", "all-templates", "rate-limit", "url"],
    },
    {
      name: "keys list",
      term: "serve keys list",
      usage: "serve keys list [--json] [--teams-root DIR]",
      help: 'names, prefixes, what each key may do and whether it is enabled or disabled (STATE; --json: as JSON, with disabledAt and enabledAt), never a key; a key made before --templates was required still allows every template, shown as "(all: made before --templates was required)" (serve warns of each at start)',
      flags: ["teams-root", "json"],
    },
    {
      name: "keys revoke",
      term: "serve keys revoke NAME",
      usage: "serve keys revoke NAME [--teams-root DIR]",
      help: "delete the key and end its dashboard sessions: a running server refuses it from its next request, and ends its open live streams within a second",
      flags: ["teams-root"],
    },
    {
      name: "keys disable",
      term: "serve keys disable NAME",
      usage: "serve keys disable NAME [--teams-root DIR]",
      help: "refuse the key everywhere (401, as an unknown key) until it is enabled again, and end its dashboard sessions: a running server refuses it from its next request, and ends its open live streams within a second. keys list shows it disabled; nothing of it is deleted",
      flags: ["teams-root"],
    },
    {
      name: "keys enable",
      term: "serve keys enable NAME",
      usage: "serve keys enable NAME [--teams-root DIR]",
      help: "accept a disabled key again, with the same secret, from a running server's next request; its dashboard sessions stay ended (keys login prints a new link)",
      flags: ["teams-root"],
    },
    {
      name: "keys login",
      term: "serve keys login NAME",
      usage: "serve keys login NAME [--url BASE] [--teams-root DIR]",
      help: "print a new login URL for the dashboard, BASE/login?token=…, alone on its last line, for the key NAME (which must have logs:read).\nIt works once, for 15 minutes, and replaces the key's unused one (keys create prints the first). Opened in a browser, it shows a Log in button that spends it and starts a session of 12 hours (a link checker's fetch spends nothing)",
      flags: ["teams-root", "url"],
    },
  ],
  groups: [
    {
      title: "Server",
      rows: [
        {
          name: "teams-root",
          type: "string",
          value: "DIR",
          default: "$PI_TEAMS_ROOT_DIR, else pi's ~/.pi/agent/teams",
          help: "the teams root: each team is a folder in it; the keys live in DIR/.pi-teams-hooks/keys.json",
        },
        {
          name: "listen",
          type: "string",
          value: "HOST:PORT",
          default: "127.0.0.1:7420",
          help: "where to listen; port 0 picks a free one, [::1]:PORT is IPv6",
        },
        {
          name: "allow-remote",
          type: "boolean",
          help: "listen on an address other than loopback; keys then cross the network, so put TLS in front (docs/security.md). With it the dashboard too needs a key with logs:read (a login link, or the bearer header), also on loopback (a proxy on this machine); without it the dashboard needs none and answers only requests addressed to a loopback name",
        },
        {
          name: "rate-limit",
          type: "string",
          value: "N/PERIOD",
          help: "requests per key, for keys without their own rate (default: 600/min; PERIOD s, min or h); past it: 429 with Retry-After. For keys create: the key's own rate instead of the server's",
        },
      ],
    },
    {
      title: "Keys",
      rows: [
        {
          name: "name",
          type: "string",
          value: "NAME",
          help: "the key's name (keys list, keys revoke, keys disable, keys enable, the tasks it creates)",
        },
        {
          name: "scopes",
          type: "string",
          value: "S,…",
          help: "tasks:create, tasks:read, gates:decide, gates:read (readiness), gates:admin (bindings), logs:read (runs, the dashboard): what it may do",
        },
        { name: "teams", type: "string", value: "T,…", help: "the teams (folders of the teams root) it may use" },
        {
          name: "templates",
          type: "string",
          value: "T,…",
          help: "the only templates it may create from, read the tasks of and decide the gates of; required for a key with tasks:create, tasks:read or gates:decide (an empty allowlist allows no template)",
        },
        {
          name: "all-templates",
          type: "boolean",
          help: "instead of --templates: every template of its teams, now and later; the lead of each team is told in its inbox, and keys list shows (all)",
        },
        {
          name: "url",
          type: "string",
          value: "BASE",
          default: "http://127.0.0.1:7420",
          help: "with logs:read: the dashboard's address for the login URL it prints, http[s]://HOST[:PORT] with no path",
        },
        { name: "json", type: "boolean", help: "for keys list: print the keys as JSON" },
      ],
    },
  ],
  exit: [
    { code: 0, when: "stopped cleanly (serve), or the keys command done" },
    { code: 1, when: "no such key (revoke, disable, enable), or a file cannot be written" },
    {
      code: 2,
      when: "usage error (a bad flag or spec, a name taken; login: no such key, or one without logs:read; create: a key with tasks:create, tasks:read or gates:decide without --templates or --all-templates), a teams root that is not a directory, or an address that is not loopback without --allow-remote, or cannot be used",
    },
  ],
  examples: [
    "pi-teams-hooks serve --teams-root ~/.pi/agent/teams",
    "pi-teams-hooks serve keys create --name ci --scopes gates:decide,tasks:read --teams alpha --templates deploy",
  ],
};

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  RUN,
  DECIDE,
  WATCH,
  DEMO,
  DOCTOR,
  INIT,
  POLICY,
  CONFIG,
  SCHEMA,
  LOGS,
  TRUST,
  SERVE,
];

export function commandSpec(name: string): CommandSpec | undefined {
  return COMMANDS.find((command) => command.name === name);
}

/** The flags one form of a command takes (`logs show`: `show`; the command alone: ""), `help` aside. */
export function formFlags(command: string, form: string): readonly string[] {
  const sub = commandSpec(command)?.subcommands?.find((s) => s.name === form);
  if (!sub) throw new Error(`no form "${form}" of ${command} in the command table`);
  return sub.flags;
}
