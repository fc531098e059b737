// SPDX-License-Identifier: MIT
/*
 * An MoE block in phases of one run: the norm, the router, each row's
 * experts, the experts as SwiGLU segments (op_linear.c) and the weighted
 * sum, with barriers over all workers between them. The engine thread
 * only sets the scratch up: an MoE model's step is one run (op_model.c),
 * where each layer's block used to cost three hand-offs to the pool and
 * back, tens of µs each on a VM; MOE jobs run here too.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cpu_int.h"

#define CARVE_ALIGN	64

/* The next bytes of a scratch block being laid out (base NULL: only
 * counts them). */
static void *carve(uint8_t *base, size_t *used, size_t bytes)
{
	size_t at = *used;

	*used += (bytes + CARVE_ALIGN - 1) & ~(size_t)(CARVE_ALIGN - 1);
	return base ? base + at : NULL;
}

/* The router of the first job that routes by it: it runs over all rows. */
static const struct shxd_mat *const *router(struct shxd_pjob *const *pj,
					    unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (pj[i]->route == SYSHAX_MOE_ROUTE_ROUTER)
			return &pj[i]->router;
	return NULL;
}

/* Lays out the block's scratch for m rows; returns its size. */
static size_t layout(struct shxd_moe *t, uint8_t *base,
		     const struct shxd_pjob *p, bool routed, size_t m)
{
	size_t k = p->topk, hid = t->hid, nexp = p->nexp, u = 0;
	size_t rows = m * k + (p->flags & SYSHAX_MOE_SHARED ? m : 0);

	t->h = p->norm ? carve(base, &u, m * hid * sizeof(float)) : NULL;
	t->logits = routed ? carve(base, &u, m * nexp * sizeof(float)) : NULL;
	t->ids = carve(base, &u, m * k * sizeof(*t->ids));
	t->wts = carve(base, &u, m * k * sizeof(*t->wts));
	t->off = carve(base, &u, (nexp + 1) * sizeof(*t->off));
	t->order = carve(base, &u, m * k * sizeof(*t->order));
	t->pos = carve(base, &u, m * k * sizeof(*t->pos));
	t->segs = carve(base, &u, (nexp + 1) * sizeof(*t->segs));
	t->tok = carve(base, &u, m * k * sizeof(*t->tok));
	t->acc = carve(base, &u, m * hid * sizeof(float));
	t->eo = shxd_pool_count(t->cpu->pool) > 1 ?
		carve(base, &u, rows * hid * sizeof(float)) : NULL;
	return u;
}

int shxd_moe_setup(struct shxd_moe *t, struct shxd_cpu *cpu,
		   struct shxd_pjob *const *pj, unsigned int n, size_t m)
{
	const struct shxd_pjob *p = pj[0];
	const struct shxd_mat *const *r = router(pj, n);
	const struct shxd_mat *g0 = shxd_wset_expert(p->ws, p->layer, "gate", 0);
	uint8_t *base;

	if (!g0)
		return -EINVAL;
	*t = (struct shxd_moe){ .cpu = cpu, .hid = g0->k };
	base = shxd_scratch(&cpu->ms[MS_MOE], layout(t, NULL, p, r, m));
	if (!base)
		return -ENOMEM;
	layout(t, base, p, r, m);
	if (r) {
		struct shxd_lin rl = { .cpu = cpu, .k = t->hid, .w = r,
				       .nw = 1, .m = m };

		return shxd_lin_grow(&rl, 0);
	}
	return 0;
}

/* Softmax over a row of logits, then its top k (ties: the lower id). */
static void route_row(const float *l, unsigned int nexp, unsigned int topk,
		      bool renorm, int32_t *ids, float *wts)
{
	float mx = -INFINITY, sum = 0.0f, ksum = 0.0f;
	struct shxd_topk best = { .have = 0 };

	for (unsigned int e = 0; e < nexp; e++)
		mx = l[e] > mx ? l[e] : mx;
	for (unsigned int e = 0; e < nexp; e++)
		sum += expf(l[e] - mx);
	for (unsigned int e = 0; e < nexp; e++)
		shxd_topk_add(&best, topk, (int32_t)e, l[e]);
	for (unsigned int s = 0; s < topk; s++) {
		ids[s] = best.ids[s];
		wts[s] = expf(best.val[s] - mx) / sum;
		ksum += wts[s];
	}
	for (unsigned int s = 0; renorm && s < topk; s++)
		wts[s] /= ksum;
}

/* Experts and weights of the batch's rows [a, b), each from its job. */
static void route_rows(const struct shxd_moe *t, struct shxd_pjob *const *pj,
		       unsigned int n, size_t a, size_t b)
{
	unsigned int nexp = pj[0]->nexp, k = pj[0]->topk;
	bool renorm = pj[0]->flags & SYSHAX_MOE_NORM_TOPK;
	size_t o = 0;

	for (unsigned int i = 0; i < n && o < b; o += pj[i]->m, i++) {
		const struct shxd_pjob *p = pj[i];

		for (size_t r = a > o ? a - o : 0; r < p->m && o + r < b; r++) {
			int32_t *ids = t->ids + (o + r) * k;
			float *wts = t->wts + (o + r) * k;

			if (p->route == SYSHAX_MOE_ROUTE_IDS) {
				memcpy(ids, p->ids + r * k, k * sizeof(*ids));
				memcpy(wts, p->wts + r * k, k * sizeof(*wts));
			} else {
				route_row(p->route == SYSHAX_MOE_ROUTE_LOGITS ?
					  p->logits + r * nexp :
					  t->logits + (o + r) * nexp, nexp, k,
					  renorm, ids, wts);
			}
		}
	}
}

/* The rows grouped by expert, one segment per expert used (and the shared
 * expert last), and their scratch; on one thread, the others waiting. */
static void group(struct shxd_moe *t, const struct shxd_pjob *p,
		  const float *h, size_t m)
{
	size_t k = p->topk, rows = m * k;
	struct shxd_lin el = { .cpu = t->cpu, .k = t->hid, .segs = t->segs };
	struct shxd_experts g, u, d;
	int ret = shxk_moe_group(t->ids, m, k, p->nexp, t->off, t->order,
				 t->pos);

	shxd_wset_experts_of(p->ws, p->layer, "gate", &g);
	shxd_wset_experts_of(p->ws, p->layer, "up", &u);
	shxd_wset_experts_of(p->ws, p->layer, "down", &d);
	for (size_t i = 0; !ret && i < rows; i++)
		t->tok[i] = t->order[i] / (uint32_t)k;
	for (unsigned int e = 0; !ret && e < p->nexp; e++) {
		if (t->off[e + 1] == t->off[e])
			continue;
		/* The expert's rows are its tokens' rows of h, in place. */
		t->segs[el.nseg++] = (struct shxd_seg){
			.g = shxd_experts_get(&g, e),
			.u = shxd_experts_get(&u, e),
			.d = shxd_experts_get(&d, e),
			.in = h, .rows = t->tok + t->off[e],
			.m = t->off[e + 1] - t->off[e], .out_row = t->off[e],
		};
	}
	if (!ret && (p->flags & SYSHAX_MOE_SHARED)) {
		t->segs[el.nseg++] = (struct shxd_seg){
			.g = p->g, .u = p->u, .d = p->d, .in = h, .m = m,
			.out_row = rows,
		};
		rows += m;
	}
	/* The grown scratch is only read in the phases after this one. */
	if (!ret)
		ret = shxd_lin_grow(&el, rows);
	memcpy(t->pout, el.pout, sizeof(t->pout));
	t->nseg = ret ? 0 : el.nseg;
	/* The first error of a run's layers stays. */
	if (!t->err)
		t->err = ret;
}

static float dot(const float *a, const float *b, size_t n)
{
	float s = 0.0f;

	for (size_t i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

/* Rows [a, b) of x: the experts' weighted sum, the shared expert (gated),
 * the residual. */
static void combine(const struct shxd_moe *t, const struct shxd_pjob *p,
		    const float *h, float *x, size_t m, size_t a, size_t b)
{
	const float *eo = t->eo ? t->eo : t->pout[0];
	size_t k = p->topk, hid = t->hid;

	shxk_moe_combine(eo, t->pos, t->wts, k, hid, t->acc, a, b);
	for (size_t r = a; r < b; r++) {
		float *y = t->acc + r * hid, *xr = x + r * hid;

		if (p->flags & SYSHAX_MOE_SHARED) {
			const float *s = eo + (m * k + r) * hid;
			float gt = p->shgate ?
				   1.0f / (1.0f + expf(-dot(h + r * hid,
							    p->shgate, hid))) :
				   1.0f;

			for (size_t e = 0; e < hid; e++)
				y[e] += gt * s[e];
		}
		if (p->flags & SYSHAX_MOE_RESIDUAL)
			for (size_t e = 0; e < hid; e++)
				y[e] += xr[e];
		memcpy(xr, y, hid * sizeof(float));
	}
}

void shxd_moe_work(struct shxd_moe *t, struct shxd_pjob *const *pj,
		   unsigned int n, float *x, size_t m,
		   const struct shxd_worker *w)
{
	const struct shxd_pjob *p = pj[0];
	const struct shxd_mat *const *r = router(pj, n);
	struct shxd_pool *pool = t->cpu->pool;
	unsigned int np = shxd_pool_count(pool);
	size_t hid = t->hid, k = p->topk, a, b, e0, e1;
	const float *h = p->norm ? t->h : x;

	shxd_split(m, 1, w->gtid, w->gnthr, &a, &b);
	if (p->norm)
		shxk_rmsnorm(x, p->norm, t->h, hid, p->eps, a, b);
	shxd_pool_gbarrier(pool, w);
	if (r) {
		struct shxd_lin rl = { .cpu = t->cpu, .k = hid, .w = r,
				       .out = &t->logits, .nw = 1, .in = h,
				       .m = m };

		shxd_lin_work(&rl, w);
		shxd_pool_gbarrier(pool, w);
	}
	route_rows(t, pj, n, a, b);
	shxd_pool_gbarrier(pool, w);
	if (!w->gtid)
		group(t, p, h, m);
	shxd_pool_gbarrier(pool, w);
	{
		struct shxd_lin el = { .cpu = t->cpu, .k = hid,
				       .segs = t->segs, .nseg = t->nseg };

		memcpy(el.pout, t->pout, sizeof(el.pout));
		shxd_lin_work(&el, w);
	}
	shxd_pool_gbarrier(pool, w);
	if (np > 1) {
		/* The pools' partial sums (one pool's is the sum). */
		size_t rows = m * k + (p->flags & SYSHAX_MOE_SHARED ? m : 0);

		shxd_split(t->err ? 0 : rows * hid, 16, w->gtid, w->gnthr,
			   &e0, &e1);
		for (size_t i = e0; i < e1; i++) {
			float s = t->pout[0][i];

			for (unsigned int q = 1; q < np; q++)
				s += t->pout[q][i];
			t->eo[i] = s;
		}
		shxd_pool_gbarrier(pool, w);
	}
	if (!t->err)
		combine(t, p, h, x, m, a, b);
	shxd_pool_gbarrier(pool, w);
}
