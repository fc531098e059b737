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

# api_ut: server/api.c's JSON on a vocabulary of long pieces, no server.
API_UT := $(B)/tests/server/api_ut

$(API_UT).o: CPPFLAGS_tests += -iquote $(CURDIR)/server -I$(CURDIR)/text \
	$(shell $(PKG_CONFIG) --cflags libcjson)

$(API_UT): $(API_UT).o $(B)/server/api.o $(B)/tests/text/long_vocab.o \
		$(B)/tools/lib/wfile.o $(SHXTEXT_A) $(SHXD_MODEL_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXTEXT_LIBS) $(SHXD_MODEL_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit libcjson)

.PHONY: check-api-ut
check-api-ut: $(API_UT)
	timeout 60 $(API_UT)

ALL	+= $(API_UT)
CHECKS	+= check-api-ut
