# tests/top/: syshax-top against a private syshaxd under a NOP load
# (top_load), driven in tmux (top_test.sh); --json checked against the
# stats calls (top_json_check) and --prometheus by a small parser.
TOP_TEST_CPP := -I$(CURDIR)/runtime/include \
	$(shell $(PKG_CONFIG) --cflags libcjson)
$(B)/tests/top/%.o: CPPFLAGS_tests += $(TOP_TEST_CPP)

$(B)/tests/top/top_load: $(B)/tests/top/top_load.o $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ -pthread

$(B)/tests/top/top_json_check: $(B)/tests/top/top_json_check.o $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs libcjson) \
		-pthread

ALL	+= $(B)/tests/top/top_load $(B)/tests/top/top_json_check
CHECKS	+= check-top

.PHONY: check-top
check-top: $(B)/syshax-top $(B)/syshaxd $(B)/tests/top/top_load \
		$(B)/tests/top/top_json_check
	shellcheck tests/top/top_test.sh
	tests/top/top_test.sh $(B)
