# tools/check/: syshax-check, setup diagnostics (docs/check.md). Static
# libsyshax-rt and libshxk.a (the CPU kernel dispatch syshaxd uses), cJSON
# for --json; it also runs in the VM guest, against the module.
CHECK_SRCS := $(sort $(wildcard tools/check/*.c))

$(B)/tools/check/%.o: CPPFLAGS_tools += $(shell $(PKG_CONFIG) --cflags libcjson)

$(B)/syshax-check: $(CHECK_SRCS:%.c=$(B)/%.o) $(SHRT_A) $(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $(CHECK_SRCS:%.c=$(B)/%.o) $(SHRT_A) \
		$(B)/libshxk.a $(shell $(PKG_CONFIG) --libs libcjson) \
		-lpthread -lm

ALL	 += $(B)/syshax-check
VM_FILES += $(B)/syshax-check
INSTALLS += install-syshax-check

.PHONY: install-syshax-check
install-syshax-check: $(B)/syshax-check
	install -D -m 0755 $< $(DESTDIR)$(PREFIX)/sbin/syshax-check
	install -D -m 0644 docs/man/syshax-check.8 \
		$(DESTDIR)$(PREFIX)/share/man/man8/syshax-check.8

# On the host (no module): the module line FAILs with its fix, every other
# line is still printed, exit 1; --json has every field; a private syshaxd
# makes the daemon lines OK, also found as the system socket by nobody.
.PHONY: check-syshax-check
check-syshax-check: $(B)/syshax-check $(B)/syshaxd
	shellcheck tools/check/check-test.sh
	tools/check/check-test.sh $(B)/syshax-check $(B)/syshaxd
CHECKS += check-syshax-check

# In the guest, with the module: the module line OK, UAPI equal.
VM_BINS += tests/vm/vm-check-tool.sh
