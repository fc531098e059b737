# tests/unit: syshaxd's userspace broker through libsyshax-rt (broker_ut;
# it also runs in the VM guest, which has two NUMA nodes and huge pages) and
# the broker rules (cpl_check_ut). Here, not in daemon/broker/broker.mk, so that
# runtime.mk's variables are set.
SHXD_BROKER_UT := $(B)/tests/unit/broker_ut

# The fixture both broker-in-a-thread tests use (tests/unit/t_broker.h).
T_BROKER_OBJ := $(B)/tests/unit/t_broker.o
$(T_BROKER_OBJ): CPPFLAGS_tests += -I$(CURDIR)/daemon/broker \
	-I$(CURDIR)/runtime/include

$(SHXD_BROKER_UT): $(B)/tests/unit/broker_ut.o $(T_BROKER_OBJ) \
		$(SHXD_BROKER_OBJS) $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXD_BROKER_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit) -pthread

$(B)/tests/unit/broker_ut.o: CPPFLAGS_tests += -I$(CURDIR)/daemon/broker \
	-I$(CURDIR)/runtime/include -I$(CURDIR)/runtime/src

.PHONY: check-broker
# Under make SAN=1 an undefined-behaviour report fails the run (ASan's do).
check-broker: $(SHXD_BROKER_UT)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		timeout 300 $(SHXD_BROKER_UT)

ALL	+= $(SHXD_BROKER_UT)
CHECKS	+= check-broker
VM_BINS	+= $(SHXD_BROKER_UT)

# The broker under abuse: limits, stale handles, EMFILE, a large alloc
# beside others, exports. Its per-user RLIMIT_MEMLOCK case needs root
# (77, SKIP, without: the other cases still ran).
SHXD_BROKER_LIMITS_UT := $(B)/tests/unit/broker_limits_ut

$(SHXD_BROKER_LIMITS_UT): $(B)/tests/unit/broker_limits_ut.o \
		$(T_BROKER_OBJ) $(SHXD_BROKER_OBJS) $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXD_BROKER_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit) -pthread

$(B)/tests/unit/broker_limits_ut.o: CPPFLAGS_tests += \
	-I$(CURDIR)/daemon/broker -I$(CURDIR)/runtime/include \
	-I$(CURDIR)/runtime/src

.PHONY: check-broker-limits
check-broker-limits: $(SHXD_BROKER_LIMITS_UT)
	@UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		timeout 300 $(SHXD_BROKER_LIMITS_UT) || \
		{ rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }

ALL	+= $(SHXD_BROKER_LIMITS_UT)
CHECKS	+= check-broker-limits

# broker/cpl_check.h, the completion rules both brokers share.
CPL_CHECK_UT := $(B)/tests/unit/cpl_check_ut

$(CPL_CHECK_UT): $(B)/tests/unit/cpl_check_ut.o
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit)

.PHONY: check-cpl-check
check-cpl-check: $(CPL_CHECK_UT)
	timeout 60 $(CPL_CHECK_UT)

ALL	+= $(CPL_CHECK_UT)
CHECKS	+= check-cpl-check

# broker/ring.h, the broker's side of the shared rings both brokers use.
RING_UT := $(B)/tests/unit/ring_ut

$(RING_UT): $(B)/tests/unit/ring_ut.o
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit)

.PHONY: check-ring
check-ring: $(RING_UT)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 timeout 60 $(RING_UT)

ALL	+= $(RING_UT)
CHECKS	+= check-ring

# The shared rings on syshaxd's broker: garbage in a caller's own ring
# header hurts only that caller.
SHXD_BROKER_RING_UT := $(B)/tests/unit/broker_ring_ut

$(SHXD_BROKER_RING_UT): $(B)/tests/unit/broker_ring_ut.o $(T_BROKER_OBJ) \
		$(SHXD_BROKER_OBJS) $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXD_BROKER_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit) -pthread

$(B)/tests/unit/broker_ring_ut.o: CPPFLAGS_tests += \
	-I$(CURDIR)/daemon/broker -I$(CURDIR)/runtime/include \
	-I$(CURDIR)/runtime/src

.PHONY: check-broker-ring
check-broker-ring: $(SHXD_BROKER_RING_UT)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		timeout 120 $(SHXD_BROKER_RING_UT)

ALL	+= $(SHXD_BROKER_RING_UT)
CHECKS	+= check-broker-ring
