# kmod/: the module's files installed besides syshax.ko itself (make kmod
# builds it; DKMS installs it): the udev rule and the group it names (a
# sysusers.d file), the modules-load.d file that loads it at boot, the
# device's man page, and the DKMS source tree. Paths systemd and udev read
# whatever PREFIX is; packages set them (UDEVDIR=/usr/lib/udev on openEuler).
UDEVDIR	?= /lib/udev
SYSUSERSDIR ?= /usr/lib/sysusers.d
MODULESLOADDIR ?= /etc/modules-load.d
KMOD_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
KMOD_SRC := Kbuild dkms.conf $(wildcard kmod/*.[ch] uapi/*.h broker/*.h)

INSTALLS += install-udev install-man4 install-dkms-src
.PHONY: install-udev install-man4 install-dkms-src

install-udev:
	install -D -m 0644 kmod/60-syshax.rules $(DESTDIR)$(UDEVDIR)/rules.d/60-syshax.rules
	install -D -m 0644 kmod/syshax.sysusers $(DESTDIR)$(SYSUSERSDIR)/syshax.conf
	install -D -m 0644 kmod/modules-load.conf $(DESTDIR)$(MODULESLOADDIR)/syshax.conf

install-man4:
	install -D -m 0644 docs/man/syshax.4 $(DESTDIR)$(PREFIX)/share/man/man4/syshax.4

# Then: dkms install syshax/$(KMOD_VERSION)
install-dkms-src:
	for f in $(KMOD_SRC); do \
		install -D -m 0644 $$f $(DESTDIR)/usr/src/syshax-$(KMOD_VERSION)/$$f || exit 1; \
	done

# modinfo must show what an operator looks for (make check builds the module).
CHECKS += kmod-modinfo-check
.PHONY: kmod-modinfo-check
kmod-modinfo-check: kmod
	@export PATH=$$PATH:/sbin:/usr/sbin; \
	for f in version license description; do \
		[ -n "$$(modinfo -F $$f syshax.ko)" ] || { echo "kmod-modinfo-check: no $$f" >&2; exit 1; }; \
	done; \
	modinfo -F parm syshax.ko | grep -q '^max_pinned_mb:.*default' || \
		{ echo "kmod-modinfo-check: max_pinned_mb lacks a described default" >&2; exit 1; }; \
	echo "kmod-modinfo-check: version $$(modinfo -F version syshax.ko), $$(modinfo -F parm syshax.ko | wc -l) parameters"
