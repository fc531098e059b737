# daemon/broker/: syshaxd's userspace broker, linked into syshaxd (daemon.mk) and
# into its unit test.
SHXD_BROKER_OBJS := $(addprefix $(B)/daemon/broker/,bjobs.o brings.o broker.o bufs.o handles.o \
	membuf.o users.o bstats.o)
SHXD_BROKER_LIBS := $(shell $(PKG_CONFIG) --libs numa) -pthread
# proto.h: the wire protocol shared with the library.
CPPFLAGS_daemon += -I$(CURDIR)/runtime/src $(shell $(PKG_CONFIG) --cflags numa)

# Its unit test: tests/unit/broker_ut.mk (read after runtime.mk).
