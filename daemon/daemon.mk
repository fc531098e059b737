# daemon/: syshaxd (config, engine, userspace broker from broker.mk).
SHXD_VERSION	:= 0.1.0
CPPFLAGS_daemon	+= -I$(CURDIR)/daemon -I$(CURDIR)/runtime/include \
	-I$(CURDIR)/kernels $(shell $(PKG_CONFIG) --cflags libsystemd) -DSHXD_VERSION='"$(SHXD_VERSION)"'

SHXD_ENGINE_OBJS := $(addprefix $(B)/daemon/engine/,cpu.o engine.o exec.o \
	model.o op_attn.o op_check.o op_linear.o op_model.o op_moe.o op_weights.o \
	dispatch.o pool.o wfill.o wload.o wset.o) \
	$(addprefix $(B)/daemon/model/,hfnames.o wdesc.o) $(SHXD_MODEL_OBJS)
SHXD_ENGINE_LIBS = $(B)/libshxk.a $(SHXD_MODEL_LIBS) \
	$(shell $(PKG_CONFIG) --libs numa) -lm -pthread
SHXD_OBJS := $(addprefix $(B)/daemon/,conffile.o config.o log.o main.o) \
	$(SHXD_ENGINE_OBJS)

# The static library: syshaxd also runs in the VM guest, which has no
# library path for the tree's build folder.
$(B)/syshaxd: $(SHXD_OBJS) $(SHXD_BROKER_OBJS) $(SHRT_A) $(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $(SHXD_OBJS) $(SHXD_BROKER_OBJS) $(SHRT_A) \
		$(SHXD_BROKER_LIBS) $(SHXD_ENGINE_LIBS) \
		$(shell $(PKG_CONFIG) --libs libsystemd)

ALL	 += $(B)/syshaxd
VM_FILES += $(B)/syshaxd
INSTALLS += install-syshaxd

# Debian 12 packages set it to /lib/systemd/system.
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system

.PHONY: install-syshaxd
install-syshaxd: $(B)/syshaxd
	install -D -m 0755 $(B)/syshaxd $(DESTDIR)$(PREFIX)/sbin/syshaxd
	install -D -m 0644 docs/man/syshaxd.8 $(DESTDIR)$(PREFIX)/share/man/man8/syshaxd.8
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed 's|/usr/local/sbin/|$(PREFIX)/sbin/|' daemon/syshaxd.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/syshaxd.service
