# tests/unit/broker_ctx_ut: CTX_STATS on syshaxd's userspace broker (run in
# a thread, tests/unit/t_broker.h; t_broker.o named here: broker_ut.mk, which
# sets T_BROKER_OBJ, is read after this file) through syshax_ctx_stats().
SHXD_BROKER_CTX_UT := $(B)/tests/unit/broker_ctx_ut

$(SHXD_BROKER_CTX_UT): $(B)/tests/unit/broker_ctx_ut.o $(B)/tests/unit/t_broker.o \
		$(SHXD_BROKER_OBJS) $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXD_BROKER_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit) -pthread

$(B)/tests/unit/broker_ctx_ut.o: CPPFLAGS_tests += -I$(CURDIR)/daemon/broker \
	-I$(CURDIR)/runtime/include -I$(CURDIR)/runtime/src

.PHONY: check-broker-ctx
check-broker-ctx: $(SHXD_BROKER_CTX_UT)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		timeout 120 $(SHXD_BROKER_CTX_UT)

ALL	+= $(SHXD_BROKER_CTX_UT)
CHECKS	+= check-broker-ctx
