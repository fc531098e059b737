# Module checks that need no VM (both run in make test):
#   make sparse-check   sparse over every kmod/ source; any warning fails
#   make dkms-check     dkms add/build/remove for the installed headers,
#                       in a private DKMS tree (the system's is left alone)
#   make uninstall-check make install then make uninstall into a scratch
#                       DESTDIR leaves nothing (part of make check)
#   make pkg-check      the Debian packages (debian/) and RPMs
#                       (packaging/rpm/) build, lint clean, hold their files
#                       (make test runs it too)

# Kernel release of KDIR's headers, e.g. 6.1.0-56-amd64.
KVER ?= $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' $(KDIR)/include/generated/utsrelease.h 2>/dev/null)

.PHONY: sparse-check dkms-check

sparse-check:
	scripts/sparse-check KDIR=$(KDIR)

dkms-check:
	@scripts/dkms-check $(KVER)

# all first: the install it runs finds everything built.
.PHONY: uninstall-check
uninstall-check: all
	shellcheck scripts/uninstall scripts/uninstall-check
	scripts/uninstall-check "$(MAKE)"
ifneq ($(SAN),1)
CHECKS	+= uninstall-check
endif

.PHONY: pkg-check
pkg-check:
	shellcheck scripts/pkg-check
	scripts/pkg-check
test: pkg-check
