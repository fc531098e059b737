# tools/bench/: syshax-bench, one subcommand per file (see main.c).
# Peers (ggml, oneDNN) are dlopen'ed at run time: nothing extra to link;
# a subcommand's fragment adds the libraries it links to BENCH_LIBS.

CPPFLAGS_tools += -I$(CURDIR)/kernels

BENCH_SRCS := $(sort $(wildcard tools/bench/*.c))

# ppl.c and serve.c read the model's vocabulary with libshxtext; serve.c's
# clients stream over libcurl (libcurl4-openssl-dev): a build without it
# (the arm64 guest's cross build) has no serve subcommand.
BENCH_DEPS := $(SHXTEXT_A) $(SHXD_MODEL_OBJS) $(SHXTOOLS_A) $(B)/libshxk.a
BENCH_LIBS += $(SHXTEXT_LIBS) $(SHXD_MODEL_LIBS)
$(B)/tools/bench/ppl.o $(B)/tools/bench/serve.o: \
	CPPFLAGS_tools += -I$(CURDIR)/text
ifeq ($(shell $(PKG_CONFIG) --exists libcurl && echo y),y)
BENCH_LIBS += $(shell $(PKG_CONFIG) --libs libcurl libcjson)
$(B)/tools/bench/main.o: CPPFLAGS_tools += -DBENCH_SERVE
CHECKS += check-bench-serve
$(B)/tools/bench/serve.o: \
	CPPFLAGS_tools += $(shell $(PKG_CONFIG) --cflags libcurl libcjson)
else
BENCH_SRCS := $(filter-out tools/bench/serve.c,$(BENCH_SRCS))
endif

$(B)/syshax-bench: $(BENCH_SRCS:%.c=$(B)/%.o) $(BENCH_DEPS)
	$(CC) $(LDFLAGS) -o $@ $^ $(BENCH_LIBS) -ldl -lpthread -lm

ALL += $(B)/syshax-bench
INSTALLS += install-syshax-bench

.PHONY: install-syshax-bench
install-syshax-bench: $(B)/syshax-bench
	install -D -m 0755 $< $(DESTDIR)$(PREFIX)/bin/syshax-bench
	install -D -m 0644 docs/man/syshax-bench.1 \
		$(DESTDIR)$(PREFIX)/share/man/man1/syshax-bench.1

# syshax-bench ffn end to end on a tiny layer (a private syshaxd): every
# figure printed, ATTN_DECODE's output equal to the bare kernel's (both run
# the same kernel on the same heads), polling passed through; a usage
# error is status 2.
.PHONY: check-bench-ffn
check-bench-ffn: $(B)/syshax-bench $(B)/syshaxd
	out=$$(timeout 120 $(B)/syshax-bench ffn --hidden 64 --ff 128 \
		--rounds 3 --seconds 0.2 --json 2>/dev/null) && \
	for k in job_us exec_us bare_us overhead tps_1 tps_4 tps_16 \
		x16_vs_1 tokens_per_run_16; do \
		echo "$$out" | grep -q "\"$$k\": -\{0,1\}[0-9]" || \
			{ echo "check-bench-ffn: no $$k in: $$out"; exit 1; }; \
	done && test $$(echo "$$out" | grep -c '"type"') -eq 2 && \
	for k in job_us exec_us bare_us ratio; do \
		echo "$$out" | grep -q "\"attn\": {.*\"$$k\": [0-9]" || \
			{ echo "check-bench-ffn: no attn $$k in: $$out"; exit 1; }; \
	done && echo "$$out" | grep -q '"max_diff": 0[,}]'
	out=$$(timeout 120 $(B)/syshax-bench ffn --type attn --rounds 3 \
		--poll-us 2000 --json 2>/dev/null) && \
	echo "$$out" | grep -q '"poll_us": 2000' && \
	echo "$$out" | grep -q '"max_diff": 0[,}]' && \
	test $$(echo "$$out" | grep -c '"type"') -eq 0
	$(B)/syshax-bench ffn --type q5 >/dev/null 2>&1; test $$? -eq 2
	$(B)/syshax-bench ffn --poll-us 2000000 >/dev/null 2>&1; test $$? -eq 2
CHECKS += check-bench-ffn

# syshax-bench e2e on the tiny model (a private syshaxd; the llama.cpp peer
# from build/ggml or SYSHAX_LLAMA_DIR): every field of every row printed,
# ours as numbers, llama.cpp's as numbers or null when the peer is absent,
# each side's load time, the read bandwidth at the start and around the
# batch-1 row, the rounds asked for; a usage error is status 2.
E2E_OURS := read_gbps weight_bytes step_bytes roofline_tps ours_roof_pct \
	ours_load_s
E2E_ROWS := ours_tps ours_engine
E2E_PEER := llama_tps ratio
.PHONY: check-bench-e2e
check-bench-e2e: $(B)/syshax-bench $(B)/syshaxd
	out=$$(timeout 300 $(B)/syshax-bench e2e --preset tiny --type q8_0 \
		--seqs 1,2 --steps 4 --prompt 16 --context 40 --rounds 2 \
		--models $(B)/models \
		$(if $(SYSHAX_LLAMA_DIR),--llama $(SYSHAX_LLAMA_DIR)) \
		--json 2>/dev/null) && \
	num='-\{0,1\}[0-9]' && \
	for k in $(E2E_OURS); do \
		echo "$$out" | grep -q "\"$$k\": $$num" || \
			{ echo "check-bench-e2e: no $$k in: $$out"; exit 1; }; \
	done && \
	{ test $$(echo "$$out" | grep -o "\"read_gbps\": $$num" | wc -l) -eq 2 || \
		{ echo "check-bench-e2e: no read_gbps at the start and around batch 1: $$out"; exit 1; }; } && \
	for k in llama llama_read_gbps llama_roof_pct llama_load_s; do \
		echo "$$out" | grep -q "\"$$k\": \(null\|\"\|$$num\)" || \
			{ echo "check-bench-e2e: no $$k in: $$out"; exit 1; }; \
	done && \
	for k in $(E2E_ROWS); do \
		test $$(echo "$$out" | grep -o "\"$$k\": $$num" | wc -l) -eq 3 || \
			{ echo "check-bench-e2e: $$k not in 3 rows: $$out"; exit 1; }; \
	done && \
	for k in $(E2E_PEER); do \
		test $$(echo "$$out" | grep -o "\"$$k\": \(null\|$$num\)" | \
			wc -l) -eq 3 || \
			{ echo "check-bench-e2e: $$k not in 3 rows: $$out"; exit 1; }; \
	done && \
	{ echo "$$out" | grep -q '"cpu": "[^"]' || \
		{ echo "check-bench-e2e: no cpu in: $$out"; exit 1; }; } && \
	{ echo "$$out" | grep -q '"context": 40, "rounds": 2,' || \
		{ echo "check-bench-e2e: no context 40, rounds 2 in: $$out"; exit 1; }; }
	$(B)/syshax-bench e2e --context 0 >/dev/null 2>&1; test $$? -eq 2
	$(B)/syshax-bench e2e --context 4097 >/dev/null 2>&1; test $$? -eq 2
	$(B)/syshax-bench e2e --rounds 0 >/dev/null 2>&1; test $$? -eq 2
	$(B)/syshax-bench e2e --rounds 17 >/dev/null 2>&1; test $$? -eq 2
	$(B)/syshax-bench e2e --preset 13b >/dev/null 2>&1; test $$? -eq 2
	$(B)/syshax-bench e2e --shape llama3-70b >/dev/null 2>&1; test $$? -eq 2
CHECKS += check-bench-e2e

# syshax-bench serve on the tiny model (a syshax-serve it starts, with a
# private syshaxd; the llama.cpp peer from build/ggml): a row of ours per
# client count with every request's tokens and none failed, llama.cpp's
# rows where the peer loads; usage errors are status 2.
.PHONY: check-bench-serve
check-bench-serve: $(B)/syshax-bench $(B)/syshax-serve $(B)/syshaxd \
		$(B)/models/serve-tiny-q8_0.gguf
	out=$$(timeout 300 $(B)/syshax-bench serve \
		--model $(B)/models/serve-tiny-q8_0.gguf --clients 1,3 \
		--prompt 24 --max-tokens 8 \
		$(if $(SYSHAX_LLAMA_DIR),--llama $(SYSHAX_LLAMA_DIR)) 2>&1) && \
	echo "$$out" | grep -Eq '^ +1  ours +[0-9.]+ +8 .* 0$$' && \
	echo "$$out" | grep -Eq '^ +3  ours +[0-9.]+ +24 .* 0$$' && \
	{ echo "$$out" | grep -q 'llama.cpp: NOT MEASURED' || \
	  echo "$$out" | grep -Eq '^ +3  llama.cpp +[0-9.]+ +24 '; } || \
		{ echo "check-bench-serve: $$out"; exit 1; }
	$(B)/syshax-bench serve >/dev/null 2>&1; test $$? -eq 2
	$(B)/syshax-bench serve --model x --clients 0 >/dev/null 2>&1; test $$? -eq 2
	$(B)/syshax-bench serve --help | grep -q '^usage: syshax-bench serve'

# The tiny model of check-bench-serve.
$(B)/models/serve-tiny-q8_0.gguf: $(B)/syshax-run
	@mkdir -p $(@D)
	$(B)/syshax-run --gen-model $@.tmp --arch llama --preset tiny --type q8_0
	mv $@.tmp $@

# syshax-bench ppl on the trained toy model's held-out text (the text, so
# the tokenizer is in the path too), 8 chunks: ours within 0.2 % of
# llama.cpp's where the peer loads, and far below the uniform bound (2048);
# usage errors are status 2.
.PHONY: check-bench-ppl
check-bench-ppl: $(B)/syshax-bench $(B)/syshaxd $(B)/models/kjv-llama-q8_0.gguf
	out=$$(timeout 300 $(B)/syshax-bench ppl \
		--model $(B)/models/kjv-llama-q8_0.gguf --text models/heldout.txt \
		--chunks 8 $(if $(SYSHAX_LLAMA_DIR),--llama $(SYSHAX_LLAMA_DIR)) \
		2>&1) && echo "$$out" | awk ' \
		/^ours / { o = $$3 } /^llama.cpp / && $$3 != "measured" { l = $$3 } \
		END { if (!o || o >= 512) exit 1; \
		      if (l && (o / l - 1 > 0.002 || l / o - 1 > 0.002)) exit 1 }' || \
		{ echo "check-bench-ppl: $$out"; exit 1; }
	$(B)/syshax-bench ppl --model x >/dev/null 2>&1; test $$? -eq 2
	$(B)/syshax-bench ppl --model x --text a --ids b >/dev/null 2>&1; test $$? -eq 2
CHECKS += check-bench-ppl
