# tests/unit/serve_*_ut: syshax-serve's parts alone.
$(B)/tests/unit/serve_kvblocks_ut.o $(B)/tests/unit/serve_prefix_ut.o: \
	CPPFLAGS_tests += -I$(CURDIR)/server

$(B)/tests/unit/serve_kvblocks_ut: $(B)/tests/unit/serve_kvblocks_ut.o \
		$(B)/server/kvblocks.o
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit)

$(B)/tests/unit/serve_prefix_ut: $(B)/tests/unit/serve_prefix_ut.o \
		$(B)/server/prefix.o $(B)/server/kvblocks.o
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit)

.PHONY: check-serve-unit
check-serve-unit: $(B)/tests/unit/serve_kvblocks_ut $(B)/tests/unit/serve_prefix_ut
	$(B)/tests/unit/serve_kvblocks_ut
	$(B)/tests/unit/serve_prefix_ut

ALL	+= $(B)/tests/unit/serve_kvblocks_ut $(B)/tests/unit/serve_prefix_ut
CHECKS	+= check-serve-unit
