// SPDX-License-Identifier: MIT
/* Hugging Face tensor names (Llama, Qwen2/3, Qwen3-MoE) to GGUF names. */
#include "hfnames.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Per layer: the part after "model.layers.<L>." and its GGUF suffix. */
static const struct {
	const char *hf, *gguf;
} layer_map[] = {
	{ "input_layernorm.weight",		"attn_norm.weight" },
	{ "post_attention_layernorm.weight",	"ffn_norm.weight" },
	{ "self_attn.q_proj.weight",		"attn_q.weight" },
	{ "self_attn.k_proj.weight",		"attn_k.weight" },
	{ "self_attn.v_proj.weight",		"attn_v.weight" },
	{ "self_attn.o_proj.weight",		"attn_output.weight" },
	{ "self_attn.q_proj.bias",		"attn_q.bias" },
	{ "self_attn.k_proj.bias",		"attn_k.bias" },
	{ "self_attn.v_proj.bias",		"attn_v.bias" },
	{ "self_attn.q_norm.weight",		"attn_q_norm.weight" },
	{ "self_attn.k_norm.weight",		"attn_k_norm.weight" },
	{ "mlp.gate_proj.weight",		"ffn_gate.weight" },
	{ "mlp.up_proj.weight",			"ffn_up.weight" },
	{ "mlp.down_proj.weight",		"ffn_down.weight" },
	{ "mlp.gate.weight",			"ffn_gate_inp.weight" },
	{ "mlp.shared_expert.gate_proj.weight",	"ffn_gate_shexp.weight" },
	{ "mlp.shared_expert.up_proj.weight",	"ffn_up_shexp.weight" },
	{ "mlp.shared_expert.down_proj.weight",	"ffn_down_shexp.weight" },
	{ "mlp.shared_expert_gate.weight",	"ffn_gate_inp_shexp.weight" },
};

static const struct {
	const char *hf, *gguf;
} top_map[] = {
	{ "model.embed_tokens.weight",	"token_embd.weight" },
	{ "model.norm.weight",		"output_norm.weight" },
	{ "lm_head.weight",		"output.weight" },
};

static int put(size_t len, int n)
{
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int shxd_hf_to_gguf(const char *hf, char *out, size_t len)
{
	unsigned int layer, e;
	char kind[8];
	int off = 0;

	for (size_t i = 0; i < sizeof(top_map) / sizeof(top_map[0]); i++)
		if (!strcmp(hf, top_map[i].hf))
			return put(len, snprintf(out, len, "%s",
						      top_map[i].gguf));
	if (sscanf(hf, "model.layers.%u.%n", &layer, &off) == 1 && off) {
		const char *rest = hf + off;
		int end = 0;

		for (size_t i = 0; i < sizeof(layer_map) / sizeof(layer_map[0]);
		     i++)
			if (!strcmp(rest, layer_map[i].hf))
				return put(len,
					   snprintf(out, len, "blk.%u.%s", layer,
						    layer_map[i].gguf));
		/* Experts one tensor each: GGUF stacks them; the engine
		 * finds either (shxd_wset_expert). */
		if (sscanf(rest, "mlp.experts.%u.%7[a-z]_proj.weight%n", &e,
			   kind, &end) == 2 && !rest[end])
			return put(len,
				   snprintf(out, len,
					    "blk.%u.ffn_%s_exps.%u.weight",
					    layer, kind, e));
	}
	return put(len, snprintf(out, len, "%s", hf));
}
