# tools/lib/: code the tools and the tests share -> $(B)/libshxtools.a:
# the GGUF/safetensors writer (wfile.h) and random-weight models
# (genmodel.h; it quantizes with $(B)/libshxk.a, so link that after it),
# the backend a framework opens (backend.h) and the stand-in xPU
# (standin.h; it is syshaxd's CPU engine: link $(SHXD_ENGINE_OBJS) and
# $(B)/daemon/log.o after it when you use it).
# Read with daemon/*/*.mk, before every other fragment, so that each can
# name $(SHXTOOLS_A) among a rule's prerequisites.
SHXTOOLS_SRCS := $(sort $(wildcard tools/lib/*.c))
SHXTOOLS_A := $(B)/libshxtools.a
CPPFLAGS_tools += -I$(CURDIR)/kernels -I$(CURDIR)/tools/lib
$(B)/tools/lib/standin.o: CPPFLAGS_tools += -I$(CURDIR)/daemon

$(SHXTOOLS_A): $(SHXTOOLS_SRCS:%.c=$(B)/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

ALL += $(SHXTOOLS_A)
