# runtime/: libsyshax-rt (shared with soname + version script, static, .pc).
SHRT_VERSION	:= 0.1.0
SHRT_SONAME	:= libsyshax-rt.so.0
SHRT_SRCS	:= $(sort $(wildcard runtime/src/*.c))
SHRT_OBJS	:= $(SHRT_SRCS:%.c=$(B)/%.o)
SHRT_SO		:= $(B)/runtime/libsyshax-rt.so.$(SHRT_VERSION)
SHRT_A		:= $(B)/runtime/libsyshax-rt.a
# Programs of this tree link the static archive, $(SHRT_A). daemon.mk is
# read before this file, so its prerequisite list saw no SHRT_A yet: name
# that dependency here.
$(B)/syshaxd: $(SHRT_A)
SHRT_PC		:= $(B)/runtime/syshax-rt.pc
SHRT_HDRS	:= runtime/include/syshax/rt.h uapi/syshax.h uapi/syshax_ops.h

# -z defs catches a missing library, but not with the sanitizers' runtime.
SHRT_ZDEFS	:= $(if $(filter 1,$(SAN)),,-Wl,-z,defs)

LIBDIR		?= $(PREFIX)/lib
INCLUDEDIR	?= $(PREFIX)/include
MANDIR		?= $(PREFIX)/share/man

CPPFLAGS_runtime += -I$(CURDIR)/runtime/include -I$(CURDIR)/runtime/src

ALL	+= $(SHRT_SO) $(B)/runtime/$(SHRT_SONAME) $(B)/runtime/libsyshax-rt.so \
	   $(SHRT_A) $(SHRT_PC)
INSTALLS += install-runtime

$(SHRT_SO): $(SHRT_OBJS) runtime/libsyshax-rt.map
	$(CC) -shared -Wl,-soname,$(SHRT_SONAME) \
		-Wl,--version-script=runtime/libsyshax-rt.map $(SHRT_ZDEFS) \
		$(LDFLAGS) -o $@ $(SHRT_OBJS) -lpthread

$(B)/runtime/$(SHRT_SONAME) $(B)/runtime/libsyshax-rt.so: $(SHRT_SO)
	ln -sf $(notdir $<) $@

$(SHRT_A): $(SHRT_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

SHRT_PC_SED	= sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(SHRT_VERSION)|'

$(SHRT_PC): runtime/syshax-rt.pc.in runtime/runtime.mk
	@mkdir -p $(dir $@)
	$(SHRT_PC_SED) $< > $@

.PHONY: install-runtime
install-runtime: $(SHRT_SO) $(SHRT_A) $(SHRT_PC)
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/syshax
	install -m 0755 $(SHRT_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(SHRT_SO)) $(DESTDIR)$(LIBDIR)/$(SHRT_SONAME)
	ln -sf $(SHRT_SONAME) $(DESTDIR)$(LIBDIR)/libsyshax-rt.so
	install -m 0644 $(SHRT_A) $(DESTDIR)$(LIBDIR)/
	install -m 0644 $(SHRT_HDRS) $(DESTDIR)$(INCLUDEDIR)/syshax/
	$(SHRT_PC_SED) runtime/syshax-rt.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/syshax-rt.pc
	install -d $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	cp -P docs/man/syshax_*.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 docs/man/syshax.7 $(DESTDIR)$(MANDIR)/man7/

# Unit tests of the library pieces that need no backend.
SHRT_UTS := $(addprefix $(B)/tests/unit/,rt_job_ut rt_open_ut rt_populate_ut \
	rt_strerror_ut)

$(SHRT_UTS): $(B)/tests/unit/%: $(B)/tests/unit/%.o $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $< $(SHRT_A) $(shell $(PKG_CONFIG) --libs cunit) \
		-pthread

$(SHRT_UTS:%=%.o): CPPFLAGS_tests += -I$(CURDIR)/runtime/include \
	-I$(CURDIR)/runtime/src

# The library's checks that need a backend: a private userspace broker in a
# thread (daemon/broker/broker.mk is read before this file).
SHRT_DAEMON_UT := $(B)/tests/unit/rt_daemon_ut

$(SHRT_DAEMON_UT): $(B)/tests/unit/rt_daemon_ut.o $(B)/tests/unit/t_broker.o \
		$(SHXD_BROKER_OBJS) $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(SHXD_BROKER_LIBS) \
		$(shell $(PKG_CONFIG) --libs cunit) -pthread

$(SHRT_DAEMON_UT).o: CPPFLAGS_tests += -I$(CURDIR)/daemon/broker \
	-I$(CURDIR)/runtime/include

# UBSan's reports stop the SAN=1 run: an overflow fails the test.
.PHONY: check-runtime
check-runtime: $(SHRT_UTS) $(SHRT_DAEMON_UT)
	@for t in $(SHRT_UTS) $(SHRT_DAEMON_UT); do \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			timeout 120 $$t || exit 1; \
	done

ALL	+= $(SHRT_UTS) $(SHRT_DAEMON_UT)
CHECKS	+= check-runtime

# make install into a scratch DESTDIR, then build a program against it with
# pkg-config, shared and static: headers, .pc, soname and exports together.
.PHONY: check-install-runtime
check-install-runtime: $(SHRT_SO) $(SHRT_A)
	tests/unit/rt_install_check.sh "$(MAKE)" "$(CC)"

# (Not under SAN=1: the installed objects would need the sanitizers.)
ifneq ($(SAN),1)
CHECKS	+= check-install-runtime
endif
