# kernels/: CPU compute kernels -> $(B)/libshxk.a, their unit tests, and
# the aarch64 cross build run under qemu-user (make check-aarch64).

CPPFLAGS_kernels += -I$(CURDIR)/kernels
CPPFLAGS_tests += -I$(CURDIR)/kernels

SHXK_COMMON := $(addprefix kernels/,convert.c quants.c gemm.c ffn.c moe.c \
	attn.c dispatch.c)
SHXK_X86 := $(addprefix kernels/arch/x86/,cpu-feats.c avx2.c avx512.c)
SHXK_ARM := $(addprefix kernels/arch/arm/,cpu-feats.c)

# The ISA variants the host test run tries (each skips if the CPU lacks it).
ifeq ($(findstring aarch64,$(shell $(CC) -dumpmachine)),aarch64)
SHXK_SRCS := $(SHXK_COMMON) $(SHXK_ARM)
SHXK_ISAS := generic
else
SHXK_SRCS := $(SHXK_COMMON) $(SHXK_X86)
SHXK_ISAS := generic avx2 avx512
endif

SHXK_TESTS := kernels_ut quant_ut

# ISA flags only on the file that uses them (cpu-feats.c decides at run time).
$(B)/kernels/arch/x86/avx2.o: CPPFLAGS_kernels += -mavx2 -mfma -mf16c
$(B)/kernels/arch/x86/avx512.o: CPPFLAGS_kernels += -mavx2 -mfma -mf16c \
	-mavx512f -mavx512bw -mavx512vl -mavx512vnni

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
