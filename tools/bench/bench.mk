# tools/bench/: syshax-bench, one subcommand per file (see main.c).
# Peers (ggml, oneDNN) are dlopen'ed at run time: nothing extra to link.

CPPFLAGS_tools += -I$(CURDIR)/kernels

BENCH_SRCS := $(sort $(wildcard tools/bench/*.c))

$(B)/syshax-bench: $(BENCH_SRCS:%.c=$(B)/%.o) $(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $^ -ldl -lpthread -lm

ALL += $(B)/syshax-bench
INSTALLS += install-syshax-bench

.PHONY: install-syshax-bench
install-syshax-bench: $(B)/syshax-bench
	install -D -m 0755 $< $(DESTDIR)$(PREFIX)/bin/syshax-bench
	install -D -m 0644 docs/man/syshax-bench.1 \
		$(DESTDIR)$(PREFIX)/share/man/man1/syshax-bench.1
