/* SPDX-License-Identifier: MIT */
/*
 * A decoder model: a weight set plus the hyperparameters its GGUF file
 * gives (llama.cpp's metadata keys) and each layer's tensors, looked up and
 * shape-checked once at MODEL_LOAD so a step only follows pointers.
 */
#ifndef SHXD_MODEL_H
#define SHXD_MODEL_H

#include <stdbool.h>

#include "syshax_ops.h"
#include "wset.h"

struct shxd_layer {
	const float *attn_norm, *ffn_norm;
	const float *bq, *bk, *bv;		/* qwen2; else NULL */
	const float *q_norm, *k_norm;		/* qwen3*; else NULL */
	const struct shxd_mat *wq, *wk, *wv, *wo;
	const struct shxd_mat *gate, *up, *down;	/* dense FFN */
	const struct shxd_mat *router;		/* MoE: ffn_gate_inp */
};

struct shxd_model {
	enum syshax_arch arch;
	unsigned int n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff;
	unsigned int n_vocab, n_expert, n_expert_used, n_ctx_train;
	float rope_base, eps;
	bool neox;			/* RoPE on halves (qwen), else pairs */
	const struct shxd_mat *embd, *output;	/* output may be embd */
	const float *output_norm;
	struct shxd_layer layer[];	/* n_layer */
};

/* The hyperparameters from a parsed GGUF file (before the weights are
 * built, so a wrong file fails fast). 0 or -EINVAL with err. */
int shxd_model_hparams(const struct shxd_tfile *tf, struct shxd_model *hp,
		       char *err, size_t errlen);

/* Links ws to a model with hp's hyperparameters: every tensor looked up
 * and its shape checked. 0, -EINVAL (err names the tensor), -ENOMEM. */
int shxd_model_bind(struct shxd_wset *ws, const struct shxd_model *hp,
		    char *err, size_t errlen);

/* "llama", "qwen2", ... */
const char *shxd_model_arch_name(enum syshax_arch a);

/* MODEL_LOAD's info for a model. */
void shxd_model_info(const struct shxd_wset *ws, struct syshax_model_info *mi);

#endif /* SHXD_MODEL_H */
