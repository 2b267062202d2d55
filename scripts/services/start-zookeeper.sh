#!/usr/bin/env bash
# Start a throwaway standalone ZooKeeper (Debian package zookeeper, 3.8.x) on 127.0.0.1,
# without systemd and without the zkServer.sh wrapper: plain java with Debian's jar, whose
# manifest Class-Path already names its dependencies under /usr/share/java.
#
#   ZK=$(scripts/services/start-zookeeper.sh)    # -> 127.0.0.1:PORT on stdout (a connect string)
#   scripts/services/start-zookeeper.sh 21810    # a fixed client port
#
# The AdminServer (Jetty, :8080) is off; all four-letter words are allowed (srvr, stat, mntr...).
# Progress goes to stderr; only the connect string goes to stdout. Stop with stop.sh.
#
# Environment:
#   ZK_PORT          client port (default: first argument, else a free port)
#   ZK_TICK_TIME     tickTime in ms (default 2000; sessions may last 2..20 ticks). Lower it
#                    (e.g. 200) to make session-expiry tests fast.
#   ZK_CLASSPATH     default: /usr/share/java/zookeeper.jar plus slf4j-simple.jar when present
#   ZK_JAVA_OPTS     JVM flags (default: -Xmx256m -XX:+UseSerialGC)
#   JAVA             java executable (default: java on PATH; any JRE >= 11, Debian: default-jre-headless)
#   ZK_STATE_DIR     use this state dir instead of a fresh one; an existing dir keeps its data,
#                    so `KEEP_STATE=1 stop.sh DIR` then a start with the same port and
#                    ZK_STATE_DIR=DIR restarts the same server with its znodes and sessions
#   PID_FILE         also copy the server's pid to this file
#   SERVICES_DIR     parent of the state dir (default: ${TMPDIR:-/tmp})
#   STARTUP_TIMEOUT  seconds to wait until it serves (default 30)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/_common.sh"

java_bin=${JAVA:-java}
if ! command -v "$java_bin" >/dev/null 2>&1; then
  svc_log "ERROR: '$java_bin' not found; install a JRE: apt-get install -y default-jre-headless (or run install.sh)"
  exit 1
fi
zk_jar=/usr/share/java/zookeeper.jar
if [ -z "${ZK_CLASSPATH:-}" ]; then
  if [ ! -f "$zk_jar" ]; then
    svc_log "ERROR: $zk_jar not found; install it with: apt-get install -y zookeeper (or run install.sh)"
    exit 1
  fi
  ZK_CLASSPATH=$zk_jar
  # Debian's jar has no slf4j binding; with slf4j-simple the log shows warnings and errors.
  if [ -f /usr/share/java/slf4j-simple.jar ]; then ZK_CLASSPATH="$ZK_CLASSPATH:/usr/share/java/slf4j-simple.jar"; fi
fi

port=${ZK_PORT:-${1:-}}
[ -n "$port" ] || port=$(svc_free_port)
if svc_port_busy "$port"; then svc_log "ERROR: 127.0.0.1:$port is already in use"; exit 1; fi

if [ -n "${ZK_STATE_DIR:-}" ]; then
  state=$ZK_STATE_DIR
  mkdir -p "$state"
  rm -f "$state/pid" "$state/addr"
else
  root=$(svc_root)
  mkdir -p "$root"
  state=$(mktemp -d "$root/prx-svc-zookeeper.XXXXXX")
fi
mkdir -p "$state/data"
cat > "$state/zoo.cfg" <<EOF
tickTime=${ZK_TICK_TIME:-2000}
dataDir=$state/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
forceSync=no
EOF

# shellcheck disable=SC2206
jvm_opts=(${ZK_JAVA_OPTS:--Xmx256m -XX:+UseSerialGC})
t0=$(svc_now)
svc_launch "$state" "$java_bin" "${jvm_opts[@]}" \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -Dzookeeper.jmx.log4j.disable=true \
  -cp "$ZK_CLASSPATH" org.apache.zookeeper.server.ZooKeeperServerMain "$state/zoo.cfg" \
  || svc_fail "$state" "zookeeper did not start"
pid=$(cat "$state/pid")

# Ready when the srvr four-letter word reports a mode. Each probe has its own time limit:
# a connection accepted while the server is still starting may never be answered.
probe() {
  # shellcheck disable=SC2016 # $0 belongs to the inner shell
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf srvr >&3 && cat <&3' "$port" 2>/dev/null || true
}
deadline=$(( $(date +%s) + ${STARTUP_TIMEOUT:-30} ))
while :; do
  out=$(probe)
  case "$out" in *"Mode: standalone"*) break ;; esac
  svc_alive "$pid" || svc_fail "$state" "zookeeper exited during startup"
  [ "$(date +%s)" -lt "$deadline" ] || svc_fail "$state" "zookeeper not serving after ${STARTUP_TIMEOUT:-30}s"
  sleep 0.05
done

version=$(printf '%s\n' "$out" | sed -n 's/^Zookeeper version: \([0-9.]*\).*/\1/p')
svc_log "zookeeper ${version:-?} ready at 127.0.0.1:$port in $(svc_elapsed "$t0")s (pid $pid, tickTime ${ZK_TICK_TIME:-2000}, state $state)"
svc_publish "$state" "127.0.0.1:$port"
