# tests/llama/: the llama.cpp peer (tools/lib/llama_peer.h).
#   make check-llama-smoke LLAMA_SMOKE_MODEL=m.gguf [SYSHAX_LLAMA_DIR=dir]
# A developer check, not in CHECKS: it needs tools/fetch-ggml.sh's
# libraries (default build/ggml) and a GGUF model; without them it says
# SKIP and exits 77, which does not fail make.
LLAMA_SMOKE_BIN := $(B)/tests/llama/llama_smoke

$(B)/tests/llama/llama_smoke.o: CPPFLAGS_tests += -I$(CURDIR)/tools/lib

# The peer's object alone, not $(SHXTOOLS_A): nothing else of it is needed.
$(LLAMA_SMOKE_BIN): $(B)/tests/llama/llama_smoke.o $(B)/tools/lib/llama_peer.o
	$(CC) $(LDFLAGS) -o $@ $^ -ldl -lm

.PHONY: check-llama-smoke
check-llama-smoke: $(LLAMA_SMOKE_BIN)
	@$(LLAMA_SMOKE_BIN) $(LLAMA_SMOKE_MODEL) || { rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }

# The engine's whole decode steps against llama.cpp on the same models and
# token ids (in CHECKS: CI fetches the peer; without it, a loud SKIP).
LLAMA_CMP_BIN := $(B)/tests/llama/llama_compare

$(B)/tests/llama/llama_compare.o: CPPFLAGS_tests += -I$(CURDIR)/tools/lib \
	-I$(CURDIR)/kernels -I$(CURDIR)/runtime/include

$(LLAMA_CMP_BIN): $(B)/tests/llama/llama_compare.o $(SHXTOOLS_A) \
		$(B)/libshxk.a $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl -lm -pthread

.PHONY: check-llama
check-llama: $(LLAMA_CMP_BIN) $(B)/syshaxd
	@timeout 600 $(LLAMA_CMP_BIN) $(B)/syshaxd $(SYSHAX_LLAMA_DIR) || \
		{ rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }

# The trained models (models/models.mk): perplexity of the held-out ids
# and greedy tokens, every type (docs/model-train.md).
.PHONY: check-llama-trained
check-llama-trained: $(LLAMA_CMP_BIN) $(B)/syshaxd $(TRAINED_FILES)
	@timeout 1200 $(LLAMA_CMP_BIN) $(B)/syshaxd \
		$(or $(SYSHAX_LLAMA_DIR),build/ggml) $(B)/models || \
		{ rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }

ALL	+= $(LLAMA_CMP_BIN)
CHECKS	+= check-llama check-llama-trained
