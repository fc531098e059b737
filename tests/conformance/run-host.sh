#!/bin/sh
# Runs the conformance suite on the host against the userspace backend: a
# syshaxd broker (no engine: the suite starts, kills and restarts its own)
# on a private socket.
#   tests/conformance/run-host.sh <syshaxd> <suite>
set -u
daemon=${1:?usage: run-host.sh <syshaxd> <suite>}
suite=${2:?usage: run-host.sh <syshaxd> <suite>}

dir=$(mktemp -d "${TMPDIR:-/tmp}/syshax-conf.XXXXXX") || exit 1
sock=$dir/syshaxd.sock
"$daemon" --foreground --no-engine --socket "$sock" &
pid=$!

# The broker is up when its socket exists.
i=0
while [ ! -S "$sock" ]; do
	if ! kill -0 "$pid" 2>/dev/null || [ $i -ge 100 ]; then
		echo "run-host.sh: syshaxd did not start" >&2
		kill "$pid" 2>/dev/null
		rm -rf "$dir"
		exit 1
	fi
	sleep 0.1
	i=$((i + 1))
done

SYSHAX_DEVICE=$sock SYSHAX_ENGINE_CMD="$daemon --engine-only --foreground" \
	timeout 600 "$suite"
rc=$?

kill -TERM "$pid"
wait "$pid"
drc=$?
rm -rf "$dir"
if [ "$drc" -ne 0 ]; then
	echo "run-host.sh: syshaxd exited with $drc" >&2
	[ "$rc" -eq 0 ] && rc=1
fi
exit $rc
