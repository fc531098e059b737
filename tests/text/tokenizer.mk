# tests/text/: the tokenizer (text/tokenizer.h).
# tok_compare: against llama.cpp's on the real vocabularies
# tools/fetch-vocab.sh puts in build/vocab (Qwen3, GPT-2, Llama 3, LLaMA);
# without the peer or the vocabularies it says SKIP and exits 77.
TOK_CMP_BIN := $(B)/tests/text/tok_compare
TOK_CMP_OBJS := $(addprefix $(B)/tests/text/,tok_compare.o vocab_src.o)

$(TOK_CMP_OBJS): CPPFLAGS_tests += -I$(CURDIR)/text -I$(CURDIR)/tools/lib \
	$(shell $(PKG_CONFIG) --cflags libcjson libpcre2-8)

$(TOK_CMP_BIN): $(TOK_CMP_OBJS) $(B)/tools/lib/llama_peer.o \
		$(B)/tools/lib/wfile.o $(SHXTEXT_A) $(SHXD_MODEL_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXTEXT_LIBS) $(SHXD_MODEL_LIBS) -ldl -pthread

.PHONY: check-tokenizer
check-tokenizer: $(TOK_CMP_BIN)
	@timeout 600 $(TOK_CMP_BIN) build/vocab \
		$(or $(SYSHAX_LLAMA_DIR),build/ggml) $(B)/tests/text || \
		{ rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }

ALL	+= $(TOK_CMP_BIN)
CHECKS	+= check-tokenizer

# tok_ut: the API on small generated vocabularies, no peer needed.
TOK_UT := $(B)/tests/text/tok_ut

LONG_VOCAB_O := $(B)/tests/text/long_vocab.o

$(TOK_UT).o $(LONG_VOCAB_O): CPPFLAGS_tests += -I$(CURDIR)/text \
	-I$(CURDIR)/tools/lib

$(TOK_UT): $(TOK_UT).o $(LONG_VOCAB_O) $(B)/tools/lib/wfile.o $(SHXTEXT_A) \
		$(SHXD_MODEL_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXTEXT_LIBS) $(SHXD_MODEL_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit) -pthread

.PHONY: check-tok-ut
check-tok-ut: $(TOK_UT)
	timeout 60 $(TOK_UT)

ALL	+= $(TOK_UT)
CHECKS	+= check-tok-ut
