# tests/kmod/: the module's CUnit suites, run in the VM by make vm-check
# (they exit 77, SKIP, where /dev/syshax is missing).
KMOD_TESTS := $(B)/tests/kmod/buf_test $(B)/tests/kmod/dmabuf_test \
	      $(B)/tests/kmod/vfio_test
CPPFLAGS_tests += $(shell $(PKG_CONFIG) --cflags cunit libdrm)

$(B)/tests/kmod/buf_test: $(B)/tests/kmod/buf_test.o
	$(CC) $(LDFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs cunit numa) -lhugetlbfs -pthread

$(B)/tests/kmod/dmabuf_test: $(B)/tests/kmod/dmabuf_test.o
	$(CC) $(LDFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs cunit libdrm)

$(B)/tests/kmod/vfio_test: $(B)/tests/kmod/vfio_test.o
	$(CC) $(LDFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs cunit)

# limits_test: per-user memlock, pinned cap and job limit (drops to uids).
# numa_test: BUF_ALLOC on a CPU of a memoryless NUMA node, which only the
# second guest of make vm-check has (VM_MEMORYLESS_BINS, VM_NUMA=memoryless).
# ring_test: the shared rings with raw ioctls and mmap.
KMOD_LIMITS_TEST := $(B)/tests/kmod/limits_test
KMOD_NUMA_TEST := $(B)/tests/kmod/numa_test
KMOD_RING_TEST := $(B)/tests/kmod/ring_test

$(KMOD_LIMITS_TEST) $(KMOD_NUMA_TEST) $(KMOD_RING_TEST): %: %.o
	$(CC) $(LDFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs cunit)

ALL	+= $(KMOD_TESTS) $(KMOD_LIMITS_TEST) $(KMOD_NUMA_TEST) $(KMOD_RING_TEST)
VM_BINS	+= $(KMOD_TESTS) $(KMOD_LIMITS_TEST) $(KMOD_RING_TEST)
VM_MEMORYLESS_BINS += $(KMOD_NUMA_TEST)

# tests/kmod/compat32: a 32-bit x86 program buf_test runs in the VM to see
# 32-bit callers refused. No libc (no i386 libc is installed): freestanding,
# raw system calls; uapi/syshax.h's asm/ headers are the same for i386.
ifneq ($(filter x86_64-%,$(shell $(CC) -dumpmachine)),)
KMOD_COMPAT32 := $(B)/tests/kmod/compat32

$(KMOD_COMPAT32): tests/kmod/compat32.c uapi/syshax.h
	@mkdir -p $(dir $@)
	$(CC) -m32 -std=c11 $(WARN) -O2 -ffreestanding -nostdlib -static \
		-fno-pic -no-pie -fno-stack-protector -I$(CURDIR)/uapi \
		-idirafter /usr/include/x86_64-linux-gnu -o $@ $<

ALL	+= $(KMOD_COMPAT32)
VM_FILES += $(KMOD_COMPAT32)
endif
