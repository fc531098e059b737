#!/usr/bin/env bash
# syshax-check on the host: every item reported, the module line FAIL with
# its fix when no module is loaded, --json complete, and a private syshaxd
# found (by $SYSHAX_DEVICE, and by a non-root user as the system socket).
#   tools/check/check-test.sh <syshax-check> <syshaxd>
set -u
chk=$1
syshaxd=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
items=(module device daemon hugepages memlock iommu vfio cpu daemon-cap)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
	echo "check-test: $*" >&2
	fails=$((fails + 1))
}

# Never the real system socket: a path in our folder.
export SYSHAX_SYSTEM_SOCKET=$tmp/none.sock XDG_RUNTIME_DIR=$tmp/xdg
unset SYSHAX_DEVICE

# Text: one line per item, in order, each with a status.
"$chk" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
for i in "${items[@]}"; do
	grep -Eq "^(OK|WARN|FAIL) +$i " "$tmp/out" || fail "no $i line"
done
[ "$(grep -Ec '^(OK|WARN|FAIL) ' "$tmp/out")" -eq 9 ] ||
	fail "not 9 item lines"
# Every WARN and FAIL is followed by its fix.
awk '/^(WARN|FAIL) / { want = 1; next }
	want && !/^ +fix: / { bad = 1 } { want = 0 }
	END { exit bad }' "$tmp/out" || fail "a WARN or FAIL without its fix"
grep -q "tried $tmp/xdg/syshax/syshaxd.sock (No such file or directory)" \
	"$tmp/out" || [ "$(id -u)" = 0 ] || fail "daemon line: paths tried"
grep -q "$tmp/none.sock (No such file or directory)" "$tmp/out" ||
	fail "daemon line: the system socket not named"
if [ -d /sys/module/syshax ]; then
	echo "check-test: NOTE: syshax is loaded here: module line not FAIL"
	grep -Eq '^(OK|WARN) +module ' "$tmp/out" || fail "module loaded, line FAIL"
else
	grep -q '^FAIL  module     syshax not loaded' "$tmp/out" ||
		fail "no module, no FAIL module line"
	grep -q 'fix: modprobe syshax' "$tmp/out" || fail "no module fix"
	[ "$rc" -eq 1 ] || fail "a FAIL, status $rc (want 1)"
fi

# --json: the same items, every field.
"$chk" --json >"$tmp/json"
jrc=$?
[ "$jrc" -eq "$rc" ] || fail "--json status $jrc, text $rc"
python3 - "$tmp/json" "$jrc" "${items[@]}" <<'PY' || fail "--json"
import json, sys
doc = json.load(open(sys.argv[1]))
rc, want = int(sys.argv[2]), sys.argv[3:]
names = [c["name"] for c in doc["checks"]]
assert names == want, names
for c in doc["checks"]:
    assert c["status"] in ("OK", "WARN", "FAIL"), c
    assert isinstance(c["detail"], str) and c["detail"], c
    assert (c["fix"] is None) == (c["status"] == "OK"), c
    assert isinstance(c["data"], dict), c
n = {s: sum(c["status"] == s for c in doc["checks"]) for s in ("OK", "WARN", "FAIL")}
assert (doc["ok"], doc["warn"], doc["fail"]) == (n["OK"], n["WARN"], n["FAIL"]), doc
assert (rc == 1) == (n["FAIL"] > 0), (rc, n)
by = {c["name"]: c["data"] for c in doc["checks"]}
assert isinstance(by["module"]["loaded"], bool) and by["module"]["lib_uapi"] > 0
assert by["daemon"]["found"] is False and len(by["daemon"]["tried"]) >= 1
assert all(set(x) == {"node", "total", "free"} for x in by["hugepages"]["nodes"])
assert by["cpu"]["variant"] in by["cpu"]["runs"], by["cpu"]
# AMX as cpuid reports it is what the kernel lists in /proc/cpuinfo.
flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith(("flags", "Features")):
        flags = set(line.split(":", 1)[1].split())
        break
want_amx = [u for u in ("tile", "int8", "bf16") if "amx_" + u in flags]
assert by["cpu"]["amx"] == want_amx, (by["cpu"], want_amx)
assert isinstance(by["cpu"]["amx_usable"], bool) and by["cpu"]["model"], by["cpu"]
assert by["cpu"]["amx_usable"] <= bool(want_amx), by["cpu"]
PY

# Usage.
"$chk" --help | grep -q '^Usage: syshax-check' || fail "--help"
"$chk" --bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad option is not status 2"

# A private syshaxd: found through $SYSHAX_DEVICE, its UAPI and cap shown.
# shellcheck disable=SC2016 # expanded by the inner shell
"$here/scripts/with-syshaxd" "$syshaxd" -- sh -c \
	'"$1" >"$2/d.out"; echo $? >"$2/d.rc"; "$1" --json >"$2/d.json"
	 chmod 711 "$(dirname "$SYSHAX_DEVICE")"
	 echo "$SYSHAX_DEVICE" >"$2/d.sock"
	 if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		env -u SYSHAX_DEVICE -u XDG_RUNTIME_DIR \
			SYSHAX_SYSTEM_SOCKET="$SYSHAX_DEVICE" setpriv \
			--reuid=65534 --regid=65534 --clear-groups \
			"$1" >"$2/n.out"
	 fi; true' sh "$chk" "$tmp" || fail "with-syshaxd"
cat "$tmp/d.out"
sock=$(cat "$tmp/d.sock")
grep -q "^OK    daemon     syshaxd (userspace backend) at $sock, UAPI" \
	"$tmp/d.out" || fail "daemon line not OK with a daemon"
grep -q '^OK    daemon-cap syshaxd pins at most' "$tmp/d.out" ||
	fail "daemon-cap line not OK with a daemon"
python3 -c 'import json, sys
d = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
assert d["daemon"]["data"]["found"] is True and d["daemon"]["data"]["path"] == sys.argv[2]
assert d["daemon-cap"]["data"]["max_pinned"] > 0' "$tmp/d.json" "$sock" ||
	fail "--json with a daemon"
if [ -f "$tmp/n.out" ]; then
	cat "$tmp/n.out"
	# nobody, no $SYSHAX_DEVICE, no $XDG_RUNTIME_DIR: the system socket.
	grep -q "^OK    daemon     syshaxd (userspace backend) at $sock" \
		"$tmp/n.out" || { cat "$tmp/n.out"; fail "nobody: daemon not found"; }
	grep -qF "\$XDG_RUNTIME_DIR unset" "$tmp/n.out" ||
		fail "nobody: no word on \$XDG_RUNTIME_DIR"
	grep -q '^FAIL  device' "$tmp/n.out" && [ -c /dev/syshax ] &&
		echo "check-test: nobody cannot open /dev/syshax (expected)"
else
	echo "check-test: SKIP: the system-socket case as nobody (not root)"
fi

[ "$fails" -eq 0 ] || { echo "check-test: $fails failed" >&2; exit 1; }
echo "check-test: ok"
