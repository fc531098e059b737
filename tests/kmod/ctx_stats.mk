# tests/kmod/ctx_stats_test: CTX_STATS on the module with raw ioctls (VM
# only: on the host it exits 77 for want of /dev/syshax).
KMOD_CTX_STATS_TEST := $(B)/tests/kmod/ctx_stats_test

$(KMOD_CTX_STATS_TEST): %: %.o
	$(CC) $(LDFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs cunit)

ALL	+= $(KMOD_CTX_STATS_TEST)
VM_BINS	+= $(KMOD_CTX_STATS_TEST)
