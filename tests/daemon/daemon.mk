# tests/daemon/: syshaxd's command line and modes, end to end.
.PHONY: check-syshaxd-cli
check-syshaxd-cli: $(B)/syshaxd $(B)/syshax-demo
	tests/daemon/cli.sh $(B)/syshaxd $(B)/syshax-demo

CHECKS	+= check-syshaxd-cli
