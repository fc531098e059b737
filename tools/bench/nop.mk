# tools/bench/nop.c: syshax-bench nop talks to a backend through the
# library (static: the bench also runs in the VM guest), and measures
# io_uring NOPs with liburing (Debian's liburing-dev) as the anchor; built
# without liburing the io_uring rows say n/a.
CPPFLAGS_tools += -I$(CURDIR)/runtime/include -I$(CURDIR)/tools
$(B)/syshax-bench: $(SHRT_A)
VM_FILES += $(B)/syshax-bench

ifeq ($(shell $(PKG_CONFIG) --exists liburing && echo y),y)
$(B)/tools/bench/nop.o: CPPFLAGS_tools += -DSYSHAX_BENCH_URING \
	$(shell $(PKG_CONFIG) --cflags liburing)
BENCH_LIBS += $(shell $(PKG_CONFIG) --libs liburing)
else
$(info tools/bench/nop.mk: no liburing (apt-get install liburing-dev): syshax-bench nop without its io_uring rows)
endif

# syshax-bench nop on its old path and the io_uring anchor (a private
# syshaxd): every row's figures printed, as numbers or, for a path that is
# not there, null with the reason; a usage error is status 2. No timing is
# checked: the figures are the benchmark's, not a test's.
.PHONY: check-bench-nop
check-bench-nop: $(B)/syshax-bench $(B)/syshaxd
	out=$$(timeout 120 $(B)/syshax-bench nop --backend userspace \
		--mode socket --rounds 200 --json 2>/dev/null) && \
	test $$(echo "$$out" | grep -c '"p50_us": [0-9]') -eq 2 || \
		{ echo "check-bench-nop: socket rows: $$out"; exit 1; }
	out=$$(timeout 60 $(B)/syshax-bench nop --backend io_uring \
		--rounds 200 --json 2>/dev/null) && \
	test $$(echo "$$out" | grep -c \
		'"p50_us": \([0-9]\|null.*"na": "\)') -eq 4 || \
		{ echo "check-bench-nop: io_uring rows: $$out"; exit 1; }
	$(B)/syshax-bench nop --mode rings >/dev/null 2>&1; test $$? -eq 2
CHECKS += check-bench-nop
