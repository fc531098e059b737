#!/usr/bin/env bash
# syshax-top against a private syshaxd under a NOP load (make check-top):
#   tests/top/top_test.sh <build dir>
# 1. --json equals the stats calls made around it (top_json_check);
# 2. --prometheus parses: names, a TYPE before each sample, numeric values,
#    and the load's context and pinned bytes are in it;
# 3. --once has every panel; without a terminal, and with TERM=dumb, the
#    screen refuses with a message and status 1;
# 4. the screen in tmux: the panels appear, the numbers move between two
#    captures, p pauses them, h shows the help, s sorts, + changes the
#    interval, a resize redraws, q quits with status 0.
# Exit 77 (skip) only when tmux is missing (scripts/deps.txt installs it).
set -u

B=${1:?usage: top_test.sh <build dir>}
B=$(cd "$B" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
top=$B/syshax-top

if [ "${TOP_TEST_INNER:-}" != 1 ]; then
	command -v tmux >/dev/null || {
		echo "top_test: SKIP: tmux is not installed (apt-get install tmux)" >&2
		exit 77
	}
	TOP_TEST_INNER=1 exec "$here/../../scripts/with-syshaxd" \
		"$B/syshaxd" -- "$0" "$B"
fi

fails=0
fail() {
	echo "top_test: FAIL: $*" >&2
	fails=$((fails + 1))
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/top_test.XXXXXX")
sock=top$$
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	[ -n "${load:-}" ] && kill "$load" 2>/dev/null && wait "$load" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# The load: one 4 MiB buffer and NOP jobs until killed.
"$B/tests/top/top_load" --bytes $((4 << 20)) >"$dir/load" 2>&1 &
load=$!
for _ in $(seq 50); do
	grep -q ready "$dir/load" && break
	sleep 0.1
done
bytes=$(awk '/ready/ { print $2 }' "$dir/load")
[ -n "$bytes" ] || { echo "top_test: the load did not start: $(cat "$dir/load")" >&2; exit 1; }
sleep 0.5

# 1. --json against the stats calls.
"$B/tests/top/top_json_check" "$top" "$load" "$bytes" || fail "--json differs from the stats calls"

# 2. --prometheus parses.
"$top" --prometheus --interval 0.2 >"$dir/prom" || fail "--prometheus exited $?"
awk -v load="$load" -v bytes="$bytes" '
function bad(msg) { print "top_test: prometheus line " NR ": " msg ": " $0 > "/dev/stderr"; err = 1 }
/^# HELP / { next }
/^# TYPE / {
	if (NF != 4 || $3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/ ||
	    $4 !~ /^(counter|gauge|histogram|summary|untyped)$/)
		bad("bad TYPE line")
	if ($3 in type) bad("TYPE twice")
	type[$3] = $4
	next
}
/^#/ { next }
/^$/ { next }
{
	line = $0
	if (!match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) { bad("bad name"); next }
	name = substr(line, 1, RLENGTH)
	rest = substr(line, RLENGTH + 1)
	labels = ""
	if (substr(rest, 1, 1) == "{") {
		if (!match(rest, /^\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*)?\}/)) {
			bad("bad labels"); next
		}
		labels = substr(rest, 1, RLENGTH)
		rest = substr(rest, RLENGTH + 1)
	}
	if (rest !~ /^ [-+]?([0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+|Inf|NaN)$/) {
		bad("value is not a number"); next
	}
	base = name
	if (!(base in type)) sub(/_(bucket|count|sum)$/, "", base)
	if (!(base in type)) { bad("no TYPE before the sample"); next }
	if (type[base] == "histogram" && name == base) bad("histogram sample without suffix")
	samples++
	if (name == "syshax_ctx_buffer_bytes" && labels ~ "pid=\"" load "\"") {
		seen_load = 1
		if (labels !~ /comm="top_load"/) bad("load comm")
		if (rest + 0 != bytes) bad("load bytes " rest)
	}
	if (name == "syshax_pinned_bytes" && labels ~ /node="0"/) seen_node = 1
	if (name == "syshax_jobs_total" && labels ~ /state="completed"/ && rest + 0 > 0) seen_jobs = 1
}
END {
	if (samples < 20) { print "top_test: prometheus: only " samples " samples" > "/dev/stderr"; err = 1 }
	if (!seen_load) { print "top_test: prometheus: no syshax_ctx_buffer_bytes for the load" > "/dev/stderr"; err = 1 }
	if (!seen_node) { print "top_test: prometheus: no syshax_pinned_bytes{node=\"0\"}" > "/dev/stderr"; err = 1 }
	if (!seen_jobs) { print "top_test: prometheus: no completed jobs counted" > "/dev/stderr"; err = 1 }
	exit err
}' "$dir/prom" || fail "--prometheus does not parse"

# 3. --once and the refusals.
"$top" --once --interval 0.2 >"$dir/once" || fail "--once exited $?"
for want in "backend: syshaxd" "pinned " "contexts " "top_load" "jobs: queued" "latency: p50" "CPU engine"; do
	grep -q "$want" "$dir/once" || fail "--once lacks '$want'"
done
"$top" </dev/null >"$dir/notty" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "without a terminal: status $rc, not 1"
grep -q "not a terminal" "$dir/notty" || fail "without a terminal: no message: $(cat "$dir/notty")"
"$top" --bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad option is not status 2"
"$top" --help | grep -q -- "--prometheus" || fail "--help lacks --prometheus"

tm() { tmux -L "$sock" "$@"; }
cap() { tm capture-pane -p -t top; }
# The load's DONE column in a capture.
done_of() { awk '$3 == "top_load" { print $NF; exit }' "$1"; }
# Waits until the screen shows $1 (5 s).
wait_for() {
	for _ in $(seq 50); do
		cap >"$dir/cap" && grep -q -- "$1" "$dir/cap" && return 0
		sleep 0.1
	done
	return 1
}

tm -f /dev/null new-session -d -s dumb -x 100 -y 20 \
	"TERM=dumb '$top'; echo rc=\$? >'$dir/dumb'; sleep 5"
for _ in $(seq 50); do [ -s "$dir/dumb" ] && break; sleep 0.1; done
grep -q rc=1 "$dir/dumb" 2>/dev/null || fail "TERM=dumb: $(cat "$dir/dumb" 2>/dev/null)"
tm capture-pane -p -t dumb | grep -q "TERM is dumb" || fail "TERM=dumb: no message"

# 4. The screen. Its session first: the tmux server exits with its last
# session, and a new-session racing that exit found no server (seen once
# under make -j2 check).
tm -f /dev/null new-session -d -s top -x 120 -y 50 \
	"LANG=C.UTF-8 '$top' --interval 0.5; echo rc=\$? >'$dir/rc'; sleep 30"
tm kill-session -t dumb
wait_for top_load || fail "the screen never showed the load: $(cat "$dir/cap")"
sleep 1
cap >"$dir/cap1"
for want in "syshax-top  backend: syshaxd" "Pinned memory" "Engines and queue" "CPU engine" "Contexts" "jobs/s" "tokens/s" "COMMAND" "syshax-top"; do
	grep -q "$want" "$dir/cap1" || fail "the screen lacks '$want'"
done
sleep 1.5
cap >"$dir/cap2"
d1=$(done_of "$dir/cap1")
d2=$(done_of "$dir/cap2")
if [ -z "$d1" ] || [ -z "$d2" ] || [ "$d2" -le "$d1" ]; then fail "the load's jobs did not move: '$d1' then '$d2'"; fi
grep -Eq "jobs/s submitted [1-9]" "$dir/cap2" || fail "jobs/s submitted is 0: $(grep jobs/s "$dir/cap2")"

tm send-keys -t top p
wait_for PAUSED || fail "p did not pause"
cp "$dir/cap" "$dir/p1"
sleep 1.5
cap >"$dir/p2"
[ "$(done_of "$dir/p1")" = "$(done_of "$dir/p2")" ] || fail "the numbers moved while paused"
tm send-keys -t top p
sleep 1.5
cap >"$dir/p3"
grep -q PAUSED "$dir/p3" && fail "p did not resume"
[ "$(done_of "$dir/p3")" -gt "$(done_of "$dir/p2")" ] 2>/dev/null || fail "the numbers did not move after resuming"

tm send-keys -t top h
wait_for "syshax-top keys" || fail "h did not show the help"
tm send-keys -t top x
sleep 0.5
cap | grep -q "syshax-top keys" && fail "a key did not close the help"

tm send-keys -t top s
wait_for "sort: jobs in flight" || fail "s did not change the sort"
tm send-keys -t top +
wait_for "refresh 1.0s" || fail "+ did not lengthen the interval"
tm send-keys -t top -
wait_for "refresh 0.5s" || fail "- did not shorten the interval"

# Narrower than the header: rows are clipped, not wrapped onto the next.
tm resize-window -t top -x 50 -y 24 2>/dev/null
sleep 1
cap >"$dir/small"
head -1 "$dir/small" | grep -q "^syshax-top" || fail "no header after a resize: $(head -3 "$dir/small")"
sed -n 2p "$dir/small" | grep -q "^NUMA nodes" || fail "the header wrapped after a resize: $(head -3 "$dir/small")"
[ "$(wc -l <"$dir/small")" -eq 24 ] || fail "not 24 rows after a resize"
sed -n 3p "$dir/small" | grep -q "^CPU " || fail "the header wrapped after a resize: $(head -3 "$dir/small")"
# The header's rows (over 50 columns) are followed by the empty row.
sed -n 4p "$dir/small" | grep -q '[^ ]' && fail "the header's third row wrapped: $(head -4 "$dir/small")"
grep -q "q quit" "$dir/small" || fail "no key bar after a resize"

tm send-keys -t top q
for _ in $(seq 50); do [ -s "$dir/rc" ] && break; sleep 0.1; done
grep -q rc=0 "$dir/rc" 2>/dev/null || fail "q: $(cat "$dir/rc" 2>/dev/null || echo 'did not quit')"

if [ $fails -ne 0 ]; then
	echo "top_test: $fails checks failed; last screen:" >&2
	cat "$dir/cap2" >&2 2>/dev/null
	exit 1
fi
echo "top_test: syshax-top passed (json, prometheus, once, screen, keys, resize)"
