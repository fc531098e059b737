/* SPDX-License-Identifier: MIT */
/* Hugging Face (safetensors) tensor names to GGUF's, as llama.cpp's
 * converter names them, so jobs name a tensor one way whatever its file. */
#ifndef SHXD_HFNAMES_H
#define SHXD_HFNAMES_H

#include <stddef.h>

/* Writes the GGUF name of hf into out; a name with no mapping is copied
 * as it is. Returns 0, or -ENAMETOOLONG when out is too small. */
int shxd_hf_to_gguf(const char *hf, char *out, size_t len);

#endif /* SHXD_HFNAMES_H */
