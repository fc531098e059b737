# tools/run/: syshax-run, greedy decoding of a model through syshaxd (-p:
# text through the model's tokenizer, $(SHXTEXT_A)). Its
# --xpu-standin links syshaxd's CPU engine in (tools/lib/standin.c); static
# libsyshax-rt: it also runs in the VM guest, against the module.
RUN_SRCS := $(sort $(wildcard tools/run/*.c))

$(B)/tools/run/%.o: CPPFLAGS_tools += -I$(CURDIR)/daemon -I$(CURDIR)/text

$(B)/syshax-run: $(RUN_SRCS:%.c=$(B)/%.o) $(SHXTOOLS_A) $(SHXD_ENGINE_OBJS) \
		$(B)/daemon/log.o $(SHRT_A) $(B)/libshxk.a $(SHXTEXT_A)
	$(CC) $(LDFLAGS) -o $@ $(RUN_SRCS:%.c=$(B)/%.o) $(SHXTOOLS_A) \
		$(SHXD_ENGINE_OBJS) $(B)/daemon/log.o $(SHRT_A) \
		$(SHXTEXT_A) $(SHXD_ENGINE_LIBS) $(SHXTEXT_LIBS)

ALL	 += $(B)/syshax-run
VM_FILES += $(B)/syshax-run
INSTALLS += install-syshax-run

.PHONY: install-syshax-run
install-syshax-run: $(B)/syshax-run
	install -D -m 0755 $< $(DESTDIR)$(PREFIX)/bin/syshax-run
	install -D -m 0644 docs/man/syshax-run.1 \
		$(DESTDIR)$(PREFIX)/share/man/man1/syshax-run.1
