# tests/text/: the chat templates and the sampler (text/chat.c,
# text/sample.c, text/stop.c). sample_ut includes text/sample.c to reach
# the candidate set it keeps.
SAMPLE_UT := $(B)/tests/text/sample_ut

$(SAMPLE_UT): $(SAMPLE_UT).o $(SHXTEXT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXTEXT_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit)

.PHONY: check-sample
check-sample: $(SAMPLE_UT)
	timeout 300 $(SAMPLE_UT)

ALL	+= $(SAMPLE_UT)
CHECKS	+= check-sample

# chat_ut: the templates against llama.cpp's llama_chat_apply_template
# (build/ggml, or SYSHAX_LLAMA_DIR); without libllama a loud SKIP (77).
CHAT_UT := $(B)/tests/text/chat_ut

$(CHAT_UT).o: CPPFLAGS_tests += -I$(CURDIR)/text -I$(CURDIR)/tools/lib

# The peer's object alone, not $(SHXTOOLS_A): nothing else of it is needed.
$(CHAT_UT): $(CHAT_UT).o $(SHXTEXT_A) $(B)/tools/lib/llama_peer.o
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXTEXT_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit) -ldl

.PHONY: check-chat
check-chat: $(CHAT_UT)
	@timeout 120 $(CHAT_UT) $(SYSHAX_LLAMA_DIR) || \
		{ rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }

ALL	+= $(CHAT_UT)
CHECKS	+= check-chat
