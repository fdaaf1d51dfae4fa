#!/usr/bin/env bash
# pi-teams-hooks: env=PI_TEAMS_GATE_CMD verdict=exit
# Quality gate for a completed task (pi-teams-hooks contract v1).
#
# Runs the project's check command in the leader's working directory (or --cwd) and fails the gate
# when it fails. The command is $PI_TEAMS_GATE_CMD, run with bash; without it, `npm test --silent`.
# On failure the first line of stderr is a one-line reason: the leader puts it in the task's
# qualityGateSummary, the follow-up task and the nudge to the member.
#
# What running the project's tests means for the boundary: the tests are the agents' code, and they
# run with this gate's authority, as the leader's user. This gate cannot hold them back; it relies on
# the sandbox the leader runs every gate in (a read-only file system except the working directory and
# a private /tmp; the leader's state, logs and gates unwritable: docs/security.md, "Gates run
# sandboxed"). Nor is what the tests say this gate's verdict: verdict=exit above has the leader judge
# this gate by its exit status alone, with no result file offered and no verdict read from stdout, so
# that nothing the tests or a process they leave write can stand for the exit status below. (Their
# output goes to a file, never to the gate's stdout. A process of theirs that outlives this gate is the
# runner's and the sandbox's to end; this gate cannot.)
#
# Try it:  pi-teams-hooks run task_completed --team-dir <team dir> --task <id> --hooks-dir hooks
set -uo pipefail

cmd=${PI_TEAMS_GATE_CMD:-npm test --silent}
task="#${PI_TEAMS_TASK_ID:-?}"
[ -n "${PI_TEAMS_TASK_SUBJECT:-}" ] && task="$task (${PI_TEAMS_TASK_SUBJECT:0:80})"

# The default needs a package.json here or above (where npm looks); without one npm fails, silently.
if [ -z "${PI_TEAMS_GATE_CMD:-}" ]; then
  dir=$PWD
  while [ ! -e "$dir/package.json" ] && [ -n "$dir" ] && [ "$dir" != "/" ]; do dir=${dir%/*}; done
  if [ ! -e "$dir/package.json" ]; then
    echo "gate not set up: no package.json in $PWD or above for \`npm test\`;" \
      "set PI_TEAMS_GATE_CMD or run the leader in the project" >&2
    exit 1
  fi
fi

output=$(mktemp "${TMPDIR:-/tmp}/gate-output.XXXXXX")
trap 'rm -f "$output"' EXIT

bash -c "$cmd" >"$output" 2>&1
status=$?
if [ "$status" -eq 0 ]; then
  echo "gate passed for task $task: $cmd"
  exit 0
fi

# The reason first, on stderr: the first line a test runner marks as a failure (FAIL, ✗, not ok,
# Error: …), else the last line that mentions one (a summary), else the last line of output.
reason=$(grep -m 1 -E '^[[:space:]]*(FAIL|✗|×|not ok|npm ERR!|[A-Za-z]*Error:)' "$output")
[ -n "$reason" ] || reason=$(grep -iE 'fail|error|not ok|assert|expected' "$output" | tail -n 1)
[ -n "$reason" ] || reason=$(grep -v '^[[:space:]]*$' "$output" | tail -n 1)
reason="${reason#"${reason%%[![:space:]]*}"}"
short_cmd=$cmd
[ "${#short_cmd}" -gt 60 ] && short_cmd="${short_cmd:0:57}..."
echo "${reason:-check exited $status}" >&2
echo "gate failed for task $task: \`$short_cmd\` exited $status" >&2
echo "--- output (last 40 lines) ---" >&2
tail -n 40 "$output" >&2
exit 1
