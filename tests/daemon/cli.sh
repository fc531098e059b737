#!/usr/bin/env bash
# syshaxd's command line and modes, end to end on the userspace backend:
# usage and exit codes, the default mode (broker + engine) serving the
# demo, an engine-only daemon that ends with status 1 when its broker goes
# away, a socket path that is not a socket, an engine that cannot attach
# (exit 1), and the open-files soft limit raised to the hard one.
#   tests/daemon/cli.sh <syshaxd> <syshax-demo>
set -u
daemon=${1:?usage: cli.sh <syshaxd> <syshax-demo>}
demo=${2:?usage: cli.sh <syshaxd> <syshax-demo>}
here=$(dirname "$0")
fails=0
san_report='runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer'

check() {	# check <what> <expected status> <command>...
	local what=$1 want=$2 got
	shift 2
	"$@" >/dev/null 2>&1
	got=$?
	if [ "$got" -eq "$want" ]; then
		echo "ok: $what"
	else
		echo "FAIL: $what: status $got, want $want"
		fails=$((fails + 1))
	fi
}

# Waits up to 10 s for a line matching pattern in a daemon's log.
wait_log() {	# wait_log <log> <pattern>
	for _ in $(seq 100); do
		grep -q "$2" "$1" && return 0
		sleep 0.1
	done
	return 1
}

check "--help" 0 "$daemon" --help
check "--version" 0 "$daemon" --version
check "unknown option" 2 "$daemon" --frob
check "bad value" 2 "$daemon" --engine-threads 0
check "missing config file" 2 "$daemon" --config /nonexistent/syshaxd.conf
check "default mode serves the demo" 0 \
	"$here/../../scripts/with-syshaxd" "$daemon" -- "$demo"
check "--userspace serves the demo" 0 \
	"$here/../../scripts/with-syshaxd" "$daemon" --userspace -- "$demo"

dir=$(mktemp -d "${TMPDIR:-/tmp}/syshaxd-cli.XXXXXX")

# Settings from a config file reach the daemon.
printf 'socket = %s/c.sock # from the file\nengine_threads = 2\n' "$dir" \
	>"$dir/syshaxd.conf"
"$daemon" --foreground --config "$dir/syshaxd.conf" 2>"$dir/conf.log" &
pid=$!
wait_log "$dir/conf.log" "listening on"
check "config file: socket" 0 grep -q "listening on $dir/c.sock (2 engine threads)" \
	"$dir/conf.log"
check "config file: the demo runs" 0 env SYSHAX_DEVICE="$dir/c.sock" "$demo"
kill -TERM "$pid"
wait "$pid"

# An engine-only daemon against a broker that then stops.
"$daemon" --foreground --no-engine --socket "$dir/s" 2>"$dir/broker.log" &
broker=$!
wait_log "$dir/broker.log" "listening on"
"$daemon" --foreground --engine-only --socket "$dir/s" 2>"$dir/engine.log" &
engine=$!
wait_log "$dir/engine.log" "attached"
kill -TERM "$broker"
wait "$broker"
check "broker stops cleanly on SIGTERM" 0 test $? -eq 0
wait "$engine"
check "engine-only exits 1 when its broker goes" 0 test $? -eq 1

# A file at --socket that is not a socket is left alone: exit 1.
echo "not a socket" >"$dir/file"
check "a regular file at --socket: exit 1" 1 \
	timeout 20 "$daemon" --foreground --socket "$dir/file"
check "the file is kept" 0 grep -qx "not a socket" "$dir/file"
timeout 20 "$daemon" --foreground --socket "$dir/file" 2>"$dir/file.log"
check "and the log says why" 0 grep -q "$dir/file exists and is not a socket" \
	"$dir/file.log"

# The socket's missing directory is made, and logged.
"$daemon" --foreground --no-engine --socket "$dir/new/s" 2>"$dir/new.log" &
pid=$!
wait_log "$dir/new.log" "listening on"
check "a missing socket directory is logged" 0 \
	grep -q "created directory $dir/new" "$dir/new.log"
kill -TERM "$pid"
wait "$pid"

# Started with a soft open-files limit of 256 under a higher hard one, the
# daemon raises the soft limit to the hard one and logs it.
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -le 256 ]; then
	echo "skip: open-files limit (hard limit $hard)"
else
	(ulimit -Sn 256 && exec "$daemon" --foreground --no-engine \
		--socket "$dir/nofile.sock") 2>"$dir/nofile.log" &
	pid=$!
	wait_log "$dir/nofile.log" "listening on"
	soft=$(awk '/^Max open files/ { print $4 }' "/proc/$pid/limits")
	check "open-files soft limit 256 raised to the hard $hard" 0 \
		test "$soft" = "$hard"
	check "and logged" 0 grep -q "open files: up to $hard (soft limit was 256)" \
		"$dir/nofile.log"
	kill -TERM "$pid"
	wait "$pid"
fi

# An engine that cannot attach (no node 15 here) ends the daemon with 1,
# so that Restart=on-failure sees it.
if [ -d /sys/devices/system/node/node15 ]; then
	echo "skip: an engine on a missing node (this host has node 15)"
else
	check "an engine that cannot attach: exit 1" 1 timeout 30 \
		"$daemon" --foreground --node 15 --socket "$dir/n.sock"
fi

# Sanitizer reports of the daemons above (make SAN=1) fail the suite.
if grep -lE "$san_report" "$dir"/*.log; then
	echo "FAIL: sanitizer reports in the daemons' logs above"
	fails=$((fails + 1))
fi
rm -rf "$dir"

[ "$fails" -eq 0 ] || { echo "cli.sh: $fails failed"; exit 1; }
echo "cli.sh: all passed"
