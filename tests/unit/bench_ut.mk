# tests/unit/bench_ut: syshax-bench's helpers (timing, team, machine limits).
BENCH_UT := $(B)/tests/unit/bench_ut

$(BENCH_UT): $(B)/tests/unit/bench_ut.o $(addprefix $(B)/tools/bench/,\
		team.o timing.o machine.o)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit) -pthread

$(B)/tests/unit/bench_ut.o: CPPFLAGS_tests += -I$(CURDIR)/tools/bench

.PHONY: check-bench
check-bench: $(BENCH_UT)
	$(BENCH_UT)

ALL	+= $(BENCH_UT)
CHECKS	+= check-bench
