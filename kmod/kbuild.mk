# kmod/kbuild.mk: syshax.ko built against other kernels' headers, in
# folders of their own (scripts/kmod-build; docs/kernel-compat.md).

# The module's sources, one a line, for scripts that copy them.
.PHONY: print-kmod-src
print-kmod-src:
	@printf '%s\n' $(KMOD_SRC)

# make test: the newest kernel of each series (6.1, 6.12) per architecture
# (amd64, arm64), under a minute; make kbuild-matrix: every headers package
# apt offers for both (77 kernels, 47 min on a shared 2-vCPU machine).
# Results in build/kbuild-matrix/; the table in docs/kernel-compat.md.
.PHONY: kbuild-check kbuild-matrix
kbuild-check:
	scripts/kbuild-matrix

kbuild-matrix:
	scripts/kbuild-matrix --all

CHECKS += kbuild-shellcheck
.PHONY: kbuild-shellcheck
kbuild-shellcheck:
	shellcheck -x scripts/kbuild-matrix
