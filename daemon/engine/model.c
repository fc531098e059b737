// SPDX-License-Identifier: MIT
/* Models: hyperparameters from GGUF metadata, tensors bound per layer. */
#include "model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_int.h"

static const struct {
	const char *name;
	enum syshax_arch arch;
	bool neox;
} archs[] = {
	{ "llama", SYSHAX_ARCH_LLAMA, false },
	{ "qwen2", SYSHAX_ARCH_QWEN2, true },
	{ "qwen3", SYSHAX_ARCH_QWEN3, true },
	{ "qwen3moe", SYSHAX_ARCH_QWEN3MOE, true },
};

const char *shxd_model_arch_name(enum syshax_arch a)
{
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (archs[i].arch == a)
			return archs[i].name;
	return "?";
}

/* <arch>.<key> as an unsigned int; def when absent (0: required). */
static int key_uint(const struct shxd_tfile *tf, const char *arch,
		    const char *key, unsigned int def, unsigned int *v,
		    char *err, size_t errlen)
{
	char full[128];
	int64_t i;
	int ret;

	snprintf(full, sizeof(full), "%s.%s", arch, key);
	ret = shxd_gguf_get_int(tf, full, &i);
	if (ret == -ENOENT && def) {
		*v = def;
		return 0;
	}
	if (ret || i < 1 || i > 1 << 24) {
		snprintf(err, errlen, "metadata %s: %s", full,
			 ret == -ENOENT ? "missing" : "not a count in 1..2^24");
		return -EINVAL;
	}
	*v = (unsigned int)i;
	return 0;
}

static int key_float(const struct shxd_tfile *tf, const char *arch,
		     const char *key, float def, float *v, char *err,
		     size_t errlen)
{
	char full[128];
	double d;
	int ret;

	snprintf(full, sizeof(full), "%s.%s", arch, key);
	ret = shxd_gguf_get_float(tf, full, &d);
	if (ret == -ENOENT) {
		*v = def;
		return 0;
	}
	if (ret || !(d > 0.0) || d > 1e12) {
		snprintf(err, errlen, "metadata %s: not a positive number",
			 full);
		return -EINVAL;
	}
	*v = (float)d;
	return 0;
}

int shxd_model_hparams(const struct shxd_tfile *tf, struct shxd_model *hp,
		       char *err, size_t errlen)
{
	const struct shxd_tdesc *embd;
	unsigned int rot;
	const char *s, *a;
	size_t len, i;
	int ret;

	memset(hp, 0, sizeof(*hp));
	if (shxd_gguf_get_str(tf, "general.architecture", &s, &len)) {
		snprintf(err, errlen, "metadata general.architecture: missing "
			 "(not a GGUF model file?)");
		return -EINVAL;
	}
	for (i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (strlen(archs[i].name) == len &&
		    !memcmp(archs[i].name, s, len))
			break;
	if (i == sizeof(archs) / sizeof(archs[0])) {
		snprintf(err, errlen, "architecture '%.*s' is not supported "
			 "(llama, qwen2, qwen3, qwen3moe)", (int)(len < 64 ?
			 len : 64), s);
		return -EINVAL;
	}
	a = archs[i].name;
	hp->arch = archs[i].arch;
	hp->neox = archs[i].neox;
	ret = key_uint(tf, a, "block_count", 0, &hp->n_layer, err, errlen);
	if (!ret)
		ret = key_uint(tf, a, "embedding_length", 0, &hp->n_embd, err,
			       errlen);
	if (!ret)
		ret = key_uint(tf, a, "attention.head_count", 0, &hp->n_head,
			       err, errlen);
	if (!ret)
		ret = key_uint(tf, a, "attention.head_count_kv", hp->n_head,
			       &hp->n_head_kv, err, errlen);
	if (!ret)
		ret = key_uint(tf, a, "attention.key_length",
			       hp->n_embd / hp->n_head, &hp->head_dim, err,
			       errlen);
	if (!ret)
		ret = key_uint(tf, a, "rope.dimension_count", hp->head_dim,
			       &rot, err, errlen);
	if (!ret)
		ret = key_uint(tf, a, "context_length", 4096, &hp->n_ctx_train,
			       err, errlen);
	if (!ret && hp->arch == SYSHAX_ARCH_QWEN3MOE) {
		ret = key_uint(tf, a, "expert_count", 0, &hp->n_expert, err,
			       errlen);
		if (!ret)
			ret = key_uint(tf, a, "expert_used_count", 0,
				       &hp->n_expert_used, err, errlen);
		if (!ret)
			ret = key_uint(tf, a, "expert_feed_forward_length", 0,
				       &hp->n_ff, err, errlen);
	} else if (!ret) {
		ret = key_uint(tf, a, "feed_forward_length", 0, &hp->n_ff, err,
			       errlen);
	}
	if (!ret)
		ret = key_float(tf, a, "rope.freq_base", 10000.0f,
				&hp->rope_base, err, errlen);
	if (!ret)
		ret = key_float(tf, a, "attention.layer_norm_rms_epsilon", 1e-5f,
				&hp->eps, err, errlen);
	if (ret)
		return ret;
	if (hp->n_head % hp->n_head_kv || rot != hp->head_dim ||
	    hp->head_dim > 1024 || hp->head_dim % 2 ||
	    hp->n_expert_used > hp->n_expert || hp->n_expert > 1024 ||
	    (hp->n_expert && hp->n_expert_used > 64)) {
		snprintf(err, errlen, "%s: unsupported shape (heads %u/%u, "
			 "head dim %u, rope dims %u, experts %u/%u)", a,
			 hp->n_head, hp->n_head_kv, hp->head_dim, rot,
			 hp->n_expert_used, hp->n_expert);
		return -EINVAL;
	}
	embd = shxd_tfile_find(tf, "token_embd.weight");
	if (!embd || embd->ndim != 2 || embd->ne[0] != hp->n_embd ||
	    embd->ne[1] > 1 << 24) {
		snprintf(err, errlen, "tensor token_embd.weight: %s",
			 embd ? "not [n_vocab x embedding_length]" : "missing");
		return -EINVAL;
	}
	hp->n_vocab = (unsigned int)embd->ne[1];
	return 0;
}

/* Binding: the first error names the tensor and stays in err. */
struct bind {
	const struct shxd_wset *ws;
	char *err;
	size_t errlen;
	int ret;
};

static void bind_fail(struct bind *b, const char *fmt, unsigned int l,
		      const char *why)
{
	char name[SHXD_TNAME_MAX];

	if (b->ret)
		return;
	snprintf(name, sizeof(name), fmt, l);
	snprintf(b->err, b->errlen, "tensor %s: %s", name, why);
	b->ret = -EINVAL;
}

static const struct shxd_mat *mat(struct bind *b, const char *fmt,
				  unsigned int l, size_t n, size_t k)
{
	const struct shxd_mat *m = shxd_wset_mat(b->ws, fmt, l);

	if (!m)
		bind_fail(b, fmt, l, "missing (or not a matrix)");
	else if (m->n != n || m->k != k)
		bind_fail(b, fmt, l, "shape does not fit the hyperparameters");
	return m;
}

static const float *vec(struct bind *b, const char *fmt, unsigned int l,
			size_t n, bool optional)
{
	const float *v = NULL;
	int ret = shxd_wset_vec(b->ws, fmt, l, n, &v);

	if (ret == -ENOENT && optional)
		return NULL;
	if (ret)
		bind_fail(b, fmt, l, ret == -ENOENT ? "missing" :
			  "shape does not fit the hyperparameters");
	return v;
}

static void bind_experts(struct bind *b, const struct shxd_model *m,
			 unsigned int l)
{
	static const char *const kind[] = { "gate", "up", "down" };

	if (shxd_wset_experts(b->ws, l) != m->n_expert) {
		bind_fail(b, "blk.%u.ffn_gate_exps.weight", l,
			  "expert count does not fit expert_count");
		return;
	}
	for (unsigned int e = 0; e < m->n_expert && !b->ret; e++) {
		for (unsigned int i = 0; i < 3; i++) {
			const struct shxd_mat *x =
				shxd_wset_expert(b->ws, l, kind[i], e);
			bool down = i == 2;

			if (!x || x->n != (down ? m->n_embd : m->n_ff) ||
			    x->k != (down ? m->n_ff : m->n_embd))
				bind_fail(b, down ? "blk.%u.ffn_down_exps.weight" :
					  i ? "blk.%u.ffn_up_exps.weight" :
					  "blk.%u.ffn_gate_exps.weight", l,
					  "missing or shape does not fit");
		}
	}
}

static void bind_layer(struct bind *b, struct shxd_model *m, unsigned int l)
{
	struct shxd_layer *y = &m->layer[l];
	size_t e = m->n_embd, q = (size_t)m->n_head * m->head_dim;
	size_t kv = (size_t)m->n_head_kv * m->head_dim;
	bool qwen3 = m->arch == SYSHAX_ARCH_QWEN3 ||
		     m->arch == SYSHAX_ARCH_QWEN3MOE;

	y->attn_norm = vec(b, "blk.%u.attn_norm.weight", l, e, false);
	y->ffn_norm = vec(b, "blk.%u.ffn_norm.weight", l, e, false);
	y->wq = mat(b, "blk.%u.attn_q.weight", l, q, e);
	y->wk = mat(b, "blk.%u.attn_k.weight", l, kv, e);
	y->wv = mat(b, "blk.%u.attn_v.weight", l, kv, e);
	y->wo = mat(b, "blk.%u.attn_output.weight", l, e, q);
	/* Biases are qwen2's, but any arch may carry them. */
	y->bq = vec(b, "blk.%u.attn_q.bias", l, q, m->arch != SYSHAX_ARCH_QWEN2);
	y->bk = vec(b, "blk.%u.attn_k.bias", l, kv, m->arch != SYSHAX_ARCH_QWEN2);
	y->bv = vec(b, "blk.%u.attn_v.bias", l, kv, m->arch != SYSHAX_ARCH_QWEN2);
	if (qwen3) {
		y->q_norm = vec(b, "blk.%u.attn_q_norm.weight", l, m->head_dim,
				false);
		y->k_norm = vec(b, "blk.%u.attn_k_norm.weight", l, m->head_dim,
				false);
	}
	if (m->n_expert) {
		y->router = mat(b, "blk.%u.ffn_gate_inp.weight", l, m->n_expert,
				e);
		if (!b->ret)
			bind_experts(b, m, l);
		return;
	}
	y->gate = mat(b, "blk.%u.ffn_gate.weight", l, m->n_ff, e);
	y->up = mat(b, "blk.%u.ffn_up.weight", l, m->n_ff, e);
	y->down = mat(b, "blk.%u.ffn_down.weight", l, e, m->n_ff);
}

int shxd_model_bind(struct shxd_wset *ws, const struct shxd_model *hp,
		    char *err, size_t errlen)
{
	struct bind b = { .ws = ws, .err = err, .errlen = errlen };
	struct shxd_model *m;

	m = calloc(1, sizeof(*m) + hp->n_layer * sizeof(m->layer[0]));
	if (!m)
		return -ENOMEM;
	memcpy(m, hp, sizeof(*m));
	m->embd = mat(&b, "token_embd.weight", 0, m->n_vocab, m->n_embd);
	m->output_norm = vec(&b, "output_norm.weight", 0, m->n_embd, false);
	m->output = shxd_wset_mat(ws, "output.weight", 0) ?
		    mat(&b, "output.weight", 0, m->n_vocab, m->n_embd) :
		    m->embd;	/* tied embeddings */
	for (unsigned int l = 0; l < m->n_layer && !b.ret; l++)
		bind_layer(&b, m, l);
	if (b.ret) {
		free(m);
		return b.ret;
	}
	ws->model = m;
	return 0;
}

void shxd_model_info(const struct shxd_wset *ws, struct syshax_model_info *mi)
{
	const struct shxd_model *m = ws->model;

	memset(mi, 0, sizeof(*mi));
	mi->model = ws->id;
	mi->arch = m->arch;
	mi->n_layer = m->n_layer;
	mi->n_embd = m->n_embd;
	mi->n_head = m->n_head;
	mi->n_head_kv = m->n_head_kv;
	mi->head_dim = m->head_dim;
	mi->n_ff = m->n_ff;
	mi->n_vocab = m->n_vocab;
	mi->n_expert = m->n_expert;
	mi->n_expert_used = m->n_expert_used;
	mi->n_ctx_train = m->n_ctx_train;
	memcpy(&mi->rope_base, &m->rope_base, 4);
	memcpy(&mi->rms_eps, &m->eps, 4);
	for (unsigned int p = 0; p < ws->npools; p++)
		mi->weight_bytes += shxd_wset_pool_bytes(ws, p);
}
