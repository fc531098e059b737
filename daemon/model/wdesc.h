/* SPDX-License-Identifier: MIT */
/* The descriptor of a WEIGHTS_LOAD from a client buffer (struct syshax_wdesc
 * in uapi/syshax_ops.h), parsed like the file formats into a shxd_tfile. */
#ifndef SHXD_WDESC_H
#define SHXD_WDESC_H

#include "tfile.h"

/*
 * img is the ref's bytes (the descriptor at offset 0). Checks the magic,
 * version, flags, that the table fits, each name NUL-terminated and
 * unique, types SYSHAX_DT_*, 1..4 dims with no zero and no overflow, size
 * equal to the elements' bytes, data inside img and after the table, no
 * two tensors overlapping. Returns 0, -EINVAL (message in err), -ENOMEM.
 */
int shxd_wdesc_parse(const uint8_t *img, size_t len, struct shxd_tfile *out,
		     char *err, size_t errlen);

#endif /* SHXD_WDESC_H */
