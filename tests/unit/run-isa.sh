#!/bin/sh
# Runs each kernel test program once per ISA variant (SYSHAX_ISA; "auto"
# leaves it unset: the CPU probe chooses), so every variant is compared
# with the generic one. Usage: [RUNNER=emulator] run-isa.sh "ISAS" PROG...
# Exit 77 from a program (CPU lacks the variant) is a loud SKIP, not a pass.
isas=$1
shift
fail=0 pass=0 skip=0
for isa in $isas; do
	for prog in "$@"; do
		if [ "$isa" = auto ]; then
			env -u SYSHAX_ISA $RUNNER "$prog"
		else
			SYSHAX_ISA=$isa $RUNNER "$prog"
		fi
		rc=$?
		case $rc in
		0) pass=$((pass + 1)) ;;
		77) skip=$((skip + 1)); echo "SKIP: $prog with SYSHAX_ISA=$isa $RUNNER" ;;
		*) fail=$((fail + 1)); echo "FAIL: $prog with SYSHAX_ISA=$isa $RUNNER (exit $rc)" ;;
		esac
	done
done
echo "kernels: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
