# tests/unit/shxd_*_ut: syshaxd's config, op execution, pools, dispatch rule
# and weight filling.
SHXD_UT := $(B)/tests/unit/shxd_config_ut $(B)/tests/unit/shxd_exec_ut \
	$(B)/tests/unit/shxd_pool_ut $(B)/tests/unit/shxd_dispatch_ut \
	$(B)/tests/unit/shxd_wfill_ut

$(SHXD_UT:%=%.o): CPPFLAGS_tests += -I$(CURDIR)/daemon -I$(CURDIR)/daemon/engine \
	-I$(CURDIR)/kernels \
	-I$(CURDIR)/runtime/include

$(B)/tests/unit/shxd_config_ut: $(B)/tests/unit/shxd_config_ut.o \
		$(B)/daemon/config.o $(B)/daemon/conffile.o \
		$(B)/daemon/engine/pool.o $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit numa) \
		-pthread

$(B)/tests/unit/shxd_exec_ut: $(B)/tests/unit/shxd_exec_ut.o \
		$(B)/daemon/engine/exec.o
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit)

$(B)/tests/unit/shxd_pool_ut: $(B)/tests/unit/shxd_pool_ut.o \
		$(B)/daemon/engine/pool.o
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit numa) \
		-pthread

$(B)/tests/unit/shxd_dispatch_ut: $(B)/tests/unit/shxd_dispatch_ut.o \
		$(B)/daemon/engine/dispatch.o
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit)

$(B)/tests/unit/shxd_wfill_ut: $(B)/tests/unit/shxd_wfill_ut.o \
		$(B)/daemon/engine/wfill.o $(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit) -lm \
		-pthread

.PHONY: check-shxd-unit
check-shxd-unit: $(SHXD_UT)
	$(B)/tests/unit/shxd_config_ut
	$(B)/tests/unit/shxd_exec_ut
	timeout 60 $(B)/tests/unit/shxd_pool_ut
	$(B)/tests/unit/shxd_dispatch_ut
	$(B)/tests/unit/shxd_wfill_ut

ALL	+= $(SHXD_UT)
CHECKS	+= check-shxd-unit
