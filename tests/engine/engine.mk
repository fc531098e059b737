# tests/engine/: the CPU engine's end-to-end suite, both backends.
#   host: make check-engine-ops -> a syshaxd broker without engines on a
#         private socket (scripts/with-syshaxd); the suite starts its own
#         engine (syshaxd --engine-only) with a private model_dir
#   VM:   make vm-check -> the suite runs in the guest against /dev/syshax
#         and starts /bin/syshaxd --engine-only (2 NUMA nodes: --threads 2
#         gives each node one worker, so weights really are split)
ENGINE_OPS_SRCS := $(sort $(wildcard tests/engine/*.c))
ENGINE_OPS_OBJS := $(ENGINE_OPS_SRCS:%.c=$(B)/%.o)
ENGINE_OPS_BIN  := $(B)/tests/engine/engine_ops

$(ENGINE_OPS_OBJS): CPPFLAGS_tests += -I$(CURDIR)/runtime/include \
	-I$(CURDIR)/tools -I$(CURDIR)/tools/lib

# Static library: the same binary runs in the VM guest.
$(ENGINE_OPS_BIN): $(ENGINE_OPS_OBJS) $(SHXTOOLS_A) $(B)/libshxk.a $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $(ENGINE_OPS_OBJS) $(SHXTOOLS_A) \
		$(B)/libshxk.a $(SHRT_A) $(shell $(PKG_CONFIG) --libs cunit) \
		-lm -pthread

# UBSAN_OPTIONS: with make SAN=1, undefined behaviour in the engine stops
# it (and fails the suite) instead of only printing.
.PHONY: check-engine-ops
check-engine-ops: $(ENGINE_OPS_BIN) $(B)/syshaxd
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	scripts/with-syshaxd $(B)/syshaxd --no-engine -- \
		env SYSHAX_ENGINE_CMD="$(B)/syshaxd --engine-only --foreground" \
		timeout 600 $(ENGINE_OPS_BIN)

ALL	+= $(ENGINE_OPS_BIN)
CHECKS	+= check-engine-ops
VM_BINS	+= $(ENGINE_OPS_BIN)

# x86: the same suite against a syshaxd whose kernels are the amx variant
# on amx_model.h's C model of the tiles (kernels/kernels.mk), so FFN, MoE,
# GEMM and whole-model jobs run through the tile code on any AVX-512 BF16
# CPU. Exit 77 (SKIP) elsewhere.
ifdef SHXK_AMX_MODEL_A
$(B)/syshaxd-amx-model: $(SHXD_OBJS) $(SHXD_BROKER_OBJS) $(SHRT_A) \
		$(SHXK_AMX_MODEL_A)
	$(CC) $(LDFLAGS) -o $@ $(SHXD_OBJS) $(SHXD_BROKER_OBJS) $(SHRT_A) \
		$(SHXD_BROKER_LIBS) \
		$(subst $(B)/libshxk.a,$(SHXK_AMX_MODEL_A),$(SHXD_ENGINE_LIBS)) \
		$(shell $(PKG_CONFIG) --libs libsystemd)

.PHONY: check-engine-ops-amx-model
# The kernels' model test is the probe: built first, or make -j's order
# would make a missing binary read as a CPU without AVX-512 BF16.
check-engine-ops-amx-model: $(ENGINE_OPS_BIN) $(B)/syshaxd $(B)/syshaxd-amx-model \
		$(B)/tests/unit/kernels_ut-amx-model
	@if ! SYSHAX_ISA=amx $(B)/tests/unit/kernels_ut-amx-model >/dev/null; then \
		echo "SKIP: check-engine-ops-amx-model: no AVX-512 BF16 here"; \
	else \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		scripts/with-syshaxd $(B)/syshaxd --no-engine -- \
			env SYSHAX_ISA=amx SYSHAX_ENGINE_CMD="$(B)/syshaxd-amx-model --engine-only --foreground" \
			timeout 600 $(ENGINE_OPS_BIN); \
	fi

ALL	+= $(B)/syshaxd-amx-model
CHECKS	+= check-engine-ops-amx-model
endif
