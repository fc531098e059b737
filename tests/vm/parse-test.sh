#!/usr/bin/env bash
# Checks parse-console.awk against the console logs in tests/vm/cases/:
# each <case>.log starts with "# suites=<names> status=<QEMU status>" and
# <case>.expect holds the awk's output followed by "exit <status>".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fails=0 n=0
for log in "$here"/cases/*.log; do
	name=$(basename "$log" .log)
	head=$(head -n 1 "$log")
	suites=$(sed -n 's/^# suites=\(.*\) status=.*/\1/p' <<<"$head")
	status=$(sed -n 's/.* status=\([0-9]*\)$/\1/p' <<<"$head")
	got=$(awk -v suites="$suites" -v status="$status" -f "$here/parse-console.awk" "$log"
	      echo "exit $?")
	n=$((n + 1))
	if [ "$got" != "$(cat "$here/cases/$name.expect")" ]; then
		echo "FAIL $name:"
		diff <(echo "$got") "$here/cases/$name.expect"
		fails=$((fails + 1))
	fi
done
[ $n -gt 0 ] || { echo "parse-test: no cases found"; exit 1; }
echo "parse-test: $((n - fails))/$n cases pass"
[ $fails -eq 0 ]
