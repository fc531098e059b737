# tests/server/: syshax-serve end to end over HTTP on 127.0.0.1, against
# private syshaxds, compared with syshax-run and with llama.cpp through
# llama_compare --greedy (tests/llama; without the peer those cases say
# SKIP), on a random-weight model and the trained ones (serve_test.py says
# what).
.PHONY: check-syshax-serve
check-syshax-serve: $(B)/syshax-serve $(B)/syshax-run $(B)/syshaxd \
		$(LLAMA_CMP_BIN) $(TRAINED_FILES)
	timeout 900 python3 -u tests/server/serve_test.py $(B)/syshax-serve \
		$(B)/syshax-run $(B)/syshaxd $(LLAMA_CMP_BIN) \
		$(or $(SYSHAX_LLAMA_DIR),build/ggml) $(B)/models

CHECKS	+= check-syshax-serve
