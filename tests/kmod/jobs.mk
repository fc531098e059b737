# tests/kmod/jobs_test, jobs_stress: the module's job broker with raw
# ioctls (VM only; on the host they exit 77 for want of /dev/syshax).
KMOD_JOBS_TESTS := $(B)/tests/kmod/jobs_test $(B)/tests/kmod/jobs_stress

$(KMOD_JOBS_TESTS): %: %.o
	$(CC) $(LDFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs cunit)

ALL	+= $(KMOD_JOBS_TESTS)
VM_BINS	+= $(KMOD_JOBS_TESTS)
