# kernels/: CPU compute kernels -> $(B)/libshxk.a, their unit tests, and
# the aarch64 cross build run under qemu-user (make check-aarch64).

CPPFLAGS_kernels += -I$(CURDIR)/kernels
CPPFLAGS_tests += -I$(CURDIR)/kernels

SHXK_COMMON := $(addprefix kernels/,convert.c quants.c gemm.c ffn.c moe.c \
	attn.c dispatch.c)
SHXK_X86 := $(addprefix kernels/arch/x86/,cpu-feats.c avx2.c avx512.c \
	avx512bf16.c amx.c)
SHXK_ARM := $(addprefix kernels/arch/arm/,cpu-feats.c neon.c dotprod.c \
	i8mm.c sve.c)

# The ISA variants the host test run tries (each skips if the CPU lacks it).
ifeq ($(findstring aarch64,$(shell $(CC) -dumpmachine)),aarch64)
SHXK_SRCS := $(SHXK_COMMON) $(SHXK_ARM)
SHXK_ISAS := generic neon dotprod i8mm sve
else
SHXK_SRCS := $(SHXK_COMMON) $(SHXK_X86)
SHXK_ISAS := generic avx2 avx512 avx512bf16 amx
endif

SHXK_TESTS := kernels_ut quant_ut

# ISA flags only on the file that uses them (cpu-feats.c decides at run time).
SHXK_FLAGS_dotprod := -march=armv8.2-a+dotprod
SHXK_FLAGS_i8mm := -march=armv8.2-a+dotprod+i8mm
SHXK_FLAGS_sve := -march=armv8.2-a+sve
$(B)/kernels/arch/arm/dotprod.o: CPPFLAGS_kernels += $(SHXK_FLAGS_dotprod)
$(B)/kernels/arch/arm/i8mm.o: CPPFLAGS_kernels += $(SHXK_FLAGS_i8mm)
$(B)/kernels/arch/arm/sve.o: CPPFLAGS_kernels += $(SHXK_FLAGS_sve)
$(B)/kernels/arch/x86/avx2.o: CPPFLAGS_kernels += -mavx2 -mfma -mf16c
SHXK_FLAGS_avx512 := -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl \
	-mavx512vnni
$(B)/kernels/arch/x86/avx512.o: CPPFLAGS_kernels += $(SHXK_FLAGS_avx512)
$(B)/kernels/arch/x86/avx512bf16.o: CPPFLAGS_kernels += $(SHXK_FLAGS_avx512) \
	-mavx512bf16

SHXK_FLAGS_amx := $(SHXK_FLAGS_avx512) -mavx512bf16
$(B)/kernels/arch/x86/amx.o: CPPFLAGS_kernels += $(SHXK_FLAGS_amx) \
	-mamx-tile -mamx-int8 -mamx-bf16

$(B)/libshxk.a: $(SHXK_SRCS:%.c=$(B)/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

$(SHXK_TESTS:%=$(B)/tests/unit/%): %: %.o $(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $^ -lcunit -lm

ALL += $(B)/libshxk.a $(SHXK_TESTS:%=$(B)/tests/unit/%)

.PHONY: check-kernels
check-kernels: $(SHXK_TESTS:%=$(B)/tests/unit/%)
	tests/unit/run-isa.sh "$(SHXK_ISAS)" $^
CHECKS += check-kernels

# ---- x86: the amx variant on amx_model.h's C model of the tiles ----
# The same tests, linked with amx.c and cpu-feats.c built with
# SHXK_AMX_MODEL, so the tile code runs where the CPU has no AMX.
ifneq ($(findstring aarch64,$(shell $(CC) -dumpmachine)),aarch64)
SHXK_AMX_MODEL_OBJS := $(addprefix $(B)/amx-model/kernels/arch/x86/,amx.o \
	cpu-feats.o)
SHXK_AMX_MODEL_TESTS := $(SHXK_TESTS:%=$(B)/tests/unit/%-amx-model)

$(B)/amx-model/kernels/arch/x86/amx.o: CPPFLAGS_kernels += $(SHXK_FLAGS_amx)
$(B)/amx-model/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(CPPFLAGS_kernels) -DSHXK_AMX_MODEL -MMD -MP \
		-c -o $@ $<

# libshxk.a with those two objects: also what tests/engine's
# check-engine-ops-amx-model links a syshaxd with.
SHXK_AMX_MODEL_A := $(B)/libshxk-amx-model.a
$(SHXK_AMX_MODEL_A): $(SHXK_AMX_MODEL_OBJS) $(filter-out \
		$(SHXK_AMX_MODEL_OBJS:$(B)/amx-model/%=$(B)/%), \
		$(SHXK_SRCS:%.c=$(B)/%.o))
	@rm -f $@
	$(AR) rcs $@ $^

$(SHXK_AMX_MODEL_TESTS): $(B)/tests/unit/%-amx-model: $(B)/tests/unit/%.o \
		$(SHXK_AMX_MODEL_A)
	$(CC) $(LDFLAGS) -o $@ $^ -lcunit -lm

ALL += $(SHXK_AMX_MODEL_TESTS)

.PHONY: check-kernels-amx-model
check-kernels-amx-model: $(SHXK_AMX_MODEL_TESTS)
	tests/unit/run-isa.sh "amx" $^
CHECKS += check-kernels-amx-model
endif

# ---- aarch64: cross-built, run under qemu-user on three CPU models ----
# CUnit comes from Debian multiarch (libcunit1-dev:arm64, see
# scripts/install-deps); binaries are static so qemu needs no sysroot.
SHXK_XB := build-aarch64
SHXK_XCC := aarch64-linux-gnu-gcc
SHXK_XCFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -O2 -g -I$(CURDIR)/kernels \
	-isystem $(SHXK_XB)/include
SHXK_XOBJS := $(patsubst %.c,$(SHXK_XB)/%.o,$(SHXK_COMMON) $(SHXK_ARM))
SHXK_XTESTS := $(SHXK_TESTS:%=$(SHXK_XB)/tests/unit/%)
SHXK_XISAS := auto generic neon dotprod i8mm sve
SHXK_QEMU := qemu-aarch64-static

$(SHXK_XB)/kernels/arch/arm/dotprod.o: SHXK_XFLAGS = $(SHXK_FLAGS_dotprod)
$(SHXK_XB)/kernels/arch/arm/i8mm.o: SHXK_XFLAGS = $(SHXK_FLAGS_i8mm)
$(SHXK_XB)/kernels/arch/arm/sve.o: SHXK_XFLAGS = $(SHXK_FLAGS_sve)

$(SHXK_XB)/include/CUnit:
	@mkdir -p $(dir $@)
	ln -sfn /usr/include/CUnit $@

$(SHXK_XB)/%.o: %.c | $(SHXK_XB)/include/CUnit
	@mkdir -p $(dir $@)
	$(SHXK_XCC) $(SHXK_XCFLAGS) $(SHXK_XFLAGS) -MMD -MP -c -o $@ $<

$(SHXK_XB)/libshxk.a: $(SHXK_XOBJS)
	@rm -f $@
	aarch64-linux-gnu-ar rcs $@ $^

$(SHXK_XTESTS): %: %.o $(SHXK_XB)/libshxk.a
	$(SHXK_XCC) -static -o $@ $^ /usr/lib/aarch64-linux-gnu/libcunit.a -lm

# One target an emulated CPU, so that make -j runs them side by side.
SHXK_XRUNS := max max-nrc2 neoverse-n1 cortex-a72
.PHONY: check-aarch64-kernels $(SHXK_XRUNS:%=check-aarch64-%)
check-aarch64-max: $(SHXK_XTESTS)
	RUNNER="$(SHXK_QEMU) -cpu max" tests/unit/run-isa.sh "$(SHXK_XISAS)" $^
check-aarch64-max-nrc2: $(SHXK_XTESTS)
	NRC=2 RUNNER="$(SHXK_QEMU) -cpu max" tests/unit/run-isa.sh "i8mm" $^
check-aarch64-neoverse-n1: $(SHXK_XTESTS)
	RUNNER="$(SHXK_QEMU) -cpu neoverse-n1" tests/unit/run-isa.sh "$(SHXK_XISAS)" $^
check-aarch64-cortex-a72: $(SHXK_XTESTS)
	RUNNER="$(SHXK_QEMU) -cpu cortex-a72" tests/unit/run-isa.sh "$(SHXK_XISAS)" $^
check-aarch64-kernels: $(SHXK_XRUNS:%=check-aarch64-%)
check-aarch64: check-aarch64-kernels

-include $(shell find $(SHXK_XB) -name '*.d' 2>/dev/null)

.PHONY: clean-aarch64-kernels
clean-aarch64-kernels:
	rm -rf $(SHXK_XB)
clean: clean-aarch64-kernels
