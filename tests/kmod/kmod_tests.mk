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
KMOD_LIMITS_TEST := $(B)/tests/kmod/limits_test
KMOD_NUMA_TEST := $(B)/tests/kmod/numa_test

$(KMOD_LIMITS_TEST) $(KMOD_NUMA_TEST): %: %.o
	$(CC) $(LDFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs cunit)

ALL	+= $(KMOD_TESTS) $(KMOD_LIMITS_TEST) $(KMOD_NUMA_TEST)
VM_BINS	+= $(KMOD_TESTS) $(KMOD_LIMITS_TEST)
VM_MEMORYLESS_BINS += $(KMOD_NUMA_TEST)
