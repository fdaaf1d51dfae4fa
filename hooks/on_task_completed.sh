#!/usr/bin/env bash
# Quality gate for a completed task (pi-teams-hooks contract v1).
#
# Runs the project's check command in the leader's working directory (or --cwd) and fails the gate
# when it fails. The command is $PI_TEAMS_GATE_CMD, run with bash; without it, `npm test --silent`.
# On failure the first line of stderr is a one-line reason: the leader puts it in the task's
# qualityGateSummary, the follow-up task and the nudge to the member.
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
