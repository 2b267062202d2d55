#!/usr/bin/env bash
# Start a throwaway single-member etcd (Debian package etcd-server, 3.4.x) on 127.0.0.1.
#
#   ETCD=$(scripts/services/start-etcd.sh)       # -> http://127.0.0.1:PORT on stdout
#   scripts/services/start-etcd.sh 23790         # a fixed client port
#
# Serves the v3 API (gRPC and the JSON gateway under /v3/...) and, unless ETCD_V2=0,
# the v2 keys API under /v2/keys (namerd's etcd dtab store and Linkerd's etcd code use v2).
# Progress goes to stderr; only the client URL goes to stdout. Stop with stop.sh.
#
# Environment:
#   ETCD_PORT        client port (default: first argument, else a free port)
#   ETCD_PEER_PORT   peer port (default: a free port)
#   ETCD_V2          1 (default) adds --enable-v2; 0 serves v3 only
#   ETCD_BIN         etcd executable (default: etcd on PATH, i.e. /usr/bin/etcd from etcd-server)
#   ETCD_EXTRA_ARGS  more flags for etcd, split on spaces (a repeated flag overrides the default)
#   ETCD_STATE_DIR   use this state dir instead of a fresh one; an existing dir keeps its data
#                    and peer port, so `KEEP_STATE=1 stop.sh DIR` then a start with the same
#                    port and ETCD_STATE_DIR=DIR restarts the same member (fault tests)
#   PID_FILE         also copy the server's pid to this file
#   SERVICES_DIR     parent of the state dir (default: ${TMPDIR:-/tmp})
#   STARTUP_TIMEOUT  seconds to wait for /health (default 30)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/_common.sh"

etcd_bin=${ETCD_BIN:-etcd}
if ! command -v "$etcd_bin" >/dev/null 2>&1; then
  svc_log "ERROR: '$etcd_bin' not found; install it with: apt-get install -y etcd-server (or run install.sh)"
  exit 1
fi
command -v curl >/dev/null 2>&1 || { svc_log "ERROR: curl is needed for the health check"; exit 1; }

port=${ETCD_PORT:-${1:-}}
[ -n "$port" ] || port=$(svc_free_port)
if svc_port_busy "$port"; then svc_log "ERROR: 127.0.0.1:$port is already in use"; exit 1; fi

if [ -n "${ETCD_STATE_DIR:-}" ]; then
  state=$ETCD_STATE_DIR
  mkdir -p "$state"
  rm -f "$state/pid" "$state/addr"
else
  root=$(svc_root)
  mkdir -p "$root"
  state=$(mktemp -d "$root/prx-svc-etcd.XXXXXX")
fi
peer=${ETCD_PEER_PORT:-}
# A restarted member must keep its peer URL: it is recorded in the data dir.
if [ -z "$peer" ] && [ -s "$state/peer_port" ]; then peer=$(cat "$state/peer_port"); fi
while [ -z "$peer" ] || [ "$peer" = "$port" ]; do peer=$(svc_free_port); done
printf '%s\n' "$peer" > "$state/peer_port"
url="http://127.0.0.1:$port"
peer_url="http://127.0.0.1:$peer"

args=(
  --name prx-test
  --data-dir "$state/data"
  --listen-client-urls "$url"
  --advertise-client-urls "$url"
  --listen-peer-urls "$peer_url"
  --initial-advertise-peer-urls "$peer_url"
  --initial-cluster "prx-test=$peer_url"
  --initial-cluster-state new
  --initial-cluster-token "prx-test-$port"
  --logger zap
  --log-level warn
  # A lone member on loopback: short raft timers make it leader in ~0.1 s instead of ~1 s.
  --heartbeat-interval 10
  --election-timeout 100
)
if [ "${ETCD_V2:-1}" != 0 ]; then args+=(--enable-v2); fi
# shellcheck disable=SC2206
if [ -n "${ETCD_EXTRA_ARGS:-}" ]; then args+=(${ETCD_EXTRA_ARGS}); fi

t0=$(svc_now)
svc_launch "$state" "$etcd_bin" "${args[@]}" || svc_fail "$state" "etcd did not start"
pid=$(cat "$state/pid")

deadline=$(( $(date +%s) + ${STARTUP_TIMEOUT:-30} ))
until curl -fsS --max-time 1 "$url/health" 2>/dev/null | grep -q '"health":"true"'; do
  svc_alive "$pid" || svc_fail "$state" "etcd exited during startup"
  [ "$(date +%s)" -lt "$deadline" ] || svc_fail "$state" "etcd not healthy after ${STARTUP_TIMEOUT:-30}s"
  sleep 0.05
done

version=$(curl -fsS --max-time 1 "$url/version" 2>/dev/null | sed -n 's/.*"etcdserver":"\([^"]*\)".*/\1/p')
svc_log "etcd ${version:-?} ready at $url in $(svc_elapsed "$t0")s (pid $pid, v2 $([ "${ETCD_V2:-1}" != 0 ] && echo on || echo off), state $state)"
svc_publish "$state" "$url"
