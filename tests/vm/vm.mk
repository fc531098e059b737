# tests/vm: the QEMU harness behind make vm-check (the rule is in the top
# Makefile). On the host, make check tests its console parser with canned
# logs and lints its scripts.
CHECKS += vm-parse-check vm-shellcheck

.PHONY: vm-parse-check vm-shellcheck
vm-parse-check:
	tests/vm/parse-test.sh
	test "$$(VM_KVER=1.2.3-test-amd64 tests/vm/kernel.sh --kver)" = \
		1.2.3-test-amd64

vm-shellcheck:
	shellcheck tests/vm/*.sh scripts/dkms-check scripts/sparse-check \
		scripts/apt-fetch.sh scripts/kernel-headers scripts/kmod-build
	shellcheck -s sh tests/vm/init

# The conformance suite runs on the module once per job path, each mode
# named (so neither depends on the library's default): the binary goes as
# a file, the two scripts run it. (tests/conformance/conformance.mk is
# included before this file.)
VM_BINS := $(filter-out $(CONF_BIN),$(VM_BINS)) \
	   tests/vm/conformance-syscalls.sh tests/vm/conformance-rings.sh
VM_FILES += $(CONF_BIN)
