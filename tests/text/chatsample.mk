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
