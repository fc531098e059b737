# tests/unit/model_parse_ut: the weights-file parsers (daemon/model), with
# files written by tools/lib/wfile.c.
MODEL_PARSE_UT := $(B)/tests/unit/model_parse_ut

$(MODEL_PARSE_UT).o: CPPFLAGS_tests += -I$(CURDIR)/daemon/model \
	-I$(CURDIR)/tools/lib

$(MODEL_PARSE_UT): $(MODEL_PARSE_UT).o $(SHXTOOLS_A) $(B)/libshxk.a \
		$(SHXD_MODEL_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXD_MODEL_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit) -lm

.PHONY: check-model-parse
check-model-parse: $(MODEL_PARSE_UT)
	timeout 120 $(MODEL_PARSE_UT)

ALL	+= $(MODEL_PARSE_UT)
CHECKS	+= check-model-parse
