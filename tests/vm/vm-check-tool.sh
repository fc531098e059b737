#!/bin/sh
# VM suite: syshax-check in the guest, with the module loaded: the module
# line OK with the module's UAPI equal to the library's, the device line OK
# (root), no line FAIL, status 0; --json agrees. (The host's make check
# covers the case without the module: tools/check/check-test.sh.)
set -u
[ -c /dev/syshax ] || { echo "SKIP: vm-check-tool: no /dev/syshax"; exit 77; }
fails=0
bad() {
	echo "vm-check-tool: $*" >&2
	fails=$((fails + 1))
}
out=$(/bin/syshax-check)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || bad "status $rc (want 0)"
mline=$(echo "$out" | grep '^OK    module ') || bad "module line not OK"
mod=$(echo "$mline" | sed -n 's/.*UAPI \([0-9]*\) (library \([0-9]*\)).*/\1/p')
lib=$(echo "$mline" | sed -n 's/.*UAPI \([0-9]*\) (library \([0-9]*\)).*/\2/p')
if [ -z "$mod" ] || [ "$mod" != "$lib" ]; then
	bad "module UAPI '$mod', library '$lib'"
fi
echo "$out" | grep -q '^OK    device     /dev/syshax mode ' || bad "device line not OK"
echo "$out" | grep -q '^FAIL' && bad "a line FAILs"
[ "$(echo "$out" | grep -Ec '^(OK|WARN|FAIL) ')" -eq 9 ] || bad "not 9 lines"
json=$(/bin/syshax-check --json) || bad "--json status $?"
echo "$json" | grep -q '"fail":[[:space:]]*0' || bad "--json: fail not 0"
echo "$json" | grep -q "\"uapi\":[[:space:]]*$mod," || bad "--json: no uapi $mod"
[ "$fails" -eq 0 ] || exit 1
echo "vm-check-tool: ok"
