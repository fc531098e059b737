# kmod/kbuild.mk: syshax.ko built against other kernels' headers, in
# folders of their own (scripts/kmod-build; docs/kernel-compat.md).

# The module's sources, one a line, for scripts that copy them.
.PHONY: print-kmod-src
print-kmod-src:
	@printf '%s\n' $(KMOD_SRC)
