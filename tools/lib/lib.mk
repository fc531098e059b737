# tools/lib/: code the tools and the tests share -> $(B)/libshxtools.a:
# the GGUF/safetensors writer (wfile.h) and random-weight models
# (genmodel.h; it quantizes with $(B)/libshxk.a, so link that after it).
# Read with daemon/*/*.mk, before every other fragment, so that each can
# name $(SHXTOOLS_A) among a rule's prerequisites.
SHXTOOLS_SRCS := $(sort $(wildcard tools/lib/*.c))
SHXTOOLS_A := $(B)/libshxtools.a
CPPFLAGS_tools += -I$(CURDIR)/kernels -I$(CURDIR)/tools/lib

$(SHXTOOLS_A): $(SHXTOOLS_SRCS:%.c=$(B)/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

ALL += $(SHXTOOLS_A)
