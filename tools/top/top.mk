# tools/top/: syshax-top, the live stats screen (ncurses) with --once,
# --json and --prometheus snapshots. Static libsyshax-rt (it also runs in
# the VM guest); the kernels' variant name comes from libshxk.a.
TOP_SRCS := $(sort $(wildcard tools/top/*.c))
TOP_CURSES_CFLAGS := $(shell $(PKG_CONFIG) --cflags ncursesw)
TOP_CURSES_LIBS := $(shell $(PKG_CONFIG) --libs ncursesw)

$(TOP_SRCS:%.c=$(B)/%.o): CPPFLAGS_tools += -I$(CURDIR)/runtime/include \
	-I$(CURDIR)/kernels $(TOP_CURSES_CFLAGS) \
	$(shell $(PKG_CONFIG) --cflags libcjson)

$(B)/syshax-top: $(TOP_SRCS:%.c=$(B)/%.o) $(SHRT_A) $(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $(TOP_SRCS:%.c=$(B)/%.o) $(SHRT_A) \
		$(B)/libshxk.a $(TOP_CURSES_LIBS) \
		$(shell $(PKG_CONFIG) --libs libcjson) -pthread -lm

ALL	 += $(B)/syshax-top
VM_FILES += $(B)/syshax-top
INSTALLS += install-syshax-top

.PHONY: install-syshax-top
install-syshax-top: $(B)/syshax-top
	install -D -m 0755 $< $(DESTDIR)$(PREFIX)/bin/syshax-top
	install -D -m 0644 docs/man/syshax-top.1 \
		$(DESTDIR)$(PREFIX)/share/man/man1/syshax-top.1
