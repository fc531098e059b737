# tests/unit/genmodel_ut: random-weight models (tools/lib/genmodel.c, which
# it includes) read back with the daemon's GGUF parser, and the streaming
# GGUF writer (tools/lib/wfile.c).
GENMODEL_UT := $(B)/tests/unit/genmodel_ut

$(GENMODEL_UT).o: CPPFLAGS_tests += -I$(CURDIR)/daemon/model \
	-I$(CURDIR)/tools/lib

$(GENMODEL_UT): $(GENMODEL_UT).o $(SHXTOOLS_A) $(B)/libshxk.a \
		$(SHXD_MODEL_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXD_MODEL_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit) -lm

.PHONY: check-genmodel
check-genmodel: $(GENMODEL_UT)
	timeout 120 $(GENMODEL_UT)

ALL	+= $(GENMODEL_UT)
CHECKS	+= check-genmodel
