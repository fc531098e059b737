# tests/run/: syshax-run end to end on generated models and private daemons.
.PHONY: check-syshax-run
check-syshax-run: $(B)/syshax-run $(B)/syshaxd
	timeout 300 tests/run/run.sh $(B)/syshax-run $(B)/syshaxd
	shellcheck tests/run/run.sh

CHECKS	+= check-syshax-run
