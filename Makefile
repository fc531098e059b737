# sysHAX top-level build.
#
# Each part of the tree adds itself through a fragment (<dir>/<name>.mk),
# included below; a fragment appends its outputs to ALL, its host test
# targets to CHECKS, its installed files to INSTALLS, and the binaries the
# VM suite runs to VM_BINS, and other files the guest needs (a daemon, a
# helper program) to VM_FILES; VM_MEMORYLESS_BINS run in a second, short
# guest whose third CPU sits on a NUMA node without memory.
#
#   make              userspace (library, daemon, tools, tests)
#   make kmod         syshax.ko against KDIR (C=1 runs sparse)
#   make kbuild-matrix  syshax.ko against every Debian headers package,
#                     amd64 and arm64 (kmod/kbuild.mk; make test: a subset)
#   make check        host tests
#   make san-check    host tests under ASan and UBSan (make SAN=1 check)
#   make check-aarch64  Arm kernels under qemu-aarch64-static
#   make vm-check     module tests in a QEMU guest running Debian's kernel
#                     (vm-check-arm64, -arm64-4node, -6.12: other guests;
#                     vm-check-all: every guest; tests/vm/vm.mk)
#   make install      (DESTDIR, PREFIX, LIBDIR...); make uninstall undoes it
#   make test         everything CI runs

PREFIX	?= /usr/local
DESTDIR	?=
CC	?= cc
AR	?= ar
PKG_CONFIG ?= pkg-config
B	:= build

CFLAGS	?= -O2 -g
WARN	:= -Wall -Wextra -Werror
# Flags every userspace object is built with; fragments add their own.
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -fPIC -I$(CURDIR)/uapi $(CFLAGS)
# make SAN=1: the sanitizer test build.
ifeq ($(SAN),1)
BASE_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
B := build-san
endif

# One kernel for the module and the guest of make vm-check: VM_KVER (an ABI
# name, default the version linux-image-$(VM_ARCH) names; VM_ARCH amd64 or
# arm64) chooses the headers make kmod builds against and the kernel the
# guest boots. KDIR alone still works for make kmod; without VM_KVER's
# headers: the running kernel's, else the newest Debian amd64 ones.
VM_ARCH ?= amd64
export VM_ARCH
ifeq ($(origin VM_KVER),undefined)
VM_KVER := $(shell VM_ARCH=$(VM_ARCH) tests/vm/kernel.sh --kver 2>/dev/null)
endif
export VM_KVER
KDIR ?= $(firstword $(wildcard /usr/src/linux-headers-$(VM_KVER)) \
		    $(wildcard /lib/modules/$(shell uname -r)/build) \
		    $(lastword $(sort $(wildcard /usr/src/linux-headers-*-amd64))))

ALL	:=
CHECKS	:=
INSTALLS :=
VM_BINS	:=
VM_MEMORYLESS_FILES :=
VM_FILES :=
VM_MEMORYLESS_BINS :=

.PHONY: all kmod kmod-clean check check-aarch64 vm-check test install uninstall clean
all:

# daemon/<part>/*.mk, tools/lib/*.mk and text/*.mk first: daemon/daemon.mk
# links the first's objects, tests and tools the others' libraries.
include $(sort $(wildcard daemon/*/*.mk tools/lib/*.mk text/*.mk))
include $(sort $(filter-out tools/lib/% text/%,\
	$(wildcard */*.mk tests/*/*.mk tools/*/*.mk)))

all: $(ALL)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(CPPFLAGS_$(firstword $(subst /, ,$*))) -MMD -MP -c -o $@ $<

-include $(shell find $(B) -name '*.d' -type f 2>/dev/null)

kmod:
	@test -d "$(KDIR)" || { echo "no kernel headers (KDIR=$(KDIR)): apt-get install linux-headers-amd64" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

kmod-clean:
	@test -d "$(KDIR)" && $(MAKE) -C $(KDIR) M=$(CURDIR) clean || true

check: $(CHECKS)

# The host tests again, built with ASan and UBSan in a folder of their own.
.PHONY: san-check
san-check:
	$(MAKE) SAN=1 B=$(B)-san check

# The parts one after another: the host suites and the Arm emulators
# with a job a CPU (on 2 CPUs check took 279 s and san-check 644 s one
# job at a time, 183 and 369 s so), the guests and the rest alone.
# TEST_JOBS=1: one at a time.
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test:
	$(MAKE) -j$(TEST_JOBS) check
	$(MAKE) -j$(TEST_JOBS) san-check
	$(MAKE) -j$(TEST_JOBS) check-aarch64
	$(MAKE) sparse-check dkms-check kbuild-check vm-check-all

install: $(INSTALLS)

# Removes what make install puts under the same DESTDIR, PREFIX and other
# path variables: installs into a staging folder, then deletes those paths.
UNINSTALL_STAGE = $(abspath $(B))/uninstall-stage
uninstall:
	rm -rf $(UNINSTALL_STAGE)
	$(MAKE) --no-print-directory -s install DESTDIR=$(UNINSTALL_STAGE) >/dev/null
	scripts/uninstall $(UNINSTALL_STAGE) "$(DESTDIR)"
	rm -rf $(UNINSTALL_STAGE)

clean: kmod-clean
	rm -rf build build-san
