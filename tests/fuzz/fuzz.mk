# tests/fuzz/: libFuzzer targets for the weights-file parsers, and for what
# a client sends the server and the tokenizer makes of it (text_fuzz.c).
#
#   make fuzz [FUZZ_SECS=60]   build with clang into $(B)/fuzz/ and run each
#                              target FUZZ_SECS seconds
#   make fuzz-corpus           rewrite the weights files' seeds
#                              (tests/fuzz/corpus/; text's are by hand)
#
# Not in CHECKS: CI does not run it. Each target works on its own copy of
# the seeds, $(B)/fuzz/corpus-<target>/, kept (and grown) between runs; a
# crash is saved as $(B)/fuzz/<target>-crash-* and fails the run.
FUZZ_CC		?= clang
FUZZ_SECS	?= 60
FUZZ_TARGETS	:= gguf safetensors text
FUZZ_FLAGS	:= -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I$(CURDIR)/daemon/model $(shell $(PKG_CONFIG) --cflags libcjson)
FUZZ_MODEL_SRC	:= $(addprefix daemon/model/,tfile.c gguf.c safetensors.c)

$(B)/fuzz/%_fuzz: tests/fuzz/%_fuzz.c $(FUZZ_MODEL_SRC) \
		daemon/model/tfile.h daemon/model/tfile_int.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_MODEL_SRC) \
		$(shell $(PKG_CONFIG) --libs libcjson)

# text_fuzz: libshxtext's sources, server/api.c and the long-piece
# vocabulary, all instrumented.
FUZZ_TEXT_SRC	:= $(sort $(wildcard text/*.c)) server/api.c \
	tests/text/long_vocab.c tools/lib/wfile.c

# text_fuzz runs on the long-piece vocabulary, then on each real one
# tests/text/tok_compare wrote (make check-tokenizer, after
# tools/fetch-vocab.sh).
FUZZ_VOCABS	:= $(wildcard $(B)/tests/text/*.gguf)

$(B)/fuzz/text_fuzz: tests/fuzz/text_fuzz.c $(FUZZ_MODEL_SRC) \
		$(FUZZ_TEXT_SRC) $(wildcard text/*.h) server/api.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -I$(CURDIR)/daemon -I$(CURDIR)/text \
		-iquote $(CURDIR)/server -I$(CURDIR)/tests/text \
		-I$(CURDIR)/tools/lib \
		$(shell $(PKG_CONFIG) --cflags libpcre2-8) -o $@ $< \
		$(FUZZ_MODEL_SRC) $(FUZZ_TEXT_SRC) \
		$(shell $(PKG_CONFIG) --libs libcjson libpcre2-8) -lm

.PHONY: fuzz fuzz-corpus
fuzz: $(FUZZ_TARGETS:%=$(B)/fuzz/%_fuzz)
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(B)/fuzz/corpus-$$t; \
		cp tests/fuzz/corpus/$$t/* $(B)/fuzz/corpus-$$t/; \
		vocabs=-; [ $$t != text ] || vocabs="- $(FUZZ_VOCABS)"; \
		for v in $$vocabs; do \
		echo "fuzz: $$t for $(FUZZ_SECS) s $${v#-}"; \
		SHX_FUZZ_VOCAB=$${v#-} $(B)/fuzz/$${t}_fuzz \
			-max_total_time=$(FUZZ_SECS) \
			-dict=tests/fuzz/$$t.dict -artifact_prefix=$(B)/fuzz/$$t- \
			-print_final_stats=1 $(B)/fuzz/corpus-$$t; \
		done; \
	done

# mkcorpus writes the seeds with tools/lib/wfile.h ($(SHXTOOLS_A)).
$(B)/tests/fuzz/mkcorpus.o: CPPFLAGS_tests += -I$(CURDIR)/tools/lib

$(B)/tests/fuzz/mkcorpus: $(B)/tests/fuzz/mkcorpus.o $(SHXTOOLS_A) \
		$(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $^ -lm

fuzz-corpus: $(B)/tests/fuzz/mkcorpus
	mkdir -p $(FUZZ_TARGETS:%=tests/fuzz/corpus/%)
	$(B)/tests/fuzz/mkcorpus tests/fuzz/corpus
