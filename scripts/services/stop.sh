#!/usr/bin/env bash
# Stop servers started by start-etcd.sh / start-zookeeper.sh and remove their state dirs.
#
#   scripts/services/stop.sh                  # every prx-svc-* server under ${SERVICES_DIR:-${TMPDIR:-/tmp}}
#   scripts/services/stop.sh STATE_DIR...     # the given state dirs
#   scripts/services/stop.sh PID_FILE...      # the servers whose pid is in these files
#
# Only the recorded pid is signalled, and only when that process's command line still
# names its state dir (so a reused pid is never hit): SIGTERM, then SIGKILL after
# STOP_TIMEOUT seconds (default 10). KEEP_STATE=1 keeps the state dirs (logs, data).
# Exit status is 0 when everything asked for is stopped (nothing running is fine).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/_common.sh"

root=$(svc_root)
status=0

# state_for_pid PID: the state dir under $root whose pid file holds PID.
state_for_pid() {
  local d
  for d in "$root"/prx-svc-*; do
    [ -f "$d/pid" ] && [ "$(cat "$d/pid")" = "$1" ] && { printf '%s\n' "$d"; return 0; }
  done
  return 1
}

# cmdline_names PID TEXT: the process's command line contains TEXT.
cmdline_names() {
  [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' < "/proc/$1/cmdline" | grep -qF -- "$2"
}

stop_one() {
  local state=$1 pid="" name
  name=$(basename "$state")
  pid=$(cat "$state/pid" 2>/dev/null || true)
  if [ -n "$pid" ] && svc_alive "$pid" && cmdline_names "$pid" "$state"; then
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$(( $(date +%s) + ${STOP_TIMEOUT:-10} ))
    while svc_alive "$pid" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.05; done
    if svc_alive "$pid"; then
      svc_log "$name: pid $pid ignored SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
    if svc_alive "$pid"; then svc_log "$name: pid $pid still running"; status=1; return; fi
    svc_log "stopped $name (pid $pid)"
  else
    svc_log "$name: not running"
  fi
  if [ "${KEEP_STATE:-0}" = 1 ]; then svc_log "kept $state"; else rm -rf -- "$state"; fi
}

targets=()
if [ $# -eq 0 ]; then
  for d in "$root"/prx-svc-*; do [ -d "$d" ] && targets+=("$d"); done
else
  for a in "$@"; do
    if [ -d "$a" ]; then
      targets+=("$(cd "$a" && pwd)")
    elif [ -f "$a" ]; then
      p=$(tr -dc '0-9' < "$a")
      if d=$(state_for_pid "$p"); then
        targets+=("$d")
      else
        svc_log "$a: pid '$p' belongs to no state dir under $root; not touched"
        status=1
      fi
    else
      svc_log "$a: no such state dir or pid file"
      status=1
    fi
  done
fi

for t in ${targets[@]+"${targets[@]}"}; do stop_one "$t"; done
exit $status
