/* SPDX-License-Identifier: MIT */
/* WEIGHTS_LOAD's sources: a file under model_dir, or a client's buffer. */
#ifndef SHXD_WLOAD_H
#define SHXD_WLOAD_H

#include "wset.h"

/*
 * Loads a GGUF (magic "GGUF") or safetensors file at path, resolved
 * beneath model_dir (openat2 RESOLVE_BENEATH: "..", absolute paths and
 * symlinks that leave it fail with -EACCES; so does an empty model_dir).
 * quantize applies to safetensors F32/F16/BF16 matrices (SHXK_F32: keep).
 * Returns 0 or -errno with a message in err.
 */
int shxd_wload_file(const char *model_dir, const char *path,
		    enum shxk_type quantize, const struct shxd_pool *pool,
		    struct shxd_wset **out, char *err, size_t errlen);

/* A decoder model from a GGUF file, as shxd_wload_file finds it: its
 * hyperparameters read and every tensor bound (ws->model); quantize
 * applies to its F32/F16/BF16 matrices. -EINVAL with err for a file that
 * is no model of a supported architecture. */
int shxd_wload_model(const char *model_dir, const char *path,
		     enum shxk_type quantize, const struct shxd_pool *pool,
		     struct shxd_wset **out, char *err, size_t errlen);

/* From a struct syshax_wdesc and its tensors in img[0, len). */
int shxd_wload_buffer(const uint8_t *img, size_t len, enum shxk_type quantize,
		      const struct shxd_pool *pool, struct shxd_wset **out,
		      char *err, size_t errlen);

#endif /* SHXD_WLOAD_H */
