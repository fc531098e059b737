/* SPDX-License-Identifier: MIT */
/*
 * Random-weight decoder models in GGUF, written with the project's own
 * GGUF writer (wfile.h): the files syshax-run, syshax-bench e2e and the
 * llama.cpp comparison tests load on both sides. No downloads anywhere.
 *
 * The file carries llama.cpp's metadata keys for its architecture and an
 * SPM vocabulary (tokenizer.ggml.model "llama": <unk>, <s>, </s>, the 256
 * byte tokens, filler tokens; scores and token types), enough for
 * llama.cpp's libllama to load it. Weights are seeded pseudo-random values
 * (uniform; each tensor its own stream) scaled so activations stay O(1)
 * through every layer, so logits have a useful spread: matrices std
 * 1/sqrt(inputs) (x0.5 for attn_output and ffn_down, x3 for output),
 * embeddings std 1 (3/sqrt(n_embd) when tied), norms 1 +- 0.1, biases
 * std 0.02. 1-D tensors and the router (ffn_gate_inp) are F32.
 *
 * Presets (n_ctx_train 4096; rms_eps 1e-5 for llama, 1e-6 for the qwen
 * archs, whose rope_base is 1e6; none tied):
 *
 *	arch      preset vocab  embd layer head kv hd  ff    experts rope
 *	dense     tiny   512    128  2     4    2  32  256   -       1e4
 *	dense     1b     32000  2048 16    32   8  64  8192  -       5e5
 *	dense     7b     32000  4096 32    32   32 128 11008 -       1e4
 *	qwen3moe  tiny   512    128  2     4    2  32  64    8 (2)
 *	qwen3moe  1b     32000  2048 16    16   4  128 768   32 (4)
 *	qwen3moe  7b     32000  2048 24    32   4  128 768   64 (8)
 *
 * dense: llama, qwen2 (attention biases), qwen3 (q/k norms); qwen3moe has
 * q/k norms and n_expert FFNs of n_ff (4 experts used of 32: "(4)"). The
 * 1b is Llama-3.2-1B's shape, the 7b Llama-2-7B's (llama's rope column;
 * 1b q4_0 is 0.62 GB, 7b q4_0 3.8 GB). Every width is a multiple of 32.
 *
 *	struct gm_opts o = { .arch = "llama", .preset = "tiny",
 *			     .type = SHXK_Q4_0, .seed = 1 };
 *	char err[256];
 *	if (gm_write("/tmp/m.gguf", &o, 0, err, sizeof(err)))
 *		fprintf(stderr, "%s\n", err);
 */
#ifndef GENMODEL_H
#define GENMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "shxk.h"
#include "wfile.h"

struct gm_hparams {
	const char *arch;	/* "llama", "qwen2", "qwen3", "qwen3moe" */
	unsigned int n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff;
	unsigned int n_vocab;	/* >= 259 (3 specials + 256 bytes) */
	unsigned int n_expert, n_expert_used;	/* qwen3moe; else 0 */
	unsigned int n_ctx_train;
	float rope_base, rms_eps;
	int tied;		/* no output.weight: logits use token_embd */
};

struct gm_opts {
	const char *arch;	/* as gm_hparams.arch */
	const char *preset;	/* "tiny", "1b", "7b" (gm_preset) */
	enum shxk_type type;	/* matrices: SHXK_F32/F16/BF16/Q8_0/Q4_0;
				 * norms and biases are always F32 */
	uint64_t seed;
	/* Non-zero: overrides the preset's layer count (quick tests). */
	unsigned int n_layer;
	/* Non-zero: no output.weight, the logits use token_embd (scaled
	 * for that); the presets have their own output.weight, and so do
	 * the real shapes but the small ones, tied as the models are. */
	int tied;
};

/*
 * The shape of a preset for an arch: 0, or -EINVAL (unknown name). Besides
 * the table above, real models' shapes, each in its own arch only, whole
 * (cut them with gm_opts.n_layer):
 *
 *	arch      preset        vocab  embd layer head kv hd  ff    experts
 *	llama     llama3-8b     128256 4096 32    32   8  128 14336 -
 *	llama     llama3.2-1b   128256 2048 16    32   8  64  8192  - (tied)
 *	qwen2     qwen2.5-7b    152064 3584 28    28   4  128 18944 -
 *	qwen2     qwen2.5-0.5b  151936 896  24    14   2  64  4864  - (tied)
 *	qwen2     r1-qwen-32b   152064 5120 64    40   8  128 27648 -
 *	qwen3moe  qwen3-30b-a3b 151936 2048 48    32   4  128 768   128 (8)
 *
 * (Meta-Llama-3-8B, Llama-3.2-1B, Qwen2.5-7B, Qwen2.5-0.5B,
 * DeepSeek-R1-Distill-Qwen-32B, Qwen3-30B-A3B; rope base 5e5 for Llama
 * 3, 1e6 for the others; tied: no output.weight, as those models.)
 */
int gm_preset(const char *arch, const char *preset, struct gm_hparams *hp);

/* The arch of a real model's preset ("qwen2" for "qwen2.5-7b"), or NULL
 * (not one of them). */
const char *gm_shape_arch(const char *preset);

/* Writes the model; 0 or -errno with a message in err. Progress on long
 * writes (1b, 7b) goes to stderr when progress is non-zero. */
int gm_write(const char *path, const struct gm_opts *o, int progress,
	     char *err, size_t errlen);

/* The bytes gm_write would write (for a progress bar or a disk check). */
uint64_t gm_size(const struct gm_opts *o);

/*
 * A GGUF file's metadata, entry by entry: the architecture's keys from a
 * gm_hparams (gm_meta_hparams, as gm_write writes them and llama.cpp and
 * daemon/engine/model.c read them), then anything else (a vocabulary).
 * Keys are copied; values (strings, arrays) are not and must outlive the
 * write. At most GM_MAX_KV entries.
 */
#define GM_MAX_KV	40
#define GM_KEY_MAX	64

struct gm_meta {
	struct wf_wkv kv[GM_MAX_KV];
	char keys[GM_MAX_KV][GM_KEY_MAX];
	char name[GM_KEY_MAX];		/* general.name */
	size_t n;
};

/* general.* (name as general.name) and <arch>.* of hp. */
void gm_meta_hparams(struct gm_meta *m, const struct gm_hparams *hp,
		     const char *name);
/* An entry "<arch>.<key>" (key alone when arch is NULL) of type; the
 * caller sets its value. */
struct wf_wkv *gm_meta_add(struct gm_meta *m, const char *arch,
			   const char *key, uint32_t type);
void gm_meta_u32(struct gm_meta *m, const char *arch, const char *key,
		 uint32_t v);
void gm_meta_arr(struct gm_meta *m, const char *key, uint32_t type,
		 const void *arr, size_t n);

#endif /* GENMODEL_H */
