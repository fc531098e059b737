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
