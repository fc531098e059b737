# tests/kmod/jobs_test: the module's job broker with raw ioctls (VM only;
# on the host it exits 77 for want of /dev/syshax).
$(B)/tests/kmod/jobs_test: $(B)/tests/kmod/jobs_test.o
	$(CC) $(LDFLAGS) -o $@ $^ -lcunit

ALL	+= $(B)/tests/kmod/jobs_test
VM_BINS	+= $(B)/tests/kmod/jobs_test
