# kernels/: CPU compute kernels -> $(B)/libshxk.a, their unit tests, and
# the aarch64 cross build run under qemu-user (make check-aarch64).

CPPFLAGS_kernels += -I$(CURDIR)/kernels
CPPFLAGS_tests += -I$(CURDIR)/kernels

SHXK_COMMON := $(addprefix kernels/,convert.c quants.c gemm.c ffn.c moe.c \
	attn.c dispatch.c)
SHXK_X86 := $(addprefix kernels/arch/x86/,cpu-feats.c)
SHXK_ARM := $(addprefix kernels/arch/arm/,cpu-feats.c)

# The ISA variants the host test run tries (each skips if the CPU lacks it).
ifeq ($(findstring aarch64,$(shell $(CC) -dumpmachine)),aarch64)
SHXK_SRCS := $(SHXK_COMMON) $(SHXK_ARM)
SHXK_ISAS := generic
else
SHXK_SRCS := $(SHXK_COMMON) $(SHXK_X86)
SHXK_ISAS := generic
endif

SHXK_TESTS := kernels_ut quant_ut

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
