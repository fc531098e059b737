# tests/vm: the QEMU harness behind make vm-check (the rule is in the top
# Makefile). Its console parser is checked on the host with canned logs.
CHECKS += vm-parse-check

.PHONY: vm-parse-check
vm-parse-check:
	tests/vm/parse-test.sh
