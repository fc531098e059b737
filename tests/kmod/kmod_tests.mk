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

ALL	+= $(KMOD_TESTS)
VM_BINS	+= $(KMOD_TESTS)
