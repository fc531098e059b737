# text/: what turns a model's token ids into a conversation -> $(B)/libshxtext.a:
# the tokenizer read from a GGUF's tokenizer.ggml.* keys (tokenizer.h), chat
# templates (chat.h) and the sampler (sample.h). syshax-run, syshax-serve and
# the Python package link this one library; nothing of it lives in syshaxd.
# Read with daemon/*/*.mk and tools/lib/*.mk, before the other fragments, so
# that each can name $(SHXTEXT_A) among a rule's prerequisites.
# Link with $(SHXTEXT_LIBS) after it.
SHXTEXT_SRCS := $(sort $(wildcard text/*.c))
SHXTEXT_A := $(B)/libshxtext.a
CPPFLAGS_text += -I$(CURDIR)/text -I$(CURDIR)/daemon \
	$(shell $(PKG_CONFIG) --cflags libpcre2-8)
SHXTEXT_LIBS := $(shell $(PKG_CONFIG) --libs libpcre2-8) -lm

$(SHXTEXT_A): $(SHXTEXT_SRCS:%.c=$(B)/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

ALL += $(SHXTEXT_A)
