# tests/vm: the QEMU harness behind make vm-check and the other guests of
# make test. On the host, make check tests its console parser with canned
# logs and lints its scripts.
CHECKS += vm-parse-check vm-shellcheck

.PHONY: vm-parse-check vm-shellcheck
vm-parse-check:
	tests/vm/parse-test.sh
	test "$$(VM_KVER=1.2.3-test-amd64 tests/vm/kernel.sh --kver)" = \
		1.2.3-test-amd64
	test "$$(VM_ARCH=arm64 VM_KVER=1.2.3-test-arm64 tests/vm/kernel.sh --kver)" = \
		1.2.3-test-arm64
	! VM_ARCH=sparc tests/vm/kernel.sh --kver 2>/dev/null

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

# Guests (tests/vm/README.md). One guest boots VM_ARCH's kernel VM_KVER
# with every suite in VM_BINS, in the NUMA layout VM_NUMA:
#   make vm-check              amd64, VM_KVER (linux-image-amd64's), two
#                              nodes; then a second guest with a memoryless
#                              node for VM_MEMORYLESS_BINS (amd64 only)
#   make vm-check-arm64        arm64 (neoverse-n1, SMMUv3), VM_ARM64_KVER
#                              (linux-image-arm64's), two nodes
#   make vm-check-arm64-4node  the same with four nodes at two-socket
#                              distances, like a Kunpeng 920
#   make vm-check-6.12         amd64, VM_612_KVER (the newest 6.12 kernel
#                              apt offers), two nodes
#   make vm-check-all          all four, one after another (make test)
# make vm-check VM_ARCH=arm64 [VM_KVER=...] [VM_NUMA=4node] does the same
# by hand. Userspace for an arm64 guest is cross-built by a make of its own
# in $(B)/arm64. The module: make kmod's (in the tree) for amd64 headers
# that KDIR or /usr/src holds; else scripts/kernel-headers fetches
# VM_KVER's and scripts/kmod-build builds it in build/kmod/<VM_KVER>/.
#
# The four-node guest runs the suites whose subject is NUMA (each works on
# any number of nodes): placement and the fallback order (buf_test),
# syshaxd's CPU engine with a worker per node (engine_ops), its weights
# split over every node (numa_split) and its broker's per-node buffers
# (broker_ut), syshax-check's per-node lines, the tools with a worker per
# node (vm-tools.sh). The others test the same code as on two nodes and
# cost 3-10 times as much with four vCPUs on two cores (jobs_stress 364 s,
# conformance over 180 s a mode). VM_4NODE_SUITES=all runs every one.
VM_4NODE_SUITES ?= buf_test engine_ops numa_split broker_ut vm-check-tool.sh \
	vm-tools.sh
VM_GUEST_BINS = $(if $(filter 4node,$(VM_NUMA)),$(if $(filter all,$(VM_4NODE_SUITES)),$(VM_BINS),\
	$(filter $(addprefix %/,$(VM_4NODE_SUITES)),$(VM_BINS))),$(VM_BINS))
VM_ARM64_KVER = $(shell VM_ARCH=arm64 VM_KVER= tests/vm/kernel.sh --kver)
VM_612_KVER = $(shell VM_ARCH=amd64 tests/vm/kernel.sh --newest 6.12)
VM_ARM64_MAKE = PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig \
	$(MAKE) B=$(B)/arm64 CC=aarch64-linux-gnu-gcc AR=aarch64-linux-gnu-ar \
	VM_ARCH=arm64
VM_KO_TREE := $(and $(filter amd64,$(VM_ARCH)),$(or $(if $(VM_KVER),,none),\
	$(filter-out file,$(origin KDIR)),$(wildcard /usr/src/linux-headers-$(VM_KVER))))
VM_KO_BUILD = $(if $(VM_KO_TREE),ko=$(CURDIR)/syshax.ko,\
	hdr=$$(scripts/kernel-headers "$(VM_KVER)" $(VM_ARCH)) \
	&& ko=$$(scripts/kmod-build "$$hdr" build/kmod/$(VM_KVER) $(VM_ARCH)))

# The suites' lists are complete only once every fragment is read (tools/
# comes after tests/): the guests' prerequisites are expanded a second time.
.SECONDEXPANSION:
.PHONY: vm-check vm-guest vm-check-arm64 vm-check-arm64-4node vm-check-6.12 \
	vm-check-all
ifeq ($(VM_ARCH)$(filter aarch64-linux-gnu-gcc,$(CC)),arm64)
vm-guest:
	+$(VM_ARM64_MAKE) VM_KVER=$(VM_KVER) vm-guest
else
vm-guest: $(if $(VM_KO_TREE),kmod) $$(VM_GUEST_BINS) $$(VM_FILES)
	$(VM_KO_BUILD) && VM_FILES="$(VM_FILES)" tests/vm/run-vm.sh "$$ko" $(VM_GUEST_BINS)
endif

ifeq ($(VM_ARCH),amd64)
# Both guests run; the rule fails when either did.
vm-check: $(if $(VM_KO_TREE),kmod) $$(VM_BINS) $$(VM_FILES) \
		$$(VM_MEMORYLESS_BINS) $$(VM_MEMORYLESS_FILES)
	$(VM_KO_BUILD) || exit 1; \
	VM_FILES="$(VM_FILES)" tests/vm/run-vm.sh "$$ko" $(VM_BINS); \
	rc=$$?; \
	VM_FILES="$(VM_MEMORYLESS_FILES)" VM_NUMA=memoryless \
		tests/vm/run-vm.sh "$$ko" $(VM_MEMORYLESS_BINS) || rc=1; \
	exit $$rc
else
vm-check: vm-guest
endif

# An empty version (apt knows none) would fall back to the tree's module.
VM_NEED_KVER = k=$(1); [ -n "$$k" ] || { echo "$@: apt knows no $(2) kernel (apt-get update?)" >&2; exit 1; }
vm-check-arm64:
	+$(call VM_NEED_KVER,$(VM_ARM64_KVER),arm64); \
	$(VM_ARM64_MAKE) VM_KVER=$$k VM_NUMA= vm-guest
vm-check-arm64-4node:
	+$(call VM_NEED_KVER,$(VM_ARM64_KVER),arm64); \
	$(VM_ARM64_MAKE) VM_KVER=$$k VM_NUMA=4node vm-guest
vm-check-6.12:
	+$(call VM_NEED_KVER,$(VM_612_KVER),6.12 amd64); \
	$(MAKE) VM_ARCH=amd64 VM_KVER=$$k VM_NUMA= vm-guest

# Guests one after another (two cores: one at a time); fails when any did.
vm-check-all:
	rc=0; for t in vm-check vm-check-arm64 vm-check-arm64-4node vm-check-6.12; do \
		$(MAKE) $$t || rc=1; done; exit $$rc

# GCC 12.2 for aarch64 crashes vectorizing numa_split's fmax reduction
# ("internal compiler error: in vect_transform_reduction"); the arm64
# guest's copy is built without loop vectorization.
ifneq ($(filter aarch64-linux-gnu-gcc,$(CC)),)
$(B)/tests/numa/numa_split.o: CPPFLAGS_tests += -fno-tree-loop-vectorize
endif
