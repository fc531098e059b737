#!/bin/sh
# Runs the conformance suite on the host against the userspace backend: a
# syshaxd broker without engines (the suite starts, kills and restarts its
# own engine) on a private socket.
#   tests/conformance/run-host.sh <syshaxd> <suite>
set -u
daemon=${1:?usage: run-host.sh <syshaxd> <suite>}
suite=${2:?usage: run-host.sh <syshaxd> <suite>}
exec "$(dirname "$0")/../../scripts/with-syshaxd" "$daemon" --no-engine -- \
	env SYSHAX_ENGINE_CMD="$daemon --engine-only --foreground" \
	timeout 600 "$suite"
