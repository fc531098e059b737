/* SPDX-License-Identifier: MIT */
/*
 * Real vocabularies as tools/fetch-vocab.sh fetches them (build/vocab/
 * <name>/), written as vocab-only GGUF files: the tokenizer.ggml.* keys
 * llama.cpp's converter (convert_hf_to_gguf.py) would write for that model
 * and general.architecture, all libllama needs to load a vocabulary.
 */
#ifndef VOCAB_SRC_H
#define VOCAB_SRC_H

#include <stddef.h>

struct vocab_src {
	const char *name;	/* the folder under build/vocab */
	const char *what;	/* for the report */
	int spm;		/* U+2581 in the text decodes as a space */
	/* reads dir, writes the GGUF to out: 0, -ENOENT (not fetched),
	 * other -errno with a message in err */
	int (*write)(const char *dir, const char *out, char *err,
		     size_t errlen);
};

extern const struct vocab_src g_vocab_src[];
extern const size_t g_n_vocab_src;

#endif
