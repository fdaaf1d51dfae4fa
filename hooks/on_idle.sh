#!/usr/bin/env bash
# Runs when a member goes idle (pi-teams-hooks contract v1). Quiet unless something is wrong: it
# warns (on stderr, which the leader logs) when the member went idle with no task left to take while
# tasks are still pending, a sign the team is stuck. An idle hook never changes the team.
set -uo pipefail
tasks_dir="$PI_TEAMS_TEAM_DIR/tasks/$PI_TEAMS_TASK_LIST_ID"
[ -d "$tasks_dir" ] || exit 0
pending=$(grep -l '"status": *"pending"' "$tasks_dir"/*.json 2>/dev/null | wc -l)
in_progress=$(grep -l '"status": *"in_progress"' "$tasks_dir"/*.json 2>/dev/null | wc -l)
if [ "$pending" -gt 0 ] && [ "$in_progress" -eq 0 ]; then
  echo "${PI_TEAMS_MEMBER:-a member} is idle, $pending task(s) pending and none in progress: is the team stuck?" >&2
fi
exit 0
