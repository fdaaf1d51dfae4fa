#!/usr/bin/env bash
# A leader under its own Unix user, set up as docs/security.md ("A leader under its own user") lays it
# out, in one command run as root. Safe to run again: it makes what is missing and corrects modes.
#
#   setup.sh init  --teams-root DIR --leader USER --agent USER [--group NAME] [--project DIR]
#   setup.sh team  --teams-root DIR --leader USER [--group NAME] TEAM...      (a team dir, or one pi made)
#   setup.sh start --teams-root DIR --leader USER [--project DIR] [--systemd] TEAM [watch flags...]
#
# init:  the group (default pi-team) with both users in it, the leader's user (a home of its own, a
#        private TMPDIR in it), the teams root (3775, root:group), the global hooks dir, the task API's
#        folder and a node_modules and package.json at the teams root (all the leader's: nothing the
#        agents plant there is ever looked up), and the example gates written as the leader's user.
# team:  one team dir laid out: the dir and tasks/, mailboxes/ the group's; hooks/, hook-state/ and
#        hook-logs/ the leader's. A team dir pi already made as the agents' user is taken back: it, and
#        any of the leader's folders in it that the agents made, owned as above (what the agents wrote
#        under tasks/ and mailboxes/ stays theirs, in the group).
# start: starts the leader for TEAM as its user, never on this terminal: in a session of its own
#        (setsid), standard input /dev/null, output appended to <leader home>/pi-teams-hooks-TEAM.log,
#        and an environment of its own (env -i: none of root's TMPDIR, XDG_*, NODE_OPTIONS). With
#        --systemd it writes /etc/systemd/system/pi-teams-hooks-TEAM.service instead and prints how to
#        start it. The working directory (the gates' --cwd) is --project, else the leader's home.
set -euo pipefail

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "setup.sh: $*" >&2; exit 1; }

cmd=${1:-}; [ -n "$cmd" ] || usage; shift
teams_root="" leader="" agent="" group="pi-team" project="" systemd=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --teams-root) teams_root=$2; shift 2 ;;
    --leader) leader=$2; shift 2 ;;
    --agent) agent=$2; shift 2 ;;
    --group) group=$2; shift 2 ;;
    --project) project=$2; shift 2 ;;
    --systemd) systemd=1; shift ;;
    -h|--help) usage ;;
    *) args+=("$1"); shift ;;
  esac
done
[ "$(id -u)" = 0 ] || die "run it as root (it creates users and sets owners)"
[ -n "$teams_root" ] && [ -n "$leader" ] || usage
case "$teams_root" in /*) ;; *) die "--teams-root must be an absolute path" ;; esac

# The pi-teams-hooks command: this package's own (the script ships in it), else the one on PATH.
here=$(cd "$(dirname "$0")" && pwd)
bin="$(cd "$here/../.." && pwd)/dist/teams-hooks/bin.js"
[ -f "$bin" ] || bin=$(command -v pi-teams-hooks || true)
[ -n "$bin" ] && [ -f "$bin" ] || die "pi-teams-hooks is not installed (npm install -g pi-teams-hooks)"
node_bin=$(command -v node) || die "node is not on PATH"

# The user and group tools are root's: in /usr/sbin or /sbin, which a PATH may leave out.
command -v useradd >/dev/null || PATH="$PATH:/usr/sbin:/sbin"
# Every folder below one, links not followed (`"$dir"/**/`), dot folders too, none when there are none.
shopt -s globstar nullglob dotglob
# An account's line in passwd or group: getent's where there is one (it sees every account source), else the file's.
account() { if command -v getent >/dev/null; then getent "$1" "$2"; else grep -m1 "^$2:" "/etc/$1"; fi; }
home_of() { account passwd "$1" | cut -d: -f6; }
as_leader() { setpriv --reuid="$leader" --regid="$leader" --init-groups -- env -i PATH="$PATH" HOME="$leader_home" TMPDIR="$leader_home/tmp" "$@"; }

lay_out_team() {
  local dir=$1
  case "$dir" in "$teams_root"/*) ;; *) dir="$teams_root/$dir" ;; esac
  [ -L "$dir" ] && die "$dir is a symbolic link: the team dir must be a real folder"
  install -d -o root -g "$group" -m 3775 "$dir"
  chown root:"$group" "$dir" && chmod 3775 "$dir"
  for sub in tasks mailboxes; do
    [ -L "$dir/$sub" ] && rm -f "$dir/$sub"
    install -d -o root -g "$group" -m 2775 "$dir/$sub"
    chown root:"$group" "$dir/$sub" && chmod 2775 "$dir/$sub"
    # What the agents made below stays theirs, in the group, folders group-writable for both users' renames.
    local below
    for below in "$dir/$sub"/**/; do
      below=${below%/}
      [ "$below" = "$dir/$sub" ] || [ -L "$below" ] || { chgrp "$group" "$below" && chmod g+rwxs "$below"; }
    done
  done
  for sub in hooks hook-state hook-logs; do
    # A folder of the leader's that the agents made first (or a link they put there) is theirs: replaced.
    if [ -L "$dir/$sub" ]; then rm -f "$dir/$sub"; fi
    install -d -o "$leader" -g "$leader" -m 0755 "$dir/$sub"
    chown -R "$leader:$leader" "$dir/$sub" && chmod 0755 "$dir/$sub" && chmod -R go-w "$dir/$sub"
  done
  [ -e "$dir/config.json" ] && chgrp "$group" "$dir/config.json" && chmod g+rw "$dir/config.json"
  echo "team dir $dir: tasks/ and mailboxes/ the group's ($group), hooks/ hook-state/ hook-logs/ $leader's"
}

case "$cmd" in
  init)
    [ -n "$agent" ] || usage
    account group "$group" >/dev/null || groupadd "$group"
    if ! account passwd "$leader" >/dev/null; then
      useradd --create-home --user-group --groups "$group" --shell /bin/bash "$leader"
    else
      usermod --append --groups "$group" "$leader"
    fi
    account passwd "$agent" >/dev/null || die "no user $agent (the user pi and its agents run as)"
    usermod --append --groups "$group" "$agent"
    leader_home=$(home_of "$leader")
    install -d -o "$leader" -g "$leader" -m 0700 "$leader_home/tmp"
    # Passed through, never listed: a gate with run-as= reaches its run's folder in the leader's state dir.
    install -d -o "$leader" -g "$leader" -m 0711 "$leader_home" "$leader_home/.local" "$leader_home/.local/state" \
      "$leader_home/.local/state/pi-teams-hooks"
    install -d -o root -g "$group" -m 3775 "$teams_root"
    chown root:"$group" "$teams_root" && chmod 3775 "$teams_root"
    install -d -o "$leader" -g "$leader" -m 0755 "$teams_root/_hooks" "$teams_root/node_modules"
    install -d -o "$leader" -g "$leader" -m 0700 "$teams_root/.pi-teams-hooks"
    if [ ! -e "$teams_root/package.json" ] || [ "$(stat -c %U "$teams_root/package.json")" != "$leader" ]; then
      rm -f "$teams_root/package.json"
      printf '{ "private": true }\n' > "$teams_root/package.json"
    fi
    chown "$leader:$leader" "$teams_root/package.json" && chmod 0644 "$teams_root/package.json"
    if [ -n "$project" ]; then
      install -d -g "$group" -m 2775 "$project"
    fi
    if [ -z "$(ls -A "$teams_root/_hooks")" ]; then
      as_leader "$node_bin" "$bin" init --hooks-dir "$teams_root/_hooks" >/dev/null
    fi
    echo "teams root $teams_root: 3775 root:$group; _hooks/, node_modules/, package.json $leader's; .pi-teams-hooks/ 0700"
    echo "$agent logs in again to get the group; in its shell, before pi starts: umask 0002; export PI_TEAMS_ROOT_DIR=$teams_root"
    ;;
  team)
    [ ${#args[@]} -gt 0 ] || usage
    account group "$group" >/dev/null || die "no group $group (setup.sh init first)"
    for team in "${args[@]}"; do lay_out_team "$team"; done
    ;;
  start)
    [ ${#args[@]} -gt 0 ] || usage
    team=${args[0]}; flags=("${args[@]:1}")
    leader_home=$(home_of "$leader")
    [ -n "$leader_home" ] || die "no user $leader (setup.sh init first)"
    cwd=${project:-$leader_home}
    team_dir="$teams_root/$team"
    log="$leader_home/pi-teams-hooks-$team.log"
    watch=("$node_bin" "$bin" watch --team-dir "$team_dir" --cwd "$cwd" "${flags[@]}")
    if [ "$systemd" = 1 ]; then
      unit="/etc/systemd/system/pi-teams-hooks-$team.service"
      {
        echo "[Unit]"
        echo "Description=pi-teams-hooks leader for $team_dir"
        echo "[Service]"
        echo "User=$leader"
        echo "Group=$leader"
        echo "WorkingDirectory=$cwd"
        echo "Environment=HOME=$leader_home TMPDIR=$leader_home/tmp PATH=$PATH"
        printf 'ExecStart=%q' "${watch[0]}"; printf ' %q' "${watch[@]:1}"; echo
        echo "KillMode=mixed"
        echo "TimeoutStopSec=30"
        echo "[Install]"
        echo "WantedBy=multi-user.target"
      } > "$unit"
      echo "wrote $unit: systemctl daemon-reload && systemctl enable --now pi-teams-hooks-$team"
      exit 0
    fi
    cd "$cwd"
    # setsid: a session of its own, with no controlling terminal; nothing of this terminal is passed on.
    # The log is opened by the leader's user (root never writes a path in that user's home).
    setsid --fork setpriv --reuid="$leader" --regid="$leader" --init-groups -- \
      env -i PATH="$PATH" HOME="$leader_home" USER="$leader" LOGNAME="$leader" TMPDIR="$leader_home/tmp" \
      bash -c 'umask 0077; exec "$@" </dev/null >>"$0" 2>&1' "$log" "${watch[@]}" </dev/null >/dev/null 2>&1
    echo "leader for $team_dir started as $leader (working dir $cwd); its output: $log"
    ;;
  *) usage ;;
esac
