# python/: the syshax Python package (docs/python.md): C extension
# syshax._syshax over the static libsyshax-rt of $(B), Python modules.
#   make             builds it into $(B)/python/lib (python/setup.py)
#   make check       check-python: python/tests/run.sh -> pytest against a
#                    private syshaxd (userspace backend) and that build,
#                    the af_split example among them; SKIP (77) without torch
#   make install     install-python: pip into $(DESTDIR)$(PYTHONDIR)
#   NO_PYTHON=1      none of these (distro packages build the library alone)
#
# Not under SAN=1: the extension would carry ASan's and UBSan's runtime
# into an unsanitized python3, which refuses to load it unless the ASan
# runtime is LD_PRELOADed ahead of everything else, and then reports
# python3's own allocations (and torch's) as leaks. The C layer it tests
# is libsyshax-rt, which the sanitized suites cover.
PYTHON	?= /usr/bin/python3
# Debian's python3 reads $(PREFIX)/lib/python3.X/dist-packages for /usr
# and /usr/local. (Not pip --root/--prefix: Debian's scheme turns prefix
# /usr/local into /usr/local/local.)
PYTHONDIR ?= $(PREFIX)/lib/python$(PY_TAG)/dist-packages
PY_VERSION := 0.1.0
PY_LIB	:= $(B)/python/lib
# One stamp per interpreter version: extensions of several (cpython-311,
# cpython-312, ...) sit side by side in $(PY_LIB), so PYTHON=another one
# builds its own instead of finding the stamp of the last.
PY_TAG	:= $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PY_STAMP := $(PY_LIB)/.built-$(PY_TAG)
PY_SRCS	:= python/setup.py python/pyproject.toml \
	$(wildcard python/syshax/*.py python/syshax/*.c python/syshax/*.h)
# runtime/runtime.mk is read after this file: its SHRT_A and SHRT_HDRS are
# still empty here, so name the archive and headers.
PY_RT	:= $(B)/runtime/libsyshax-rt.a
# syshax._text links libshxtext and the GGUF reader's objects (setup.py).
PY_TEXT	:= $(B)/libshxtext.a $(addprefix $(B)/daemon/model/,tfile.o gguf.o \
	safetensors.o)
PY_HDRS	:= runtime/include/syshax/rt.h uapi/syshax.h uapi/syshax_ops.h \
	$(wildcard text/*.h)

.PHONY: python-ext check-python install-python uninstall-python

# The package for $(PYTHON) alone (tests/gpu/run.sh).
python-ext: $(PY_STAMP)

ifneq ($(NO_PYTHON),1)
ifneq ($(SAN),1)
ALL	+= $(PY_STAMP)
CHECKS	+= check-python
endif
endif
INSTALLS += install-python

$(PY_STAMP): $(PY_SRCS) $(PY_RT) $(PY_TEXT) $(PY_HDRS)
	cd python && SYSHAX_BUILD=$(abspath $(B)) $(PYTHON) setup.py -q build \
		--build-lib $(abspath $(PY_LIB)) --force
	touch $@

# 77 is run.sh's SKIP (no torch): it says so loudly; make check goes on.
check-python: $(PY_STAMP) $(B)/syshaxd $(B)/syshax-run \
		$(B)/models/kjv-llama-f32.gguf
	@python/tests/run.sh $(B) $(PYTHON) || { rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }

# Files: $(PYTHONDIR)/syshax/ and syshax-$(PY_VERSION).dist-info/ (its
# RECORD lists each); nothing else, no .pyc. pip --target skips Debian's
# externally-managed check (PEP 668) as it should for a staged install.
install-python: $(PY_RT) $(PY_TEXT)
ifeq ($(NO_PYTHON),1)
	@echo "install-python: NO_PYTHON=1: the Python package is not installed"
else ifeq ($(SAN),1)
	@echo "install-python: SAN=1: a sanitized extension is not installed"
else
	SYSHAX_BUILD=$(abspath $(B)) PIP_ROOT_USER_ACTION=ignore \
		$(PYTHON) -m pip install -q --target $(DESTDIR)$(PYTHONDIR) \
		--upgrade --no-compile --no-deps --no-build-isolation \
		--no-index --no-cache-dir --disable-pip-version-check ./python
endif

uninstall-python:
	rm -rf $(DESTDIR)$(PYTHONDIR)/syshax \
		$(DESTDIR)$(PYTHONDIR)/syshax-$(PY_VERSION).dist-info
