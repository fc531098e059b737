# tests/vm: the QEMU harness behind make vm-check (the rule is in the top
# Makefile). On the host, make check tests its console parser with canned
# logs and lints its scripts.
CHECKS += vm-parse-check vm-shellcheck

.PHONY: vm-parse-check vm-shellcheck
vm-parse-check:
	tests/vm/parse-test.sh

vm-shellcheck:
	shellcheck tests/vm/*.sh scripts/dkms-check scripts/sparse-check
	shellcheck -s sh tests/vm/init
