# Reads the guest's serial console log and judges the run from the @@VM-
# lines tests/vm/init prints.
#   awk -v suites="a b" [-v status=<qemu exit status>] -f parse-console.awk console.log
# Prints one line per suite, then exactly
#   vm-check: N passed, N failed, N skipped
# and exits 1 on any failure: a failed or missing suite, a failed load or
# rmmod, pinned bytes left, warnings in the session's kernel log, no
# summary, a kernel panic, or QEMU killed by the timeout (124).
BEGIN {
	n = split(suites, order, " ")
	for (i = 1; i <= n; i++)
		want[order[i]] = 1
	load = ""; rmmod = ""; dmesg = ""; summary = 0; pinned = ""
}

{
	sub(/\r+$/, "")
	if (panic == "" && index($0, "Kernel panic - not syncing"))
		panic = substr($0, index($0, "Kernel panic"))
	# Kernel messages may share the line: start at the marker.
	at = index($0, "@@VM-")
	if (!at)
		next
	split(substr($0, at), f, " ")
}

f[1] == "@@VM-LOAD" { load = f[2] }
f[1] == "@@VM-SUITE" && (f[2] in want) { result[f[2]] = f[3]; why[f[2]] = f[5] }
f[1] == "@@VM-PINNED" { pinned = f[2] }
f[1] == "@@VM-RMMOD" { rmmod = f[2] }
f[1] == "@@VM-DMESG" { dmesg = f[2] }
f[1] == "@@VM-SUMMARY" { summary = 1 }

END {
	bad = 0; np = 0; nf = 0; ns = 0
	if (panic != "") {
		print "vm-check: guest " panic
		bad = 1
	}
	if (status == 124) {
		print "vm-check: QEMU timed out"
		bad = 1
	}
	if (load != "ok") {
		print "vm-check: syshax.ko " (load == "" ? "load not reported" : "failed to load")
		bad = 1
	}
	for (i = 1; i <= n; i++) {
		s = order[i]
		r = (s in result) ? result[s] : "fail"
		w = (s in result) ? why[s] : "why=no-result"
		if (r == "pass")
			np++
		else if (r == "skip")
			ns++
		else {
			nf++
			r = "fail (" substr(w, 5) ")"
		}
		printf "vm-check: %s: %s\n", s, r
	}
	if (pinned != "" && pinned != "0") {
		print "vm-check: " pinned " bytes still pinned after all suites"
		bad = 1
	}
	if (rmmod != "ok") {
		print "vm-check: rmmod syshax " (rmmod == "" ? "not reported" : "failed")
		bad = 1
	}
	if (dmesg != "ok") {
		print "vm-check: kernel log since the load " (dmesg == "" ? "not checked" : "has warnings")
		bad = 1
	}
	if (!summary) {
		print "vm-check: no summary from the guest"
		bad = 1
	}
	printf "vm-check: %d passed, %d failed, %d skipped\n", np, nf, ns
	exit (bad || nf) ? 1 : 0
}
