# tests/daemon/: syshaxd's command line and modes, end to end.
.PHONY: check-syshaxd-cli
# Under make SAN=1 an undefined-behaviour report ends the daemon, and so
# fails the case (ASan's do already).
SHXD_UBSAN := UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

check-syshaxd-cli: $(B)/syshaxd $(B)/syshax-demo
	$(SHXD_UBSAN) tests/daemon/cli.sh $(B)/syshaxd $(B)/syshax-demo

CHECKS	+= check-syshaxd-cli

# systemd readiness (sd_notify) against a private daemon.
NOTIFY_TEST := $(B)/tests/daemon/notify_test

$(NOTIFY_TEST): $(B)/tests/daemon/notify_test.o $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit) -pthread

.PHONY: check-syshaxd-notify
check-syshaxd-notify: $(NOTIFY_TEST) $(B)/syshaxd
	$(SHXD_UBSAN) timeout 120 $(NOTIFY_TEST) $(B)/syshaxd

ALL	+= $(NOTIFY_TEST)
CHECKS	+= check-syshaxd-notify
