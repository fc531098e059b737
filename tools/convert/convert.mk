# tools/convert/: syshax-convert, a trained model folder (tools/train/) to
# GGUF in F32, F16, Q8_0 or Q4_0 with the project's writer and quantizers.
CONVERT_SRCS := $(sort $(wildcard tools/convert/*.c))

$(B)/tools/convert/%.o: CPPFLAGS_tools += -I$(CURDIR)/daemon \
	$(shell $(PKG_CONFIG) --cflags libcjson)

$(B)/syshax-convert: $(CONVERT_SRCS:%.c=$(B)/%.o) $(SHXTOOLS_A) \
		$(B)/daemon/model/hfnames.o $(SHXD_MODEL_OBJS) $(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXD_MODEL_LIBS) -lm

ALL	 += $(B)/syshax-convert
INSTALLS += install-syshax-convert

.PHONY: install-syshax-convert
install-syshax-convert: $(B)/syshax-convert
	install -D -m 0755 $< $(DESTDIR)$(PREFIX)/bin/syshax-convert
	install -D -m 0644 docs/man/syshax-convert.1 \
		$(DESTDIR)$(PREFIX)/share/man/man1/syshax-convert.1
