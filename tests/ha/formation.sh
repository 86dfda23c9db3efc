#!/usr/bin/env bash
# A pg_auto_failover formation on loopback for the failover test
# (docs/deployment.md): a monitor, a primary and a synchronous secondary,
# each a pg_autoctl keeper with its own PostgreSQL 15, in a temporary
# directory. Everything it starts is stopped on the way out, also on failure.
#
#   formation.sh run CMD [ARG...]
#       forms the group, then runs CMD with these set in its environment:
#         DATABASE_URL   the multi-host URL of the application database
#                        (target_session_attrs=read-write: the primary)
#         PHASEKEY_HA_DIR  the formation's directory (for the commands below)
#       and stops everything when CMD ends. Exit status: CMD's.
#   formation.sh switchover      (from inside CMD) a planned switchover;
#                                returns once the old primary is a secondary
#   formation.sh kill-primary    (from inside CMD) SIGKILLs the primary node
#                                (its keeper and its postgres), waits until the
#                                monitor has promoted the secondary, starts the
#                                old node again and waits until it is back as
#                                the secondary
#   formation.sh state           (from inside CMD) the monitor's view
#
# As root, the keepers and servers run as PHASEKEY_HA_USER (default
# "postgres", the Debian package's system user), as the embedded server does
# (engine/tools/embedded_postgres/*.cc): PostgreSQL refuses to run as root.
set -euo pipefail

readonly PG_BIN=/usr/lib/postgresql/15/bin
readonly AUTOCTL="${PHASEKEY_PG_AUTOCTL:-/usr/bin/pg_autoctl}"
readonly DBNAME=phasekey
readonly NODES=(node1 node2)
# How long a formation may take to form, and an event to settle. Generous
# for a loaded 2-core machine running the sanitized tests beside it.
readonly FORM_TIMEOUT_S=120
readonly SETTLE_TIMEOUT_S=180

# The monitor's health checks, tuned for a fast failover on loopback (the
# defaults, meant for real networks, take ~30 s to notice a dead primary):
# probe each node every second, give up on a probe after 1 s, retry once
# after 0.5 s; a node silent for 2 s is unhealthy; a primary that cannot be
# reached is given 5 s to demote itself before the secondary is promoted.
readonly MONITOR_SETTINGS=(
  "pgautofailover.health_check_period=1000"
  "pgautofailover.health_check_timeout=1000"
  "pgautofailover.health_check_max_retries=1"
  "pgautofailover.health_check_retry_delay=500"
  "pgautofailover.node_considered_unhealthy_timeout=2000"
  "pgautofailover.primary_demote_timeout=5000"
)

say() { printf 'formation: %s\n' "$*" >&2; }
die() { printf 'formation: FAIL: %s\n' "$*" >&2; exit 1; }

# The environment of everything run as the server user: the formation's own
# XDG directories (pg_autoctl keeps its state and pid files there).
user_env() {
  USER_ENV=(env "XDG_CONFIG_HOME=$HA/xdg/config" "XDG_DATA_HOME=$HA/xdg/data" "XDG_RUNTIME_DIR=$HA/xdg/run"
            "HOME=$HA" "PATH=$PG_BIN:/usr/bin:/bin")
}

# as_user CMD...: runs CMD as the server user (as root) or as is.
as_user() {
  user_env
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid="$HA_UID" --regid="$HA_GID" --init-groups -- "${USER_ENV[@]}" "$@"
  else
    "${USER_ENV[@]}" "$@"
  fi
}

load_state() {
  HA="${PHASEKEY_HA_DIR:?PHASEKEY_HA_DIR is not set: run this from inside 'formation.sh run'}"
  # shellcheck source=/dev/null
  . "$HA/ports"
}

# monitor_sql SQL: one query on the monitor, unaligned, no header.
monitor_sql() {
  as_user psql -X -qAt -h 127.0.0.1 -p "$MONITOR_PORT" -d pg_auto_failover -c "$1"
}

# node_states: "name:reported:goal" per data node, ordered by name.
node_states() {
  monitor_sql "SELECT nodename || ':' || reportedstate || ':' || goalstate FROM pgautofailover.node ORDER BY nodename"
}

# wait_for DESCRIPTION TIMEOUT_S CMD...: polls CMD every 0.2 s until it
# succeeds; dies after TIMEOUT_S seconds.
wait_for() {
  local what="$1" timeout="$2"; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "timed out after ${timeout}s waiting for $what (states: $(node_states 2>&1 | tr '\n' ' '))"
    sleep 0.2
  done
}

# One primary and one secondary, both settled (reported = goal).
healthy() {
  local s
  s="$(node_states)" || return 1
  [ "$(grep -c ':primary:primary$' <<<"$s")" -eq 1 ] && [ "$(grep -c ':secondary:secondary$' <<<"$s")" -eq 1 ]
}

single_node() { [ "$(node_states)" = 'node1:single:single' ]; }

# The primary's node name (empty if none).
primary_name() { node_states | awk -F: '$2 == "primary" || $2 == "wait_primary" {print $1}' | head -1; }

# free_port: a loopback port no TCP socket uses, below the kernel's
# ephemeral range (net.ipv4.ip_local_port_range): a port inside it can be
# taken at any moment as the local port of some outgoing connection or of a
# listener bound to port 0 (other tests run beside this one), and then the
# server that was to listen there is unreachable.
free_port() {
  local p low
  low="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
  [ "$low" -gt 12000 ] || low=32768
  for _ in $(seq 200); do
    p=$((10000 + RANDOM % (low - 10000)))
    if ! ss -Htan "sport = :$p" | grep -q .; then echo "$p"; return; fi
  done
  die "no free port found"
}

# as_user_bg NAME CMD...: CMD as the server user in its own session (so
# the session can be killed as a whole), output appended to $HA/NAME.log, its
# pid in $HA/NAME.pid. It gets SIGTERM if its parent dies.
as_user_bg() {
  local name="$1"; shift
  user_env
  local priv=()
  [ "$(id -u)" -ne 0 ] || priv=(setpriv --reuid="$HA_UID" --regid="$HA_GID" --init-groups --pdeathsig SIGTERM --)
  setsid "${priv[@]}" "${USER_ENV[@]}" "$@" >>"$HA/$name.log" 2>&1 &
  echo $! >"$HA/$name.pid"
  disown "$!"  # killed on purpose by kill-primary: no "Killed" job report
}

# stop_keeper NAME: SIGTERM to the keeper's session (pg_autoctl stops its
# postgres), SIGKILL after 15 s, then the postmaster if it survived.
stop_keeper() {
  local name="$1" pid
  pid="$(cat "$HA/$name.pid" 2>/dev/null)" || return 0
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 75); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  kill_postmaster "$name"
  rm -f "$HA/$name.pid"
}

kill_postmaster() {
  local pm
  pm="$(head -1 "$HA/$1/postmaster.pid" 2>/dev/null)" || return 0
  [ -n "$pm" ] && kill -KILL "$pm" 2>/dev/null || true
}

teardown() {
  local code=$?
  trap - EXIT INT TERM
  [ -z "${CMD_PID:-}" ] || { kill -TERM "$CMD_PID" 2>/dev/null; wait "$CMD_PID" 2>/dev/null || true; }
  [ -z "${REVIVER_PID:-}" ] || { kill "$REVIVER_PID" 2>/dev/null; wait "$REVIVER_PID" 2>/dev/null || true; }
  local n
  for n in "${NODES[@]}" monitor; do stop_keeper "$n"; done
  if [ "$code" -ne 0 ] && [ -n "${PHASEKEY_HA_KEEP:-}" ]; then
    say "kept $HA (PHASEKEY_HA_KEEP)"
  else
    [ "$code" -eq 0 ] || for n in monitor "${NODES[@]}"; do
      say "--- last lines of $n.log"; tail -n 15 "$HA/$n.log" >&2 2>/dev/null || true
    done
    rm -rf "$HA"
  fi
  exit "$code"
}

# The reviver: starts again a node keeper that died, unless it is held
# down ($HA/NAME.hold, set by kill-primary). Runs in the background of `run`.
revive_loop() {
  while sleep 0.2; do
    local n pid
    for n in "${NODES[@]}"; do
      [ ! -e "$HA/$n.hold" ] || continue
      pid="$(cat "$HA/$n.pid" 2>/dev/null)" || continue
      kill -0 "$pid" 2>/dev/null && continue
      say "starting $n's keeper again"
      as_user_bg "$n" "$AUTOCTL" run --pgdata "$HA/$n"
    done
  done
}

create_monitor() {
  as_user "$AUTOCTL" create monitor --pgdata "$HA/monitor" --pgport "$MONITOR_PORT" --pgctl "$PG_BIN/pg_ctl" \
    --hostname 127.0.0.1 --auth trust --no-ssl >>"$HA/monitor.log" 2>&1 || die "pg_autoctl create monitor failed"
  local s
  for s in "${MONITOR_SETTINGS[@]}"; do echo "$s" >>"$HA/monitor/postgresql.auto.conf"; done
  as_user_bg monitor "$AUTOCTL" run --pgdata "$HA/monitor"
  wait_for "the monitor" 60 monitor_sql "SELECT 1"
  local applied
  applied="$(monitor_sql "SELECT current_setting('pgautofailover.node_considered_unhealthy_timeout')")"
  [ "$applied" = "2s" ] || die "the monitor's health-check settings were not applied (unhealthy timeout: $applied)"
}

create_node() {
  local name="$1" port="$2"
  as_user "$AUTOCTL" create postgres --pgdata "$HA/$name" --pgport "$port" --pgctl "$PG_BIN/pg_ctl" \
    --hostname 127.0.0.1 --name "$name" --dbname "$DBNAME" --monitor "$MONITOR_URL" \
    --auth trust --no-ssl >>"$HA/$name.log" 2>&1 || die "pg_autoctl create postgres $name failed"
  as_user_bg "$name" "$AUTOCTL" run --pgdata "$HA/$name"
}

cmd_run() {
  [ "$#" -gt 0 ] || die "usage: formation.sh run CMD [ARG...]"
  [ -x "$AUTOCTL" ] || die "$AUTOCTL is missing (Debian package postgresql-15-auto-failover)"
  HA="$(mktemp -d "${TMPDIR:-/tmp}/phasekey-ha.XXXXXX")"
  trap teardown EXIT
  trap 'exit 130' INT TERM
  HA_UID="$(id -u)" HA_GID="$(id -g)"
  if [ "$HA_UID" -eq 0 ]; then
    local user="${PHASEKEY_HA_USER:-postgres}"
    HA_UID="$(id -u "$user")" || die "system user '$user' not found (useradd -r -M $user)"
    HA_GID="$(id -g "$user")"
    chmod 755 "$HA"; chown "$HA_UID:$HA_GID" "$HA"
  fi
  MONITOR_PORT="$(free_port)"
  local p1 p2; p1="$(free_port)"; p2="$(free_port)"
  MONITOR_URL="postgres://autoctl_node@127.0.0.1:$MONITOR_PORT/pg_auto_failover?sslmode=disable"
  printf 'HA_UID=%s\nHA_GID=%s\nMONITOR_PORT=%s\nMONITOR_URL=%q\n' "$HA_UID" "$HA_GID" "$MONITOR_PORT" "$MONITOR_URL" >"$HA/ports"
  local t0=$SECONDS
  say "forming in $HA: monitor :$MONITOR_PORT, node1 :$p1, node2 :$p2"
  create_monitor
  create_node node1 "$p1"
  wait_for "node1 to be the single primary" "$FORM_TIMEOUT_S" single_node
  create_node node2 "$p2"
  export PHASEKEY_HA_DIR="$HA"
  wait_for "a primary and a secondary" "$FORM_TIMEOUT_S" healthy
  # number_sync_standbys stays 0: pg_auto_failover 2.0 refuses 1 with a
  # single standby ("At least 2 standby nodes are required"). With 0 and a
  # secondary in the replication quorum, the primary already commits only
  # once the secondary has the WAL: synchronous_standby_names is
  # 'ANY 1 (pgautofailover_standby_N)'. Checked here, not assumed.
  wait_for "synchronous replication on the primary" 60 sync_replication "$p1"
  sync_replication "$p1"
  say "formed in $((SECONDS - t0))s: $(node_states | tr '\n' ' '); synchronous_standby_names|synchronous_commit|sync standbys: $SYNC_SETTINGS"
  revive_loop &
  REVIVER_PID=$!
  export DATABASE_URL="postgresql://postgres@127.0.0.1:$p1,127.0.0.1:$p2/$DBNAME?target_session_attrs=read-write"
  # In the background and waited for, so that a signal to this script runs
  # the teardown at once (bash delays traps until a foreground child ends);
  # stdin stays ours (a background job's would be /dev/null).
  set +e
  "$@" 0<&0 &
  CMD_PID=$!
  wait "$CMD_PID"
  local code=$?
  CMD_PID=""
  set -e
  say "command exited with $code; stopping the formation"
  return "$code"
}

# Synchronous replication is on at the server on port $1: a standby is
# named in synchronous_standby_names and streams as sync or quorum.
sync_replication() {
  local v
  v="$(as_user psql -X -qAt -h 127.0.0.1 -p "$1" -d "$DBNAME" -c \
       "SELECT current_setting('synchronous_standby_names') || '|' || current_setting('synchronous_commit')
               || '|' || count(*) FILTER (WHERE sync_state IN ('sync', 'quorum'))
        FROM pg_stat_replication")" || return 1
  SYNC_SETTINGS="$v"
  [[ "$v" == ANY\ 1\ \(*\)\|on\|1 ]]
}

cmd_switchover() {
  load_state
  local before; before="$(primary_name)"
  local t0=$SECONDS
  say "switchover: primary is $before"
  as_user "$AUTOCTL" perform switchover --pgdata "$HA/monitor" --wait "$SETTLE_TIMEOUT_S" >>"$HA/events.log" 2>&1 ||
    die "pg_autoctl perform switchover failed (events.log: $(tail -3 "$HA/events.log" | tr '\n' ' '))"
  wait_for "the formation to settle after the switchover" "$SETTLE_TIMEOUT_S" healthy
  local after; after="$(primary_name)"
  [ "$after" != "$before" ] || die "switchover left $before the primary"
  say "switchover: $before -> $after in $((SECONDS - t0))s"
}

cmd_kill_primary() {
  load_state
  local victim; victim="$(primary_name)"
  [ -n "$victim" ] || die "kill-primary: no primary"
  local t0=$SECONDS pid
  touch "$HA/$victim.hold"
  pid="$(cat "$HA/$victim.pid")"
  say "kill-primary: SIGKILL to $victim (keeper session $pid and its postmaster)"
  kill_postmaster "$victim"
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait_for "the monitor to promote the secondary" "$SETTLE_TIMEOUT_S" promoted_other "$victim"
  say "kill-primary: $(primary_name) promoted after $((SECONDS - t0))s; starting $victim again"
  rm -f "$HA/$victim.hold"
  wait_for "$victim to rejoin as the secondary" "$SETTLE_TIMEOUT_S" healthy
  say "kill-primary: formation healthy again after $((SECONDS - t0))s: $(node_states | tr '\n' ' ')"
}

# Another node than $1 is the primary (or wait_primary: writable, waiting for
# a standby) in both its reported and its goal state.
promoted_other() {
  node_states | awk -F: -v old="$1" '$1 != old && ($2 == "primary" || $2 == "wait_primary") && $2 == $3 {ok=1} END {exit !ok}'
}

case "${1:-}" in
  run) shift; cmd_run "$@" ;;
  switchover) cmd_switchover ;;
  kill-primary) cmd_kill_primary ;;
  state) load_state; node_states ;;
  *) echo "usage: formation.sh run CMD [ARG...] | switchover | kill-primary | state" >&2; exit 2 ;;
esac
