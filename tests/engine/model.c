// SPDX-License-Identifier: MIT
/*
 * MODEL_LOAD, PREFILL and DECODE: tiny llama (F16 weights, f32 KV), qwen2
 * (Q8_0, biases, f16 KV), qwen3 (BF16, q/k norms, bf16 KV) and qwen3moe
 * (Q4_0 experts, f32 KV) models written here; each step's logits against
 * an fp64 forward pass of the same weights (with the activation rounding
 * the kernels do, and K/V rounded to the cache type); a batch of sequences
 * in one job and jobs fetched together against the same sequences alone;
 * TOPK against LOGITS; a DECODE at a context long enough to be cut in
 * chunks; every malformed step and model refused with the engine still
 * serving; SYSHAX_JOB_MAY_DEFER answered by the dispatch rule.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shxk.h"
#include "t.h"
#include "wfile.h"

#define E	64	/* n_embd */
#define NH	4
#define NKV	2
#define HD	16
#define FF	96
#define NV	80	/* vocab */
#define NL	2
#define NEXP	4
#define TOPK	2
#define QD	(NH * HD)
#define KD	(NKV * HD)
#define EPS	1e-5
#define BS	4	/* block size */
#define NBLK	24	/* blocks per cache */
#define MAXB	6	/* blocks per sequence: 24 positions */

struct tmodel {
	const char *arch, *file;
	int dt;			/* matrices */
	int kvt;		/* KV cache type the test uses */
	bool bias, qknorm, moe, neox;
	double rope_base;
	struct tw w[64];
	size_t nw;
	uint64_t id;
	struct syshax_model_info info;
};

static struct tmodel g_m[] = {
	{ .arch = "llama", .file = "m-llama.gguf", .dt = SYSHAX_DT_F16,
	  .kvt = SYSHAX_DT_F32, .rope_base = 10000.0 },
	{ .arch = "qwen2", .file = "m-qwen2.gguf", .dt = SYSHAX_DT_Q8_0,
	  .kvt = SYSHAX_DT_F16, .bias = true, .neox = true,
	  .rope_base = 1000000.0 },
	{ .arch = "qwen3", .file = "m-qwen3.gguf", .dt = SYSHAX_DT_BF16,
	  .kvt = SYSHAX_DT_BF16, .qknorm = true, .neox = true,
	  .rope_base = 1000000.0 },
	{ .arch = "qwen3moe", .file = "m-qwen3moe.gguf", .dt = SYSHAX_DT_Q4_0,
	  .kvt = SYSHAX_DT_F32, .qknorm = true, .moe = true, .neox = true,
	  .rope_base = 1000000.0 },
};

static const struct tw *tensor(const struct tmodel *m, const char *fmt,
			       unsigned int l)
{
	char name[SYSHAX_TENSOR_NAME_MAX];

	snprintf(name, sizeof(name), fmt, l);
	for (size_t i = 0; i < m->nw; i++)
		if (!strcmp(m->w[i].name, name))
			return &m->w[i];
	return NULL;
}

static void mat(struct tmodel *m, struct trng *r, const char *fmt,
		unsigned int l, uint64_t k, uint64_t n, uint64_t ne2, int dt)
{
	char name[SYSHAX_TENSOR_NAME_MAX];

	snprintf(name, sizeof(name), fmt, l);
	tw_rand(&m->w[m->nw++], r, name, dt, ne2 > 1 ? 3 : 2, k, n, ne2,
		1.7 / sqrt((double)k));
}

static void vec(struct tmodel *m, struct trng *r, const char *fmt,
		unsigned int l, uint64_t n, double lo, double hi)
{
	char name[SYSHAX_TENSOR_NAME_MAX];

	snprintf(name, sizeof(name), fmt, l);
	tw_vec(&m->w[m->nw++], r, name, n, lo, hi);
}

static void make_model(struct tmodel *m, uint64_t seed)
{
	struct trng r;

	tr_seed(&r, seed);
	m->nw = 0;
	tw_rand(&m->w[m->nw++], &r, "token_embd.weight", m->dt, 2, E, NV, 1,
		1.7);
	vec(m, &r, "output_norm.weight", 0, E, 0.8, 1.2);
	mat(m, &r, "output.weight", 0, E, NV, 1, m->dt);
	for (unsigned int l = 0; l < NL; l++) {
		vec(m, &r, "blk.%u.attn_norm.weight", l, E, 0.8, 1.2);
		vec(m, &r, "blk.%u.ffn_norm.weight", l, E, 0.8, 1.2);
		mat(m, &r, "blk.%u.attn_q.weight", l, E, QD, 1, m->dt);
		mat(m, &r, "blk.%u.attn_k.weight", l, E, KD, 1, m->dt);
		mat(m, &r, "blk.%u.attn_v.weight", l, E, KD, 1, m->dt);
		mat(m, &r, "blk.%u.attn_output.weight", l, QD, E, 1, m->dt);
		if (m->bias) {
			vec(m, &r, "blk.%u.attn_q.bias", l, QD, -0.3, 0.3);
			vec(m, &r, "blk.%u.attn_k.bias", l, KD, -0.3, 0.3);
			vec(m, &r, "blk.%u.attn_v.bias", l, KD, -0.3, 0.3);
		}
		if (m->qknorm) {
			vec(m, &r, "blk.%u.attn_q_norm.weight", l, HD, 0.8, 1.2);
			vec(m, &r, "blk.%u.attn_k_norm.weight", l, HD, 0.8, 1.2);
		}
		if (m->moe) {
			mat(m, &r, "blk.%u.ffn_gate_inp.weight", l, E, NEXP, 1,
			    SYSHAX_DT_F32);
			mat(m, &r, "blk.%u.ffn_gate_exps.weight", l, E, FF, NEXP,
			    m->dt);
			mat(m, &r, "blk.%u.ffn_up_exps.weight", l, E, FF, NEXP,
			    m->dt);
			mat(m, &r, "blk.%u.ffn_down_exps.weight", l, FF, E, NEXP,
			    m->dt);
		} else {
			mat(m, &r, "blk.%u.ffn_gate.weight", l, E, FF, 1, m->dt);
			mat(m, &r, "blk.%u.ffn_up.weight", l, E, FF, 1, m->dt);
			mat(m, &r, "blk.%u.ffn_down.weight", l, FF, E, 1, m->dt);
		}
	}
}

/* The metadata llama.cpp reads, under the model's arch. */
static int write_model(const struct tmodel *m, const char *file,
		       const char *arch_key)
{
	char k[12][96];
	struct wf_wkv kv[14];
	size_t n = 0;

#define KEY(i, s) (snprintf(k[i], sizeof(k[i]), "%s." s, m->arch), k[i])
	kv[n++] = (struct wf_wkv)WF_KV_STR("general.architecture", arch_key);
	kv[n++] = (struct wf_wkv)WF_KV_U32(KEY(0, "block_count"), NL);
	kv[n++] = (struct wf_wkv)WF_KV_U32(KEY(1, "embedding_length"), E);
	kv[n++] = (struct wf_wkv)WF_KV_U32(KEY(2, "attention.head_count"), NH);
	kv[n++] = (struct wf_wkv)WF_KV_U32(KEY(3, "attention.head_count_kv"),
					   NKV);
	kv[n++] = (struct wf_wkv)WF_KV_F32(KEY(4, "rope.freq_base"),
					   m->rope_base);
	kv[n++] = (struct wf_wkv)WF_KV_F32(
		KEY(5, "attention.layer_norm_rms_epsilon"), EPS);
	kv[n++] = (struct wf_wkv)WF_KV_U32(KEY(6, "attention.key_length"), HD);
	if (m->moe) {
		kv[n++] = (struct wf_wkv)WF_KV_U32(KEY(7, "expert_count"), NEXP);
		kv[n++] = (struct wf_wkv)WF_KV_U32(KEY(8, "expert_used_count"),
						   TOPK);
		kv[n++] = (struct wf_wkv)WF_KV_U32(
			KEY(9, "expert_feed_forward_length"), FF);
	} else {
		kv[n++] = (struct wf_wkv)WF_KV_U32(KEY(7, "feed_forward_length"),
						   FF);
	}
#undef KEY
	return tw_write_gguf_kv(file, kv, n, m->w, m->nw);
}

static int model_load(const char *file, struct syshax_model_info *info,
		      uint64_t *id)
{
	struct syshax_model_load_params p = { .quantize = SYSHAX_QUANT_NONE };
	struct syshax_job job;
	void *out;

	snprintf(p.path, sizeof(p.path), "%s", file);
	tc_reset(&g_c);
	out = tc_alloc(&g_c, sizeof(*info));
	tj_init(&job, SYSHAX_OP_MODEL_LOAD, &p, sizeof(p));
	if (info)
		tj_ref(&job, &g_c, out, sizeof(*info), SYSHAX_ACCESS_WRITE);
	{
		int ret = tc_run1(&g_c, &job, id);

		if (!ret && info)
			memcpy(info, out, sizeof(*info));
		return ret;
	}
}

/* ---- the fp64 reference ---- */

/* One sequence's history: K and V per layer and position, as cached. */
struct rseq {
	double *k[NL], *v[NL];	/* [cap positions][KD] */
	int cap, kvt;
};

static void rseq_init(struct rseq *s, int kvt, int cap)
{
	s->kvt = kvt;
	s->cap = cap;
	for (int l = 0; l < NL; l++) {
		s->k[l] = calloc((size_t)cap * KD, sizeof(double));
		s->v[l] = calloc((size_t)cap * KD, sizeof(double));
		CU_ASSERT_FATAL(s->k[l] && s->v[l]);
	}
}

static void rseq_free(struct rseq *s)
{
	for (int l = 0; l < NL; l++) {
		free(s->k[l]);
		free(s->v[l]);
	}
}

static void rmsnorm(const double *x, const double *w, size_t k, double *y)
{
	ref_rmsnorm(x, w, EPS, k, y);
}

static void rope(const struct tmodel *m, double *x, size_t nh, int pos)
{
	for (size_t h = 0; h < nh; h++) {
		double *y = x + h * HD;

		for (size_t i = 0; i < HD / 2; i++) {
			double th = pos * pow(m->rope_base, -2.0 * i / HD);
			size_t a = m->neox ? i : 2 * i;
			size_t b = m->neox ? i + HD / 2 : 2 * i + 1;
			double x0 = y[a], x1 = y[b];

			y[a] = x0 * cos(th) - x1 * sin(th);
			y[b] = x0 * sin(th) + x1 * cos(th);
		}
	}
}

static void moe(const struct tmodel *m, unsigned int l, const double *h,
		double *out)
{
	double lg[NEXP], wt[TOPK], eo[E];
	int32_t ids[TOPK];

	ref_gemm(tensor(m, "blk.%u.ffn_gate_inp.weight", l), 0, h, 1, lg);
	ref_route(lg, NEXP, TOPK, true, ids, wt);
	memset(out, 0, E * sizeof(double));
	for (int s = 0; s < TOPK; s++) {
		ref_swiglu(tensor(m, "blk.%u.ffn_gate_exps.weight", l),
			   tensor(m, "blk.%u.ffn_up_exps.weight", l),
			   tensor(m, "blk.%u.ffn_down_exps.weight", l),
			   (size_t)ids[s], h, 1, eo);
		for (int i = 0; i < E; i++)
			out[i] += wt[s] * eo[i];
	}
}

static void attend(const struct rseq *s, unsigned int l, const double *q,
		   int pos, double *out)
{
	for (int h = 0; h < NH; h++) {
		const double *qh = q + h * HD;
		int kh = h / (NH / NKV);
		double *sc = calloc((size_t)pos + 1, sizeof(double));
		double mx = -INFINITY, sum = 0.0;

		CU_ASSERT_FATAL(sc != NULL);
		for (int p = 0; p <= pos; p++) {
			const double *kr = s->k[l] + (size_t)p * KD + kh * HD;

			for (int i = 0; i < HD; i++)
				sc[p] += qh[i] * kr[i];
			sc[p] /= sqrt((double)HD);
			mx = fmax(mx, sc[p]);
		}
		for (int p = 0; p <= pos; p++)
			sum += (sc[p] = exp(sc[p] - mx));
		for (int i = 0; i < HD; i++) {
			double o = 0.0;

			for (int p = 0; p <= pos; p++)
				o += sc[p] / sum *
				     s->v[l][(size_t)p * KD + kh * HD + i];
			out[h * HD + i] = o;
		}
		free(sc);
	}
}

static void bias(double *x, const struct tw *b, size_t n)
{
	for (size_t i = 0; b && i < n; i++)
		x[i] += b->ref[i];
}

/* One token of a sequence at pos: its K/V into s, logits out. */
static void ref_token(const struct tmodel *m, struct rseq *s, int tok,
		      int pos, double *logits)
{
	double x[E], h[E], q[QD], k[KD], v[KD], a[QD], o[E];
	const struct tw *embd = tensor(m, "token_embd.weight", 0);

	memcpy(x, embd->ref + (size_t)tok * E, sizeof(x));
	for (unsigned int l = 0; l < NL; l++) {
		rmsnorm(x, tensor(m, "blk.%u.attn_norm.weight", l)->ref, E, h);
		ref_gemm(tensor(m, "blk.%u.attn_q.weight", l), 0, h, 1, q);
		ref_gemm(tensor(m, "blk.%u.attn_k.weight", l), 0, h, 1, k);
		ref_gemm(tensor(m, "blk.%u.attn_v.weight", l), 0, h, 1, v);
		bias(q, tensor(m, "blk.%u.attn_q.bias", l), QD);
		bias(k, tensor(m, "blk.%u.attn_k.bias", l), KD);
		bias(v, tensor(m, "blk.%u.attn_v.bias", l), KD);
		if (m->qknorm) {
			for (int i = 0; i < NH; i++)
				rmsnorm(q + i * HD, tensor(m,
					"blk.%u.attn_q_norm.weight", l)->ref,
					HD, q + i * HD);
			for (int i = 0; i < NKV; i++)
				rmsnorm(k + i * HD, tensor(m,
					"blk.%u.attn_k_norm.weight", l)->ref,
					HD, k + i * HD);
		}
		rope(m, q, NH, pos);
		rope(m, k, NKV, pos);
		/* The cache holds them rounded to its type. */
		{
			float buf[KD];
			size_t at = (size_t)pos * KD;

			CU_ASSERT_FATAL(pos < s->cap);
			t_act_store(s->kvt, k, buf, KD, s->k[l] + at);
			t_act_store(s->kvt, v, buf, KD, s->v[l] + at);
		}
		attend(s, l, q, pos, a);
		ref_gemm(tensor(m, "blk.%u.attn_output.weight", l), 0, a, 1, o);
		for (int i = 0; i < E; i++)
			x[i] += o[i];
		rmsnorm(x, tensor(m, "blk.%u.ffn_norm.weight", l)->ref, E, h);
		if (m->moe)
			moe(m, l, h, o);
		else
			ref_swiglu(tensor(m, "blk.%u.ffn_gate.weight", l),
				   tensor(m, "blk.%u.ffn_up.weight", l),
				   tensor(m, "blk.%u.ffn_down.weight", l), 0, h,
				   1, o);
		for (int i = 0; i < E; i++)
			x[i] += o[i];
	}
	rmsnorm(x, tensor(m, "output_norm.weight", 0)->ref, E, h);
	ref_gemm(tensor(m, "output.weight", 0), 0, h, 1, logits);
}

/* ---- steps through the engine ---- */

/* A KV cache pair for up to 4 sequences, and the arrays of a step, in the
 * main buffer; sequence i owns blocks i*MAXB .. i*MAXB + MAXB-1 in
 * reverse order (so a wrong block table shows). */
struct tkv {
	void *k, *v;
	size_t bytes;
	int kvt;
	int32_t *bt;		/* a row of the step's max_blocks a sequence */
	int32_t *tok, *pos;	/* [16] */
	void *out;		/* 16 rows of logits */
};

static void tkv_alloc(struct tkv *c, int kvt)
{
	c->kvt = kvt;
	c->bytes = (size_t)NL * NBLK * BS * KD * t_act_size(kvt);
	c->k = tc_alloc(&g_c, c->bytes);
	c->v = tc_alloc(&g_c, c->bytes);
	c->bt = tc_alloc(&g_c, 4 * MAXB * 4);
	c->tok = tc_alloc(&g_c, 16 * 4);
	c->pos = tc_alloc(&g_c, 16 * 4);
	c->out = tc_alloc(&g_c, 16 * NV * 4);
	CU_ASSERT_FATAL(c->k && c->v && c->bt && c->tok && c->pos && c->out);
	for (int s = 0; s < 4; s++)
		for (int b = 0; b < MAXB; b++)
			c->bt[s * MAXB + b] = s * MAXB + (MAXB - 1 - b);
}

static struct syshax_step_params step_params(const struct tmodel *m,
					     const struct tkv *c, uint32_t n)
{
	return (struct syshax_step_params){
		.model = m->id, .n = n, .block_size = BS, .num_blocks = NBLK,
		.max_blocks = MAXB, .kv_type = (uint32_t)c->kvt,
	};
}

static void prefill_job(struct syshax_job *j, const struct syshax_step_params *p,
			const struct tkv *c, int seq, const int32_t *tok)
{
	tj_init(j, SYSHAX_OP_PREFILL, p, sizeof(*p));
	tj_ref(j, &g_c, tok, p->n * 4, SYSHAX_ACCESS_READ);
	tj_ref(j, &g_c, c->bt + seq * p->max_blocks, p->max_blocks * 4,
	       SYSHAX_ACCESS_READ);
	tj_ref(j, &g_c, c->k, c->bytes, SYSHAX_ACCESS_RW);
	tj_ref(j, &g_c, c->v, c->bytes, SYSHAX_ACCESS_RW);
	tj_ref(j, &g_c, c->out, 16 * NV * 4, SYSHAX_ACCESS_WRITE);
}

/* DECODE of rows [r0, r0 + n) of c's tok/pos/bt arrays, out rows too. */
static void decode_job(struct syshax_job *j, const struct syshax_step_params *p,
		       const struct tkv *c, int r0)
{
	/* A bad topk 0 still gets a ref the broker accepts. */
	size_t rb = p->out == SYSHAX_STEP_OUT_LOGITS ? NV * 4 :
		    p->topk ? p->topk * 8 : 8;

	tj_init(j, SYSHAX_OP_DECODE, p, sizeof(*p));
	tj_ref(j, &g_c, c->tok + r0, p->n * 4, SYSHAX_ACCESS_READ);
	tj_ref(j, &g_c, c->pos + r0, p->n * 4, SYSHAX_ACCESS_READ);
	tj_ref(j, &g_c, c->bt + r0 * p->max_blocks, p->n * p->max_blocks * 4,
	       SYSHAX_ACCESS_READ);
	tj_ref(j, &g_c, c->k, c->bytes, SYSHAX_ACCESS_RW);
	tj_ref(j, &g_c, c->v, c->bytes, SYSHAX_ACCESS_RW);
	tj_ref(j, &g_c, (uint8_t *)c->out + r0 * rb, p->n * rb,
	       SYSHAX_ACCESS_WRITE);
}

/* o: TOPK 5 of a row whose logits are lg: the five highest, in order. */
static void check_top5(const uint8_t *o, const float *lg)
{
	for (int i = 0; i < 5; i++) {
		int32_t id;
		float v;
		int above = 0;

		memcpy(&id, o + i * 8, 4);
		memcpy(&v, o + i * 8 + 4, 4);
		CU_ASSERT_FATAL(id >= 0 && id < NV);
		for (int j = 0; j < NV; j++)
			above += lg[j] > lg[id];
		CU_ASSERT_EQUAL(above, i);
		CU_ASSERT(fabsf(v - lg[id]) <= 1e-4f * (1 + fabsf(v)));
	}
}

static void check_logits(const struct tmodel *m, const char *what,
			 const float *y, const double *ref)
{
	char w[128];
	bool q = m->dt == SYSHAX_DT_Q8_0 || m->dt == SYSHAX_DT_Q4_0;

	snprintf(w, sizeof(w), "%s %s", m->arch, what);
	if (q)
		t_check_q(w, SYSHAX_DT_F32, y, ref, 1, NV, 1e-4, 5e-2);
	else
		t_check(w, SYSHAX_DT_F32, y, ref, 1, NV,
			m->dt == SYSHAX_DT_BF16 ? 2e-3 : 1e-4);
}

static const int32_t g_prompt[3][7] = {
	{ 5, 17, 42, 3, 77, 12, 9 },
	{ 60, 1, 2 },
	{ 33, 34, 35, 36, 37 },
};
static const int g_plen[3] = { 7, 3, 5 };

/*
 * Prefill three sequences (the first with every row's logits checked, the
 * others with their last row's only, as a prompt runs), then four decode
 * steps of all three in one job per step, each row checked; then the same
 * steps replayed as three jobs submitted together against the first run.
 */
static void run_model(struct tmodel *m)
{
	struct rseq rs[3];
	struct syshax_job jobs[3];
	struct syshax_completion cpl[3];
	struct syshax_step_params p;
	double ref[NV];
	float first[4][3][NV];
	struct tkv c;

	tc_reset(&g_c);
	tkv_alloc(&c, m->kvt);
	t_tally_begin();
	for (int s = 0; s < 3; s++) {
		int32_t *tok = c.tok + s * 5;

		rseq_init(&rs[s], m->kvt, MAXB * BS);
		memcpy(tok, g_prompt[s], g_plen[s] * 4);
		p = step_params(m, &c, (uint32_t)g_plen[s]);
		p.flags = s ? 0 : SYSHAX_STEP_ALL_ROWS;
		prefill_job(&jobs[0], &p, &c, s, tok);
		CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, jobs, 1, cpl), 0);
		CU_ASSERT_EQUAL(cpl[0].status, 0);
		CU_ASSERT_EQUAL(cpl[0].result, s ? 1 : (uint64_t)g_plen[s]);
		for (int i = 0; i < g_plen[s]; i++) {
			ref_token(m, &rs[s], g_prompt[s][i], i, ref);
			if (!s)
				check_logits(m, "prefill",
					     (float *)c.out + i * NV, ref);
		}
		if (s)
			check_logits(m, "prefill, last row", (float *)c.out,
				     ref);
	}
	/* The three sequences decode together: token 7*s + step + 1. */
	for (int step = 0; step < 4; step++) {
		for (int s = 0; s < 3; s++) {
			c.tok[s] = 7 * s + step + 1;
			c.pos[s] = g_plen[s] + step;
		}
		p = step_params(m, &c, 3);
		decode_job(&jobs[0], &p, &c, 0);
		CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, jobs, 1, cpl), 0);
		CU_ASSERT_EQUAL(cpl[0].status, 0);
		CU_ASSERT_EQUAL(cpl[0].result, 3);
		for (int s = 0; s < 3; s++) {
			ref_token(m, &rs[s], c.tok[s], c.pos[s], ref);
			check_logits(m, "decode", (float *)c.out + s * NV, ref);
			memcpy(first[step][s], (float *)c.out + s * NV,
			       sizeof(first[step][s]));
		}
	}
	t_tally_end(m->arch);
	/* Replay the decode steps as three jobs submitted together: the
	 * caches are rewritten with the same rows, the logits agree. */
	for (int step = 0; step < 4; step++) {
		for (int s = 0; s < 3; s++) {
			c.tok[s] = 7 * s + step + 1;
			c.pos[s] = g_plen[s] + step;
		}
		p = step_params(m, &c, 1);
		for (int s = 0; s < 3; s++)
			decode_job(&jobs[s], &p, &c, s);
		CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, jobs, 3, cpl), 0);
		for (int s = 0; s < 3; s++) {
			double d = 0.0, n = 0.0;
			const float *y = (float *)c.out + s * NV;

			CU_ASSERT_EQUAL(cpl[s].status, 0);
			for (int i = 0; i < NV; i++) {
				d += pow(y[i] - first[step][s][i], 2);
				n += pow(first[step][s][i], 2);
			}
			CU_ASSERT(sqrt(d) <= 1e-5 * sqrt(n));
		}
	}
	/* TOPK 5 of the last step: the five highest logits, in order; then
	 * of each sequence alone, whose vocabulary the workers cut in parts
	 * (merged by the engine thread). */
	p = step_params(m, &c, 3);
	p.out = SYSHAX_STEP_OUT_TOPK;
	p.topk = 5;
	decode_job(&jobs[0], &p, &c, 0);
	CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, jobs, 1, cpl), 0);
	CU_ASSERT_EQUAL(cpl[0].status, 0);
	for (int s = 0; s < 3; s++)
		check_top5((uint8_t *)c.out + s * 5 * 8, first[3][s]);
	p.n = 1;
	for (int s = 0; s < 3; s++) {
		decode_job(&jobs[0], &p, &c, s);
		CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, jobs, 1, cpl), 0);
		CU_ASSERT_EQUAL(cpl[0].status, 0);
		check_top5((uint8_t *)c.out + s * 5 * 8, first[3][s]);
	}
	for (int s = 0; s < 3; s++)
		rseq_free(&rs[s]);
}

static void t_models(void)
{
	for (size_t i = 0; i < T_ARRAY_SIZE(g_m); i++) {
		struct tmodel *m = &g_m[i];

		make_model(m, 100 + i);
		CU_ASSERT_EQUAL_FATAL(write_model(m, m->file, m->arch), 0);
		CU_ASSERT_EQUAL_FATAL(model_load(m->file, &m->info, &m->id), 0);
		CU_ASSERT_EQUAL(m->info.model, m->id);
		CU_ASSERT_EQUAL(m->info.n_layer, NL);
		CU_ASSERT_EQUAL(m->info.n_embd, E);
		CU_ASSERT_EQUAL(m->info.n_head_kv, NKV);
		CU_ASSERT_EQUAL(m->info.head_dim, HD);
		CU_ASSERT_EQUAL(m->info.n_vocab, NV);
		CU_ASSERT_EQUAL(m->info.n_expert, m->moe ? NEXP : 0);
		CU_ASSERT(m->info.weight_bytes > 0);
		run_model(m);
	}
}

/*
 * A DECODE at LONG_POS positions: past the size where the engine cuts
 * one sequence's attention into context chunks (merged after, heads
 * shared out over the threads), which run_model's short caches, cut by
 * kv heads, never reach. The cache is filled with random K and V (wide,
 * so that a few positions in each chunk dominate the softmax) instead of
 * a prefill of 20,000 tokens.
 */
#define LONG_POS	20000
#define LONG_BS		16

static void t_long_context(void)
{
	const struct tmodel *m = &g_m[0];
	const size_t nb = (LONG_POS + LONG_BS) / LONG_BS;
	const size_t lrows = nb * LONG_BS;	/* positions a layer holds */
	const struct shxk_kv_cache kv = { .type = SHXK_F32,
		.block_size = LONG_BS, .kv_heads = NKV, .head_dim = HD };
	struct syshax_step_params p = { .model = m->id, .n = 1,
		.block_size = LONG_BS, .num_blocks = (uint32_t)nb,
		.max_blocks = (uint32_t)nb, .kv_type = SYSHAX_DT_F32 };
	struct tkv c = { .bytes = NL * lrows * KD * sizeof(float),
			 .kvt = SYSHAX_DT_F32 };
	struct syshax_completion cpl;
	struct syshax_job job;
	size_t ranges, chunks;
	double ref[NV];
	struct trng r;
	struct rseq rs;

	CU_ASSERT_EQUAL_FATAL(m->kvt, SYSHAX_DT_F32);
	shxk_attn_split(&kv, 1, LONG_POS + 1, t_engine_threads(), &ranges,
			&chunks);
	/* One thread reads the context whole: nothing to merge. */
	CU_ASSERT_FATAL(chunks > 1 || t_engine_threads() == 1);
	tc_reset(&g_c);
	c.k = tc_alloc(&g_c, c.bytes);
	c.v = tc_alloc(&g_c, c.bytes);
	c.bt = tc_alloc(&g_c, nb * 4);
	c.tok = tc_alloc(&g_c, 4);
	c.pos = tc_alloc(&g_c, 4);
	c.out = tc_alloc(&g_c, NV * 4);
	CU_ASSERT_FATAL(c.k && c.v && c.bt && c.tok && c.pos && c.out);
	for (size_t b = 0; b < nb; b++)
		c.bt[b] = (int32_t)(nb - 1 - b);
	rseq_init(&rs, m->kvt, LONG_POS + 1);
	tr_seed(&r, 77);
	for (int l = 0; l < NL; l++)
		for (size_t i = 0; i < LONG_POS; i++) {
			size_t row = l * lrows + (size_t)c.bt[i / LONG_BS] *
				     LONG_BS + i % LONG_BS;

			t_act_rand(&r, SYSHAX_DT_F32, 4.0,
				   (float *)c.k + row * KD, KD, rs.k[l] + i * KD);
			t_act_rand(&r, SYSHAX_DT_F32, 1.0,
				   (float *)c.v + row * KD, KD, rs.v[l] + i * KD);
		}
	c.tok[0] = 11;
	c.pos[0] = LONG_POS;
	decode_job(&job, &p, &c, 0);
	CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, &job, 1, &cpl), 0);
	CU_ASSERT_EQUAL(cpl.status, 0);
	ref_token(m, &rs, c.tok[0], LONG_POS, ref);
	check_logits(m, "decode at 20,000 positions", c.out, ref);
	rseq_free(&rs);
}

/* One DECODE of the llama model with p (changed by the caller) and refs
 * changed by fix: its status. */
static int bad_decode(struct syshax_step_params p,
		      void (*fix)(struct syshax_job *j, struct tkv *c))
{
	struct syshax_job j;
	struct tkv c;

	tc_reset(&g_c);
	tkv_alloc(&c, g_m[0].kvt);
	c.tok[0] = 1;
	c.pos[0] = 0;
	decode_job(&j, &p, &c, 0);
	if (fix)
		fix(&j, &c);
	return tc_run1(&g_c, &j, NULL);
}

static void bad_token(struct syshax_job *j, struct tkv *c)
{
	(void)j;
	c->tok[0] = NV;
}

static void bad_pos(struct syshax_job *j, struct tkv *c)
{
	(void)j;
	c->pos[0] = MAXB * BS;
}

static void neg_pos(struct syshax_job *j, struct tkv *c)
{
	(void)j;
	c->pos[0] = -1;
}

static void bad_block(struct syshax_job *j, struct tkv *c)
{
	(void)j;
	c->bt[0] = NBLK;
}

static void short_k(struct syshax_job *j, struct tkv *c)
{
	j->refs[3].length = c->bytes - 1;
}

static void ro_v(struct syshax_job *j, struct tkv *c)
{
	(void)c;
	j->refs[4].access = SYSHAX_ACCESS_READ;
}

static void short_out(struct syshax_job *j, struct tkv *c)
{
	(void)c;
	j->refs[5].length = NV * 4 - 4;
}

static void few_refs(struct syshax_job *j, struct tkv *c)
{
	(void)c;
	memset(&j->refs[5], 0, sizeof(j->refs[5]));
	j->nr_refs = 5;
}

static void t_bad_steps(void)
{
	struct syshax_step_params p;
	struct tkv c;
	uint64_t wid;
	struct tw w;
	struct trng r;

	tc_reset(&g_c);
	tkv_alloc(&c, g_m[0].kvt);
	p = step_params(&g_m[0], &c, 1);
	CU_ASSERT_EQUAL(bad_decode(p, NULL), 0);
	CU_ASSERT_EQUAL(bad_decode(p, bad_token), -EINVAL);
	CU_ASSERT_EQUAL(bad_decode(p, bad_pos), -EINVAL);
	CU_ASSERT_EQUAL(bad_decode(p, neg_pos), -EINVAL);
	CU_ASSERT_EQUAL(bad_decode(p, bad_block), -EINVAL);
	CU_ASSERT_EQUAL(bad_decode(p, short_k), -ERANGE);
	CU_ASSERT_EQUAL(bad_decode(p, ro_v), -EINVAL);
	CU_ASSERT_EQUAL(bad_decode(p, short_out), -ERANGE);
	CU_ASSERT_EQUAL(bad_decode(p, few_refs), -EINVAL);
	p.model = 999999;
	CU_ASSERT_EQUAL(bad_decode(p, NULL), -ENOENT);
	p = step_params(&g_m[0], &c, 1);
	p.pos = 1;		/* DECODE takes positions from refs[1] */
	CU_ASSERT_EQUAL(bad_decode(p, NULL), -EINVAL);
	p = step_params(&g_m[0], &c, 1);
	p.kv_type = SYSHAX_DT_Q8_0;
	CU_ASSERT_EQUAL(bad_decode(p, NULL), -EINVAL);
	p = step_params(&g_m[0], &c, 1);
	p.out = SYSHAX_STEP_OUT_TOPK;	/* topk 0 */
	CU_ASSERT_EQUAL(bad_decode(p, NULL), -EINVAL);
	p.topk = SYSHAX_STEP_TOPK_MAX + 1;
	CU_ASSERT_EQUAL(bad_decode(p, NULL), -EINVAL);
	p = step_params(&g_m[0], &c, 1);
	p.flags = SYSHAX_STEP_ALL_ROWS;	/* PREFILL only */
	CU_ASSERT_EQUAL(bad_decode(p, NULL), -EINVAL);
	p = step_params(&g_m[0], &c, 1);
	p.reserved[2] = 1;
	CU_ASSERT_EQUAL(bad_decode(p, NULL), -EINVAL);
	p = step_params(&g_m[0], &c, 1);
	p.num_blocks = 0xffffffffu;	/* caches far past the refs */
	CU_ASSERT_EQUAL(bad_decode(p, NULL), -ERANGE);
	/* A weight set that is no model. */
	tr_seed(&r, 9);
	tw_rand(&w, &r, "x", SYSHAX_DT_F32, 2, 32, 8, 1, 1.0);
	CU_ASSERT_EQUAL_FATAL(tw_write_gguf("notamodel.gguf", &w, 1), 0);
	tw_free(&w);
	CU_ASSERT_EQUAL_FATAL(t_load_file(&g_c, "notamodel.gguf",
					  SYSHAX_QUANT_NONE, &wid), 0);
	p = step_params(&g_m[0], &c, 1);
	p.model = wid;
	CU_ASSERT_EQUAL(bad_decode(p, NULL), -EINVAL);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, wid), 0);
	/* PREFILL past the block table. */
	{
		struct syshax_job j;

		tc_reset(&g_c);
		tkv_alloc(&c, g_m[0].kvt);
		p = step_params(&g_m[0], &c, 3);
		p.pos = MAXB * BS - 2;
		prefill_job(&j, &p, &c, 0, c.tok);
		CU_ASSERT_EQUAL(tc_run1(&g_c, &j, NULL), -EINVAL);
		p.pos = MAXB * BS - 3;
		prefill_job(&j, &p, &c, 0, c.tok);
		CU_ASSERT_EQUAL(tc_run1(&g_c, &j, NULL), 0);
	}
}

/* Files MODEL_LOAD must refuse, each followed by a good step. */
static void t_bad_models(void)
{
	struct tmodel *m = &g_m[0];
	struct syshax_step_params p;
	struct tkv c;
	uint64_t id;
	FILE *f;
	long len;

	CU_ASSERT_EQUAL(write_model(m, "m-gpt2.gguf", "gpt2"), 0);
	CU_ASSERT_EQUAL(model_load("m-gpt2.gguf", NULL, &id), -EINVAL);
	/* A missing tensor: drop attn_k of layer 1. */
	for (size_t i = 0; i < m->nw; i++)
		if (!strcmp(m->w[i].name, "blk.1.attn_k.weight")) {
			struct tw t = m->w[i];

			m->w[i] = m->w[m->nw - 1];
			m->w[m->nw - 1] = t;
		}
	m->nw--;
	CU_ASSERT_EQUAL(write_model(m, "m-missing.gguf", "llama"), 0);
	CU_ASSERT_EQUAL(model_load("m-missing.gguf", NULL, &id), -EINVAL);
	m->nw++;
	/* A shape that does not fit: ffn_gate of layer 0 as [32 x E]. */
	{
		const struct tw *g = tensor(m, "blk.%u.ffn_gate.weight", 0);
		struct tw *gw = (struct tw *)g;
		uint64_t ne1 = gw->ne[1];

		gw->ne[1] = 32;
		gw->size = 32 * E * 2;
		CU_ASSERT_EQUAL(write_model(m, "m-shape.gguf", "llama"), 0);
		gw->ne[1] = ne1;
		gw->size = ne1 * E * 2;
		CU_ASSERT_EQUAL(model_load("m-shape.gguf", NULL, &id), -EINVAL);
	}
	/* Truncated: the good file less its last 100 bytes. */
	CU_ASSERT_EQUAL(write_model(m, "m-trunc.gguf", "llama"), 0);
	f = fopen(t_path("m-trunc.gguf"), "r+");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	CU_ASSERT_EQUAL(ftruncate(fileno(f), len - 100), 0);
	fclose(f);
	CU_ASSERT_EQUAL(model_load("m-trunc.gguf", NULL, &id), -EINVAL);
	/* Not GGUF at all. */
	f = fopen(t_path("m-text.gguf"), "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("this is not a model file, only some text\n", f);
	fclose(f);
	CU_ASSERT_EQUAL(model_load("m-text.gguf", NULL, &id), -EINVAL);
	CU_ASSERT_EQUAL(model_load("no-such.gguf", NULL, &id), -ENOENT);
	CU_ASSERT_EQUAL(model_load("/etc/passwd", NULL, &id), -EACCES);
	/* Still serving: a good decode step. */
	tc_reset(&g_c);
	tkv_alloc(&c, m->kvt);
	p = step_params(m, &c, 1);
	CU_ASSERT_EQUAL(bad_decode(p, NULL), 0);
}

static int report_xpu(uint32_t running, float tps)
{
	struct syshax_report_xpu_params p = {
		.running = running, .tokens_per_s = syshax_f32_bits(tps),
	};
	struct syshax_job j;

	tj_init(&j, SYSHAX_OP_REPORT_XPU, &p, sizeof(p));
	return tc_run1(&g_c, &j, NULL);
}

/* One MAY_DEFER decode step of one sequence: its completion flags. */
static uint32_t defer_step(struct tkv *c, int pos)
{
	struct syshax_step_params p = step_params(&g_m[0], c, 1);
	struct syshax_completion cpl;
	struct syshax_job j;

	c->tok[0] = 3;
	c->pos[0] = pos;
	decode_job(&j, &p, c, 0);
	j.flags = SYSHAX_JOB_MAY_DEFER;
	CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, &j, 1, &cpl), 0);
	CU_ASSERT_EQUAL(cpl.status, 0);
	CU_ASSERT_EQUAL(cpl.result, cpl.flags ? 0 : 1);
	return cpl.flags;
}

/* The dispatch rule end to end: branches whose outcome does not depend on
 * timing (docs/dispatch.md); the unit test has them all. */
static void t_dispatch(void)
{
	struct syshax_engine_stats a, b;
	const struct timespec idle = { 2, 200000000 };	/* past the window */
	struct tkv c;
	float *k;

	tc_reset(&g_c);
	tkv_alloc(&c, g_m[0].kvt);
	/* Where position 0's K goes (layer 0, f32 cache). */
	k = (float *)c.k + (size_t)c.bt[0] * BS * KD;
	k[0] = 12345.0f;
	CU_ASSERT_EQUAL_FATAL(t_engine_stats(&g_c, &a), 0);
	CU_ASSERT_EQUAL(report_xpu(0, 0.0f), 0);
	/* The xPU runs nothing: deferred, nothing run or written. */
	CU_ASSERT_EQUAL(defer_step(&c, 0), SYSHAX_CPL_DEFERRED);
	CU_ASSERT_EQUAL(k[0], 12345.0f);
	/* xPU busy, CPU idle (nothing in the last 2 s): the CPU. */
	CU_ASSERT_EQUAL(report_xpu(4, 1e9f), 0);
	nanosleep(&idle, NULL);
	CU_ASSERT_EQUAL(defer_step(&c, 0), 0);
	CU_ASSERT_NOT_EQUAL(k[0], 12345.0f);
	/* Now both run; the xPU is far faster per request: deferred. */
	CU_ASSERT_EQUAL(defer_step(&c, 1), SYSHAX_CPL_DEFERRED);
	/* The xPU crawls (0 tokens/s): the CPU. */
	CU_ASSERT_EQUAL(report_xpu(4, 0.0f), 0);
	CU_ASSERT_EQUAL(defer_step(&c, 1), 0);
	CU_ASSERT_EQUAL(report_xpu(1, -1.0f), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(t_engine_stats(&g_c, &b), 0);
	CU_ASSERT_EQUAL(b.decode_deferred - a.decode_deferred, 2);
	CU_ASSERT_EQUAL(b.decode_kept - a.decode_kept, 2);
	CU_ASSERT_EQUAL(b.xpu_reports - a.xpu_reports, 3);
	CU_ASSERT(b.op[4][0].jobs > a.op[4][0].jobs);
	/* Leave no report behind for later suites. */
	CU_ASSERT_EQUAL(report_xpu(0, 0.0f), 0);
}

/*
 * Two sequences with one prompt, one prefilled through model a and one
 * through b (the same file loaded twice), then a DECODE of each, both
 * submitted together: they run as one batch (one batched run, two jobs)
 * and both rows' logits are the fp64 model's.
 */
static void decode_across(struct tmodel *m, uint64_t a, uint64_t b)
{
	struct rseq rs;
	struct syshax_job jobs[2];
	struct syshax_completion cpl[2];
	struct syshax_step_params p;
	uint64_t j0, b0, j1, b1;
	double ref[NV];
	struct tkv c;

	tc_reset(&g_c);
	tkv_alloc(&c, m->kvt);
	rseq_init(&rs, m->kvt, MAXB * BS);
	for (int s = 0; s < 2; s++) {
		memcpy(c.tok + s * 5, g_prompt[1], g_plen[1] * 4);
		p = step_params(m, &c, (uint32_t)g_plen[1]);
		p.model = s ? b : a;
		prefill_job(&jobs[0], &p, &c, s, c.tok + s * 5);
		CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, jobs, 1, cpl), 0);
		CU_ASSERT_EQUAL(cpl[0].status, 0);
	}
	for (int i = 0; i < g_plen[1]; i++)
		ref_token(m, &rs, g_prompt[1][i], i, ref);
	t_op_stats(&g_c, SYSHAX_OP_DECODE, &j0, &b0);
	p = step_params(m, &c, 1);
	for (int s = 0; s < 2; s++) {
		c.tok[s] = 9;
		c.pos[s] = g_plen[1];
		p.model = s ? b : a;
		decode_job(&jobs[s], &p, &c, s);
	}
	CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, jobs, 2, cpl), 0);
	t_op_stats(&g_c, SYSHAX_OP_DECODE, &j1, &b1);
	CU_ASSERT_EQUAL(j1 - j0, 2);
	CU_ASSERT_EQUAL(b1 - b0, 1);
	ref_token(m, &rs, 9, g_plen[1], ref);
	for (int s = 0; s < 2; s++) {
		CU_ASSERT_EQUAL(cpl[s].status, 0);
		check_logits(m, "decode across two loads", (float *)c.out + s * NV,
			     ref);
	}
	rseq_free(&rs);
}

/*
 * The llama model loaded again shares the first load's weights (listed
 * once, the same weight_bytes) and decodes in one batch with it; with
 * the first freed, the second runs every step of run_model against fp64
 * as the first did. A WEIGHTS_LOAD of the file, kept as it is, shares
 * them too.
 */
static void t_shared_model(void)
{
	struct tmodel *m = &g_m[0];
	struct syshax_model_info info;
	uint64_t id = 0, ws = 0, bytes = t_wset_bytes(&g_c, m->id);

	CU_ASSERT_FATAL(bytes > 0 && bytes != UINT64_MAX);
	CU_ASSERT_EQUAL_FATAL(model_load(m->file, &info, &id), 0);
	CU_ASSERT(id > m->id);
	CU_ASSERT_EQUAL(info.model, id);
	CU_ASSERT_EQUAL(info.weight_bytes, m->info.weight_bytes);
	CU_ASSERT_EQUAL(t_wset_bytes(&g_c, id), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, m->file, SYSHAX_QUANT_NONE, &ws), 0);
	CU_ASSERT_EQUAL(t_wset_bytes(&g_c, ws), 0);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, ws), 0);
	decode_across(m, m->id, id);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, m->id), 0);
	m->id = id;
	CU_ASSERT_EQUAL(t_wset_bytes(&g_c, id), bytes);
	run_model(m);
}

static void t_free_models(void)
{
	for (size_t i = 0; i < T_ARRAY_SIZE(g_m); i++) {
		CU_ASSERT_EQUAL(t_free_wset(&g_c, g_m[i].id), 0);
		for (size_t j = 0; j < g_m[i].nw; j++)
			tw_free(&g_m[i].w[j]);
		g_m[i].nw = 0;
	}
}

int t_add_model(void)
{
	CU_pSuite s = CU_add_suite("MODEL_LOAD, PREFILL, DECODE, dispatch",
				   NULL, NULL);

	if (!s || !CU_add_test(s, "four architectures against fp64",
			       t_models) ||
	    !CU_add_test(s, "a decode at a context cut in chunks",
			 t_long_context) ||
	    !CU_add_test(s, "malformed steps refused", t_bad_steps) ||
	    !CU_add_test(s, "malformed models refused", t_bad_models) ||
	    !CU_add_test(s, "MAY_DEFER and REPORT_XPU", t_dispatch) ||
	    !CU_add_test(s, "a model loaded twice shares its weights",
			 t_shared_model) ||
	    !CU_add_test(s, "free the models", t_free_models))
		return -1;
	return 0;
}
