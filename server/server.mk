# server/: syshax-serve, the OpenAI-compatible server (docs/server.md). A
# client of libsyshax-rt like any framework: the backend and the stand-in
# xPU from tools/lib (backend.h, standin.h, which links syshaxd's CPU
# engine in), the tokenizer, chat templates and sampler of libshxtext,
# HTTP by libmicrohttpd, JSON by cJSON, the config file reader of
# daemon/conffile.c.
SERVE_SRCS := $(sort $(wildcard server/*.c))
CPPFLAGS_server += -I$(CURDIR)/tools/lib -I$(CURDIR)/tools -I$(CURDIR)/daemon \
	-I$(CURDIR)/text \
	-I$(CURDIR)/runtime/include -I$(CURDIR)/kernels \
	$(shell $(PKG_CONFIG) --cflags libmicrohttpd libcjson)
SERVE_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd libcjson) -pthread

$(B)/syshax-serve: $(SERVE_SRCS:%.c=$(B)/%.o) $(SHXTOOLS_A) $(SHXTEXT_A) \
		$(SHXD_ENGINE_OBJS) $(B)/daemon/log.o $(B)/daemon/conffile.o \
		$(SHRT_A) $(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $(SERVE_SRCS:%.c=$(B)/%.o) $(SHXTOOLS_A) \
		$(SHXTEXT_A) $(SHXD_ENGINE_OBJS) $(B)/daemon/log.o \
		$(B)/daemon/conffile.o $(SHRT_A) $(SHXTEXT_LIBS) \
		$(SHXD_ENGINE_LIBS) $(SERVE_LIBS)

ALL	 += $(B)/syshax-serve
INSTALLS += install-syshax-serve

.PHONY: install-syshax-serve
install-syshax-serve: $(B)/syshax-serve
	install -D -m 0755 $< $(DESTDIR)$(PREFIX)/bin/syshax-serve
	install -D -m 0644 docs/man/syshax-serve.1 \
		$(DESTDIR)$(PREFIX)/share/man/man1/syshax-serve.1
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed 's|/usr/local/bin/|$(PREFIX)/bin/|' daemon/syshax-serve.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/syshax-serve.service
