# tests/unit/bench_ut: syshax-bench's helpers (timing, team, machine limits);
# bench_kernels_ut: the kernels subcommand end to end, peers left out.
BENCH_UT := $(B)/tests/unit/bench_ut
BENCH_KERNELS_UT := $(B)/tests/unit/bench_kernels_ut

$(BENCH_UT): $(B)/tests/unit/bench_ut.o $(addprefix $(B)/tools/bench/,\
		team.o timing.o machine.o) $(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit) -lm \
		-pthread

$(BENCH_KERNELS_UT): $(B)/tests/unit/bench_kernels_ut.o \
		$(addprefix $(B)/tools/bench/,kernels.o kernels_report.o \
		ours.o ggml_peer.o dnnl_peer.o team.o timing.o machine.o) \
		$(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit) \
		-ldl -lm -pthread

$(B)/tests/unit/bench_ut.o $(B)/tests/unit/bench_kernels_ut.o: \
	CPPFLAGS_tests += -I$(CURDIR)/tools/bench

.PHONY: check-bench
check-bench: $(BENCH_UT) $(BENCH_KERNELS_UT)
	$(BENCH_UT)
	$(BENCH_KERNELS_UT)

ALL	+= $(BENCH_UT) $(BENCH_KERNELS_UT)
CHECKS	+= check-bench
