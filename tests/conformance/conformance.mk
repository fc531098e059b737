# tests/conformance/: one suite, run against both backends.
#   host: make check  -> run-host.sh starts a syshaxd broker, the suite its
#                        own engine (userspace backend)
#   VM:   make vm-check -> the suite runs in the guest against /dev/syshax
#                        and starts /bin/syshaxd --engine-only
CONF_SRCS := $(sort $(wildcard tests/conformance/*.c))
CONF_OBJS := $(CONF_SRCS:%.c=$(B)/%.o)
CONF_BIN  := $(B)/tests/conformance/conformance

# tools/beside.h: finds the syshaxd built with the suite.
CPPFLAGS_tests += -I$(CURDIR)/runtime/include -I$(CURDIR)/tools
# runtime/src/hmap.h: the library's fault hook (the suite links it static).
$(B)/tests/conformance/engine_side.o: CPPFLAGS_tests += -I$(CURDIR)/runtime/src

# Static library: the same binary runs in the VM guest.
$(CONF_BIN): $(CONF_OBJS) $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $(CONF_OBJS) $(SHRT_A) \
		$(shell $(PKG_CONFIG) --libs cunit) -pthread

.PHONY: check-conformance
# Twice: the old path (a socket message per call) and the shared rings.
check-conformance: $(CONF_BIN) $(B)/syshaxd
	SYSHAX_RINGS=0 tests/conformance/run-host.sh $(B)/syshaxd $(CONF_BIN)
	SYSHAX_RINGS=1 tests/conformance/run-host.sh $(B)/syshaxd $(CONF_BIN)

ALL	+= $(CONF_BIN)
CHECKS	+= check-conformance
VM_BINS	+= $(CONF_BIN)
