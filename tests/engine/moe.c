// SPDX-License-Identifier: MIT
/*
 * MOE: 8 experts stacked 3-D as GGUF stores them (blk.L.ffn_gate_exps.weight
 * ne = {hidden, n_ff, n_expert}), top-2 routing by IDS (the client's ids
 * and weights), LOGITS (the client's logits) and ROUTER (ffn_gate_inp),
 * softmax with and without NORM_TOPK, the SHARED expert gated by a 1-D
 * ffn_gate_inp_shexp (layer 0, q8_0 experts) or ungated (layer 1, f16
 * experts, no gate tensor), NORM and RESIDUAL, m 1 and 17, and one job of
 * m 150 whose 300 expert rows and 150 shared ones run as several segment
 * groups (the engine's groups take 256 rows at most). The 18 jobs of
 * a layer go in one submit: jobs with equal flags batch, routes mixed.
 *
 * The logits the test gives or the router computes are kept at least
 * 1e-3 apart between the 2nd and 3rd expert of every token, so the f32
 * softmax picks the experts the fp64 reference picks (f32 router error
 * ~1e-6), but for one token of each m = 17 LOGITS job with exact ties
 * (the lower id wins). IDS tokens 4, 9, 14 name one expert twice. Tolerances as FFN (ffn.c): 1e-4 of each row's norm plus the
 * output rounding, with q8_0 experts every row within 2e-2 and at most
 * 10 % beyond 1e-4. A wrong expert or expert weight, weights not
 * renormalized, a missing shared expert or gate is off by > 0.05.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "wfile.h"

#define MOE_TOL		1e-4
#define MOE_LOOSE	2e-2
#define NEXP		8
#define TOPK		2
#define HID		64
#define NFF		96
#define NFF_SH		128
#define MARGIN		1e-3

enum { W_GATE, W_UP, W_DOWN, W_NORM, W_ROUTER, W_SGATE, W_SUP, W_SDOWN,
       W_SGINP, W_N };

struct mlayer {
	unsigned int idx;
	int dt;
	bool sgate;		/* has ffn_gate_inp_shexp */
	struct tw w[W_N];
};

static struct mlayer g_l[2] = {
	{ .idx = 0, .dt = SYSHAX_DT_Q8_0, .sgate = true },
	{ .idx = 1, .dt = SYSHAX_DT_F16, .sgate = false },
};
static uint64_t g_id;

static void make_mlayer(struct mlayer *l, struct trng *r)
{
	char n[96];
	unsigned int L = l->idx;

#define NAME(fmt) (snprintf(n, sizeof(n), fmt, L), n)
	tw_rand(&l->w[W_GATE], r, NAME("blk.%u.ffn_gate_exps.weight"), l->dt,
		3, HID, NFF, NEXP, 2.5 / sqrt(HID));
	tw_rand(&l->w[W_UP], r, NAME("blk.%u.ffn_up_exps.weight"), l->dt, 3,
		HID, NFF, NEXP, 2.5 / sqrt(HID));
	tw_rand(&l->w[W_DOWN], r, NAME("blk.%u.ffn_down_exps.weight"), l->dt,
		3, NFF, HID, NEXP, 4.0 / sqrt(NFF));
	tw_vec(&l->w[W_NORM], r, NAME("blk.%u.ffn_norm.weight"), HID, 0.5,
	       1.5);
	tw_rand(&l->w[W_ROUTER], r, NAME("blk.%u.ffn_gate_inp.weight"),
		SYSHAX_DT_F32, 2, HID, NEXP, 1, 3.0 / sqrt(HID));
	tw_rand(&l->w[W_SGATE], r, NAME("blk.%u.ffn_gate_shexp.weight"), l->dt,
		2, HID, NFF_SH, 1, 2.5 / sqrt(HID));
	tw_rand(&l->w[W_SUP], r, NAME("blk.%u.ffn_up_shexp.weight"), l->dt, 2,
		HID, NFF_SH, 1, 2.5 / sqrt(HID));
	tw_rand(&l->w[W_SDOWN], r, NAME("blk.%u.ffn_down_shexp.weight"), l->dt,
		2, NFF_SH, HID, 1, 4.0 / sqrt(NFF_SH));
	tw_vec(&l->w[W_SGINP], r, NAME("blk.%u.ffn_gate_inp_shexp.weight"),
	       HID, -0.3, 0.3);
#undef NAME
}

static int moe_make(void)
{
	struct tw all[2 * W_N];
	struct trng r;
	size_t n = 0;

	tr_seed(&r, 3);
	for (int i = 0; i < 2; i++) {
		make_mlayer(&g_l[i], &r);
		for (int k = 0; k < W_N; k++)
			if (k != W_SGINP || g_l[i].sgate)
				all[n++] = g_l[i].w[k];
	}
	return tw_write_gguf("moe.gguf", all, n) ? -1 : 0;
}

static void t_moe_free(void)
{
	CU_ASSERT_EQUAL(t_free_wset(&g_c, g_id), 0);
	g_id = 0;
}

static int moe_clean(void)
{
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < W_N; k++)
			tw_free(&g_l[i].w[k]);
	return 0;
}

static void t_moe_load(void)
{
	CU_ASSERT_EQUAL_FATAL(moe_make(), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "moe.gguf", SYSHAX_QUANT_DEFAULT,
				    &g_id), 0);
	CU_ASSERT(g_id >= 1);
}

/* The reference route of a row (ref_route); the gap between the k-th
 * and the next logit. */
static double route_row(const double *l, bool renorm, int32_t *ids,
			double *wts)
{
	double next = -INFINITY;

	ref_route(l, NEXP, TOPK, renorm, ids, wts);
	for (int e = 0; e < NEXP; e++)
		if (e != ids[0] && e != ids[1])
			next = fmax(next, l[e]);
	return l[ids[TOPK - 1]] - next;
}

/* h of one token. */
static void moe_h(const struct mlayer *l, uint32_t flags, const double *x,
		  double *h)
{
	if (flags & SYSHAX_MOE_NORM)
		ref_rmsnorm(x, l->w[W_NORM].ref, 1e-6, HID, h);
	else
		memcpy(h, x, HID * sizeof(*h));
}

/* The router's logits of one token (F32 weights: f32 activations). */
static void moe_logits(const struct mlayer *l, const double *h, double *lg)
{
	ref_gemm(&l->w[W_ROUTER], 0, h, 1, lg);
}

/* y of one token, routed by ids/wts. */
static void moe_ref_row(const struct mlayer *l, uint32_t flags,
			const double *x, const int32_t *ids,
			const double *wts, double *y)
{
	double h[HID], o[HID];

	moe_h(l, flags, x, h);
	memset(y, 0, HID * sizeof(*y));
	for (int s = 0; s < TOPK; s++) {
		ref_swiglu(&l->w[W_GATE], &l->w[W_UP], &l->w[W_DOWN],
			   (size_t)ids[s], h, 1, o);
		for (int i = 0; i < HID; i++)
			y[i] += wts[s] * o[i];
	}
	if (flags & SYSHAX_MOE_SHARED) {
		double g = 1.0, dot = 0.0;

		ref_swiglu(&l->w[W_SGATE], &l->w[W_SUP], &l->w[W_SDOWN], 0, h,
			   1, o);
		if (l->sgate) {
			for (int i = 0; i < HID; i++)
				dot += h[i] * l->w[W_SGINP].ref[i];
			g = 1.0 / (1.0 + exp(-dot));
		}
		for (int i = 0; i < HID; i++)
			y[i] += g * o[i];
	}
	if (flags & SYSHAX_MOE_RESIDUAL)
		for (int i = 0; i < HID; i++)
			y[i] += x[i];
}

struct mjob {
	uint32_t route, flags;
	unsigned int m;
	int xt, yt;
	void *x, *y, *ids, *wts, *logits;
	double *xd;
	int32_t *rid;		/* the reference's choices, m x TOPK */
	double *rwt;
};

/* Inputs of one job; for LOGITS and ROUTER, rows are drawn again until
 * the top-2 is clear by MARGIN. */
static void moe_inputs(const struct mlayer *l, struct mjob *j, struct trng *r)
{
	size_t xs = t_act_size(j->xt);
	bool renorm = j->flags & SYSHAX_MOE_NORM_TOPK;

	j->xd = malloc(j->m * HID * sizeof(double));
	j->rid = malloc(j->m * TOPK * sizeof(int32_t));
	j->rwt = malloc(j->m * TOPK * sizeof(double));
	j->x = tc_alloc(&g_c, j->m * HID * xs);
	j->y = tc_alloc(&g_c, j->m * HID * t_act_size(j->yt) + 64);
	CU_ASSERT_FATAL(j->xd && j->rid && j->rwt && j->x && j->y);
	t_sentinel((uint8_t *)j->y + j->m * HID * t_act_size(j->yt), 64);
	if (j->route == SYSHAX_MOE_ROUTE_IDS) {
		j->ids = tc_alloc(&g_c, j->m * TOPK * 4);
		j->wts = tc_alloc(&g_c, j->m * TOPK * 4);
		CU_ASSERT_FATAL(j->ids && j->wts);
	} else if (j->route == SYSHAX_MOE_ROUTE_LOGITS) {
		j->logits = tc_alloc(&g_c, j->m * NEXP * 4);
		CU_ASSERT_FATAL(j->logits != NULL);
	}
	for (unsigned int t = 0; t < j->m; t++) {
		double *xd = j->xd + t * HID, lg[NEXP], h[HID];
		int32_t *id = j->rid + t * TOPK;
		double *wt = j->rwt + t * TOPK;
		int tries = 0;

		for (;;) {
			t_act_rand(r, j->xt, 1.0, (uint8_t *)j->x + t * HID * xs,
				   HID, xd);
			if (j->route == SYSHAX_MOE_ROUTE_IDS) {
				int32_t *ci = (int32_t *)j->ids + t * TOPK;
				float *cw = (float *)j->wts + t * TOPK;

				id[0] = (int32_t)(tr_u32(r) % NEXP);
				id[1] = (id[0] + 1 + (int32_t)(tr_u32(r) %
							      (NEXP - 1))) %
					NEXP;
				/* The ids are the client's: one expert twice
				 * is its choice, and counts twice. */
				if (t % 5 == 4)
					id[1] = id[0];
				for (int s = 0; s < TOPK; s++) {
					ci[s] = id[s];
					cw[s] = (float)(0.6 + 0.4 * tr_unif(r));
					wt[s] = cw[s];
				}
				break;
			}
			if (j->route == SYSHAX_MOE_ROUTE_LOGITS && t == 1) {
				/* Exact ties: 3 first, then 1 and 6 tie (the
				 * lower id wins), and 0, 2, 4 tie below. */
				static const float tie[NEXP] = {
					-1.0f, 0.5f, -1.0f, 1.25f, -1.0f, -2.0f,
					0.5f, -3.0f,
				};
				float *cl = (float *)j->logits + t * NEXP;

				for (int e = 0; e < NEXP; e++)
					lg[e] = cl[e] = tie[e];
				route_row(lg, renorm, id, wt);
				CU_ASSERT(id[0] == 3 && id[1] == 1);
				break;
			}
			if (j->route == SYSHAX_MOE_ROUTE_LOGITS) {
				float *cl = (float *)j->logits + t * NEXP;

				for (int e = 0; e < NEXP; e++) {
					cl[e] = (float)(2.0 * tr_unif(r));
					lg[e] = cl[e];
				}
			} else {
				moe_h(l, j->flags, xd, h);
				moe_logits(l, h, lg);
			}
			if (route_row(lg, renorm, id, wt) > MARGIN)
				break;
			CU_ASSERT_FATAL(++tries < 100);
		}
	}
}

static void moe_layer(const struct mlayer *l, struct trng *r)
{
	enum { NJ = 18 };
	static const uint32_t fl[3] = {
		SYSHAX_MOE_NORM | SYSHAX_MOE_NORM_TOPK | SYSHAX_MOE_SHARED |
		SYSHAX_MOE_RESIDUAL,
		0,
		SYSHAX_MOE_SHARED | SYSHAX_MOE_NORM_TOPK,
	};
	struct syshax_job jobs[NJ];
	struct syshax_completion cpl[NJ];
	struct mjob mj[NJ];

	tc_reset(&g_c);
	t_tally_begin();
	memset(mj, 0, sizeof(mj));
	for (int i = 0; i < NJ; i++) {
		struct mjob *j = &mj[i];
		struct syshax_moe_params p = {
			.wset = g_id, .layer = l->idx, .topk = TOPK,
		};

		j->route = (uint32_t)(i % 3);
		/* The last: more rows than one group of segments takes. */
		j->m = i == NJ - 1 ? 150 : i / 3 % 2 ? 17 : 1;
		j->flags = fl[i / 6];
		j->xt = (i + i / 3) % 3;
		j->yt = (i / 2) % 3;
		moe_inputs(l, j, r);
		p.m = j->m;
		p.x_type = (uint32_t)j->xt;
		p.y_type = (uint32_t)j->yt;
		p.flags = j->flags;
		p.route = j->route;
		tj_init(&jobs[i], SYSHAX_OP_MOE, &p, sizeof(p));
		tj_ref(&jobs[i], &g_c, j->x, j->m * HID * t_act_size(j->xt),
		       SYSHAX_ACCESS_READ);
		tj_ref(&jobs[i], &g_c, j->y, j->m * HID * t_act_size(j->yt),
		       SYSHAX_ACCESS_WRITE);
		if (j->route == SYSHAX_MOE_ROUTE_IDS) {
			tj_ref(&jobs[i], &g_c, j->ids, j->m * TOPK * 4,
			       SYSHAX_ACCESS_READ);
			tj_ref(&jobs[i], &g_c, j->wts, j->m * TOPK * 4,
			       SYSHAX_ACCESS_READ);
		} else if (j->route == SYSHAX_MOE_ROUTE_LOGITS) {
			tj_ref(&jobs[i], &g_c, j->logits, j->m * NEXP * 4,
			       SYSHAX_ACCESS_READ);
		}
	}
	if (tc_run(&g_c, jobs, NJ, cpl))
		goto out;
	for (int i = 0; i < NJ; i++) {
		struct mjob *j = &mj[i];
		double *ref = malloc(j->m * HID * sizeof(double));
		static const char *const rn[] = { "ids", "logits", "router" };
		char what[160];

		CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
		CU_ASSERT_EQUAL(cpl[i].status, 0);
		CU_ASSERT_EQUAL(cpl[i].result, j->m);
		for (unsigned int t = 0; t < j->m; t++)
			moe_ref_row(l, j->flags, j->xd + t * HID,
				    j->rid + t * TOPK, j->rwt + t * TOPK,
				    ref + t * HID);
		snprintf(what, sizeof(what), "MOE layer %u (%s) route %s m=%u "
			 "flags=%#x x=%s y=%s", l->idx, t_dt_name(l->dt),
			 rn[j->route], j->m, j->flags, t_dt_name(j->xt),
			 t_dt_name(j->yt));
		if (cpl[i].status)
			;
		else if (l->dt == SYSHAX_DT_Q8_0)
			t_check_q(what, j->yt, j->y, ref, j->m, HID, MOE_TOL,
				  MOE_LOOSE);
		else
			t_check(what, j->yt, j->y, ref, j->m, HID, MOE_TOL);
		CU_ASSERT(t_sentinel_ok((uint8_t *)j->y +
					j->m * HID * t_act_size(j->yt), 64));
		free(ref);
	}
	t_tally_end("MOE rows");
out:
	for (int i = 0; i < NJ; i++) {
		free(mj[i].xd);
		free(mj[i].rid);
		free(mj[i].rwt);
	}
}

static void t_moe_q8(void)
{
	struct trng r;

	CU_ASSERT_FATAL(g_id != 0);
	tr_seed(&r, 31);
	moe_layer(&g_l[0], &r);
}

static void t_moe_f16(void)
{
	struct trng r;

	CU_ASSERT_FATAL(g_id != 0);
	tr_seed(&r, 32);
	moe_layer(&g_l[1], &r);
}

/*
 * A Hugging Face (Qwen2-MoE) layer in safetensors: one tensor per expert
 * (model.layers.0.mlp.experts.<e>.<kind>_proj.weight), the router
 * mlp.gate, the shared expert and its gate mlp.shared_expert_gate as
 * nn.Linear(hidden, 1) stores it: [1 x hidden]. Renamed on load; the gate
 * must gate (it is GGUF's 1-D ffn_gate_inp_shexp).
 */
static void t_moe_hf(void)
{
	static const char *const kinds[3] = { "gate", "up", "down" };
	enum { NT = 3 * NEXP + 6, M = 5 };
	struct wf_wtensor t[NT];
	char names[NT][96];
	struct syshax_completion cpl;
	struct syshax_job job;
	struct mlayer l = { .idx = 0, .dt = SYSHAX_DT_BF16, .sgate = true };
	struct mjob j = { .route = SYSHAX_MOE_ROUTE_ROUTER, .m = M,
			  .xt = SYSHAX_DT_F32, .yt = SYSHAX_DT_F32,
			  .flags = SYSHAX_MOE_NORM | SYSHAX_MOE_NORM_TOPK |
				   SYSHAX_MOE_SHARED | SYSHAX_MOE_RESIDUAL };
	struct syshax_moe_params p = {
		.m = M, .x_type = SYSHAX_DT_F32, .y_type = SYSHAX_DT_F32,
		.flags = j.flags, .route = SYSHAX_MOE_ROUTE_ROUTER,
		.topk = TOPK,
	};
	double ref[M * HID];
	size_t n = 0;
	struct trng r;
	uint64_t id = 0;

	tr_seed(&r, 33);
	tw_rand(&l.w[W_GATE], &r, "g", l.dt, 3, HID, NFF, NEXP, 2.5 / sqrt(HID));
	tw_rand(&l.w[W_UP], &r, "u", l.dt, 3, HID, NFF, NEXP, 2.5 / sqrt(HID));
	tw_rand(&l.w[W_DOWN], &r, "d", l.dt, 3, NFF, HID, NEXP, 4.0 / sqrt(NFF));
	tw_vec(&l.w[W_NORM], &r, "n", HID, 0.5, 1.5);
	tw_rand(&l.w[W_ROUTER], &r, "r", SYSHAX_DT_F32, 2, HID, NEXP, 1,
		3.0 / sqrt(HID));
	tw_rand(&l.w[W_SGATE], &r, "sg", l.dt, 2, HID, NFF_SH, 1,
		2.5 / sqrt(HID));
	tw_rand(&l.w[W_SUP], &r, "su", l.dt, 2, HID, NFF_SH, 1, 2.5 / sqrt(HID));
	tw_rand(&l.w[W_SDOWN], &r, "sd", l.dt, 2, NFF_SH, HID, 1,
		4.0 / sqrt(NFF_SH));
	tw_rand(&l.w[W_SGINP], &r, "sgi", SYSHAX_DT_F32, 2, HID, 1, 1, 0.3);
	memset(t, 0, sizeof(t));
	for (int e = 0; e < NEXP; e++) {
		for (int k = 0; k < 3; k++, n++) {
			const struct tw *w = &l.w[W_GATE + k];
			size_t sz = w->size / NEXP;

			snprintf(names[n], 96, "model.layers.0.mlp.experts.%d."
				 "%s_proj.weight", e, kinds[k]);
			t[n] = (struct wf_wtensor){
				.name = names[n], .dtype = "BF16", .ndim = 2,
				.ne = { w->ne[0], w->ne[1] },
				.data = (const uint8_t *)w->data + e * sz,
				.size = sz,
			};
		}
	}
	{
		static const struct { const char *name; int w; } one[] = {
			{ "model.layers.0.mlp.gate.weight", W_ROUTER },
			{ "model.layers.0.mlp.shared_expert.gate_proj.weight",
			  W_SGATE },
			{ "model.layers.0.mlp.shared_expert.up_proj.weight",
			  W_SUP },
			{ "model.layers.0.mlp.shared_expert.down_proj.weight",
			  W_SDOWN },
			{ "model.layers.0.mlp.shared_expert_gate.weight",
			  W_SGINP },
			{ "model.layers.0.post_attention_layernorm.weight",
			  W_NORM },
		};

		for (size_t i = 0; i < T_ARRAY_SIZE(one); i++, n++) {
			const struct tw *w = &l.w[one[i].w];

			t[n] = (struct wf_wtensor){
				.name = one[i].name, .ndim = w->ndim,
				.dtype = w->dt == SYSHAX_DT_F32 ? "F32" : "BF16",
				.ne = { w->ne[0], w->ne[1] },
				.data = w->data, .size = w->size,
			};
		}
	}
	CU_ASSERT_EQUAL_FATAL(wf_st_write(t_path("moe-hf.safetensors"), t, n), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "moe-hf.safetensors",
				    SYSHAX_QUANT_NONE, &id), 0);
	if (id) {
		tc_reset(&g_c);
		moe_inputs(&l, &j, &r);
		p.wset = id;
		tj_init(&job, SYSHAX_OP_MOE, &p, sizeof(p));
		tj_ref(&job, &g_c, j.x, M * HID * 4, SYSHAX_ACCESS_READ);
		tj_ref(&job, &g_c, j.y, M * HID * 4, SYSHAX_ACCESS_WRITE);
		if (!tc_run(&g_c, &job, 1, &cpl)) {
			CU_ASSERT_EQUAL(cpl.status, 0);
			for (unsigned int i = 0; i < M; i++)
				moe_ref_row(&l, j.flags, j.xd + i * HID,
					    j.rid + i * TOPK, j.rwt + i * TOPK,
					    ref + i * HID);
			if (!cpl.status)
				t_check("MOE from Hugging Face safetensors",
					SYSHAX_DT_F32, j.y, ref, M, HID,
					MOE_TOL);
		}
		CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
	}
	free(j.xd);
	free(j.rid);
	free(j.rwt);
	for (int k = 0; k < W_N; k++)
		tw_free(&l.w[k]);
}

int t_add_moe(void)
{
	CU_pSuite s = CU_add_suite("MOE", NULL, moe_clean);

	if (!s || !CU_add_test(s, "load the GGUF (3-D expert stacks)",
			       t_moe_load) ||
	    !CU_add_test(s, "q8_0 experts, gated shared expert", t_moe_q8) ||
	    !CU_add_test(s, "f16 experts, ungated shared expert", t_moe_f16) ||
	    !CU_add_test(s, "Hugging Face safetensors (Qwen2-MoE names)",
			 t_moe_hf) ||
	    !CU_add_test(s, "free the set", t_moe_free))
		return -1;
	return 0;
}
