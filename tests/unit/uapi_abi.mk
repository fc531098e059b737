# tests/unit/uapi_abi_ut: sizes, offsets and ioctl numbers of uapi/syshax.h.
$(B)/tests/unit/uapi_abi_ut: $(B)/tests/unit/uapi_abi_ut.o
	$(CC) $(LDFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs cunit)

ALL	+= $(B)/tests/unit/uapi_abi_ut
CHECKS	+= uapi-abi-check

.PHONY: uapi-abi-check
uapi-abi-check: $(B)/tests/unit/uapi_abi_ut
	$(B)/tests/unit/uapi_abi_ut
