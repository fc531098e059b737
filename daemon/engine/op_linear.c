// SPDX-License-Identifier: MIT
/*
 * GEMM, FFN and MOE on the pools, batched: the jobs' rows are gathered
 * into one f32 matrix, each pool runs its slice of the weights on its own
 * prepared copy of the activations, one sum over the pools ends an FFN,
 * and the rows go back to each job in its output type.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cpu_int.h"

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Prepares rows [0, mc) of x (f32, width k, row stride ldx) for w's
 * type, split. */
static void prepare_ld(struct shxd_pool *pool, const struct shxd_worker *w,
		       const struct shxk_weights *wt, const float *x,
		       size_t ldx, size_t k, size_t mc, void *act)
{
	size_t a, b;

	shxd_split(mc, 1, w->tid, w->nthr, &a, &b);
	if (a < b)
		shxk_act_prepare(wt->type, SHXK_F32, x, ldx, k, act, a, b);
	shxd_pool_barrier(pool, w);
}

static void prepare(struct shxd_pool *pool, const struct shxd_worker *w,
		    const struct shxk_weights *wt, const float *x, size_t k,
		    size_t mc, void *act)
{
	prepare_ld(pool, w, wt, x, k, k, mc, act);
}

/* Rows of a matrix in a phase's row space: padded so that every chunk
 * edge falls on an SHXD_SPLIT_ALIGN multiple of each matrix's rows. */
static size_t span(size_t n)
{
	return (n + SHXD_SPLIT_ALIGN - 1) / SHXD_SPLIT_ALIGN * SHXD_SPLIT_ALIGN;
}

/* y[0..mc) x wt's rows, claimed chunk by chunk, into y (ld ldy). */
static void gemm_rows(struct shxd_pool *pool, const struct shxd_worker *w,
		      const struct shxk_weights *wt, const void *act, size_t mc,
		      float *y, size_t ldy)
{
	size_t a, b;

	while (shxd_pool_claim(pool, w, wt->n, SHXD_SPLIT_ALIGN, &a, &b))
		shxk_gemm(wt, act, mc, y, SHXK_F32, ldy, a, b);
}

/*
 * A matrix split by rows: each pool writes its columns [b[p], b[p+1]) of
 * out. Split by columns (FFN down): each pool multiplies its slice of X's
 * columns by its slice of W's and writes all n columns of its partial
 * output, summed by shxd_gemm_run_n.
 */
static float *lin_out(const struct shxd_lin *t, unsigned int i,
		      unsigned int pool, size_t c)
{
	const struct shxd_mat *m = t->w[i];

	return m->by_cols ? t->pout[pool] + c * m->n :
	       t->out[i] + c * m->n + m->b[pool];
}

/* The end of the phase from t->w[i] (rows in w's pool): the matrices
 * after it that share its prepared activations, of one type and none
 * split by columns (each of those has its own slice of X). */
static unsigned int phase_end(const struct shxd_lin *t, unsigned int i,
			      unsigned int pool)
{
	enum shxk_type type = t->w[i]->part[pool].type;
	unsigned int j = i + 1;

	for (; !t->w[i]->by_cols && j < t->nw; j++) {
		const struct shxk_weights *wt = &t->w[j]->part[pool];

		if (wt->n && (t->w[j]->by_cols || wt->type != type))
			break;
	}
	return j;
}

/* Matrices [i, j)'s rows of w's pool laid end to end, claimed as one
 * phase: threads even out over Q, K and V together. */
static void gemm_phase(const struct shxd_lin *t, const struct shxd_worker *w,
		       unsigned int i, unsigned int j, size_t c, size_t mc,
		       const void *act)
{
	size_t n = 0, a, b;

	for (unsigned int k = i; k < j; k++)
		n += span(t->w[k]->part[w->pool].n);
	while (shxd_pool_claim(t->cpu->pool, w, n, SHXD_SPLIT_ALIGN, &a, &b)) {
		size_t base = 0;

		for (unsigned int k = i; k < j && base < b; k++) {
			const struct shxk_weights *wt = &t->w[k]->part[w->pool];
			size_t lo = a > base ? a - base : 0;
			size_t hi = min_sz(b - base, wt->n);

			if (lo < hi)
				shxk_gemm(wt, act, mc, lin_out(t, k, w->pool, c),
					  SHXK_F32, t->w[k]->n, lo, hi);
			base += span(wt->n);
		}
	}
}

static void gemm_worker(struct shxd_lin *t, const struct shxd_worker *w)
{
	struct shxd_pool *pool = t->cpu->pool;
	void *act = t->cpu->sc[w->pool][SC_ACT].p;

	for (size_t c = 0; c < t->m; c += SHXK_GEMM_MAX_M) {
		size_t mc = min_sz(t->m - c, SHXK_GEMM_MAX_M);
		bool prepared = false;

		for (unsigned int i = 0, j; i < t->nw; i = j) {
			const struct shxd_mat *m = t->w[i];
			const struct shxk_weights *wt = &m->part[w->pool];
			size_t xoff = m->by_cols ? m->b[w->pool] : 0;

			j = i + 1;
			if (!wt->n)
				continue;
			j = phase_end(t, i, w->pool);
			/* act is rewritten: wait for its readers. */
			if (prepared)
				shxd_pool_barrier(pool, w);
			prepare_ld(pool, w, wt, t->in + c * t->k + xoff, t->k,
				   wt->k, mc, act);
			prepared = true;
			gemm_phase(t, w, i, j, c, mc, act);
		}
		/* The next chunk rewrites act. */
		shxd_pool_barrier(pool, w);
	}
}

static void seg_worker(struct shxd_lin *t, const struct shxd_seg *s,
		       const struct shxd_worker *w)
{
	struct shxd_pool *pool = t->cpu->pool;
	struct scratch *sc = t->cpu->sc[w->pool];
	const struct shxk_weights *g = &s->g->part[w->pool];
	const struct shxk_weights *u = &s->u->part[w->pool];
	const struct shxk_weights *d = &s->d->part[w->pool];
	size_t f = g->n, hid = t->k, a, b;
	float *out = t->pout[w->pool] + s->out_row * hid;

	if (!f) {	/* this pool holds none of the block: adds zeros */
		shxd_split(s->m, 1, w->tid, w->nthr, &a, &b);
		memset(out + a * hid, 0, (b - a) * hid * sizeof(float));
		return;
	}
	for (size_t c = 0; c < s->m; c += SHXK_GEMM_MAX_M) {
		size_t mc = min_sz(s->m - c, SHXK_GEMM_MAX_M);
		void *act_u = u->type == g->type ? sc[SC_ACT].p : sc[SC_ACT2].p;
		float *G = sc[SC_G].p, *U = sc[SC_U].p;

		shxd_split(mc, 1, w->tid, w->nthr, &a, &b);
		if (a < b) {
			shxk_act_prepare(g->type, SHXK_F32, s->in + c * hid, hid,
					 hid, sc[SC_ACT].p, a, b);
			if (u->type != g->type)
				shxk_act_prepare(u->type, SHXK_F32,
						 s->in + c * hid, hid, hid,
						 act_u, a, b);
		}
		shxd_pool_barrier(pool, w);
		/* Gate, up and SwiGLU on the claimed columns of G and U:
		 * nothing here needs another thread's. */
		while (shxd_pool_claim(pool, w, f, SHXD_SPLIT_ALIGN, &a, &b)) {
			shxk_gemm(g, sc[SC_ACT].p, mc, G, SHXK_F32, f, a, b);
			shxk_gemm(u, act_u, mc, U, SHXK_F32, f, a, b);
			shxk_swiglu(G, f, U, f, G, f, mc, a, b);
		}
		shxd_pool_barrier(pool, w);
		prepare(pool, w, d, G, f, mc, sc[SC_ACTD].p);
		gemm_rows(pool, w, d, sc[SC_ACTD].p, mc, out + c * hid, hid);
		/* No barrier: the next chunk writes act and G, which no
		 * thread reads any more, and actd only after two barriers;
		 * its first barrier also ends this chunk's claims. */
	}
}

void shxd_lin_work(struct shxd_lin *t, const struct shxd_worker *w)
{
	if (t->nw)
		gemm_worker(t, w);
	for (unsigned int i = 0; i < t->nseg; i++) {
		seg_worker(t, &t->segs[i], w);
		/* Segments write disjoint rows but share scratch. */
		shxd_pool_barrier(t->cpu->pool, w);
	}
}

static void task_worker(void *arg, const struct shxd_worker *w)
{
	struct shxd_lin *t = arg;
	uint64_t t0 = shxd_now_ns();

	shxd_lin_work(t, w);
	if (!w->tid)
		t->cpu->pool_ns[w->pool] = shxd_now_ns() - t0;
}

/* Node-local scratch for the largest chunk a task's pieces need. */
static int grow_gemm(struct shxd_cpu *cpu, const struct shxd_mat *m, size_t rows)
{
	size_t mc = min_sz(rows, SHXK_GEMM_MAX_M);

	for (unsigned int p = 0; p < shxd_pool_count(cpu->pool); p++)
		if (!shxd_scratch(&cpu->sc[p][SC_ACT],
				  mc * shxk_act_row_size(m->type, m->k)) ||
		    (m->by_cols && !shxd_scratch(&cpu->sc[p][SC_OUT],
						 rows * m->n * sizeof(float))))
			return -ENOMEM;
	return 0;
}

static int grow_segs(struct shxd_cpu *cpu, const struct shxd_seg *s,
		     unsigned int n, size_t out_rows, struct shxd_lin *t)
{
	for (unsigned int p = 0; p < shxd_pool_count(cpu->pool); p++) {
		struct scratch *sc = cpu->sc[p];

		for (unsigned int i = 0; i < n; i++) {
			const struct shxk_weights *g = &s[i].g->part[p];
			const struct shxk_weights *u = &s[i].u->part[p];
			const struct shxk_weights *d = &s[i].d->part[p];
			size_t mc = min_sz(s[i].m, SHXK_GEMM_MAX_M);

			if (!g->n)
				continue;
			if (!shxd_scratch(&sc[SC_ACT], mc *
					  shxk_act_row_size(g->type, g->k)) ||
			    !shxd_scratch(&sc[SC_ACT2], mc *
					  shxk_act_row_size(u->type, u->k)) ||
			    !shxd_scratch(&sc[SC_G], mc * g->n * 4) ||
			    !shxd_scratch(&sc[SC_U], mc * g->n * 4) ||
			    !shxd_scratch(&sc[SC_ACTD], mc *
					  shxk_act_row_size(d->type, d->k)))
				return -ENOMEM;
		}
		t->pout[p] = shxd_scratch(&sc[SC_OUT], out_rows * t->k * 4);
		if (!t->pout[p])
			return -ENOMEM;
	}
	return 0;
}

/* out[rows x k] = sum of the pools' partial outputs. */
static void reduce(struct shxd_cpu *cpu, const struct shxd_lin *t, size_t rows,
		   float *out)
{
	size_t n = rows * t->k;

	memcpy(out, t->pout[0], n * sizeof(float));
	for (unsigned int p = 1; p < shxd_pool_count(cpu->pool); p++)
		for (size_t i = 0; i < n; i++)
			out[i] += t->pout[p][i];
}

int shxd_lin_grow(struct shxd_lin *t, size_t out_rows)
{
	unsigned int np = shxd_pool_count(t->cpu->pool);
	int ret = 0;

	for (unsigned int i = 0; i < t->nw && !ret; i++) {
		if (t->w[i]->k != t->k || (t->nw > 1 && t->w[i]->by_cols))
			return -EINVAL;
		ret = grow_gemm(t->cpu, t->w[i], t->m);
	}
	for (unsigned int p = 0; !ret && t->nw && t->w[0]->by_cols && p < np;
	     p++)
		t->pout[p] = t->cpu->sc[p][SC_OUT].p;
	if (!ret && t->nseg)
		ret = grow_segs(t->cpu, t->segs, t->nseg, out_rows, t);
	return ret;
}

int shxd_gemm_run_n(struct shxd_cpu *cpu, const struct shxd_mat *const *m,
		    float *const *out, unsigned int n, const float *in,
		    size_t rows)
{
	struct shxd_lin t = { .cpu = cpu, .k = m[0]->k, .w = m, .out = out,
			      .nw = n, .in = in, .m = rows };
	unsigned int np = shxd_pool_count(cpu->pool);
	int ret = shxd_lin_grow(&t, 0);

	if (ret)
		return ret;
	shxd_pool_run(cpu->pool, task_worker, &t);
	if (m[0]->by_cols) {
		/* The sum of the partial outputs of the pools that hold
		 * columns. */
		memset(out[0], 0, rows * m[0]->n * sizeof(float));
		for (unsigned int p = 0; p < np; p++)
			for (size_t i = 0; m[0]->part[p].n && i < rows * m[0]->n;
			     i++)
				out[0][i] += t.pout[p][i];
	}
	return 0;
}

int shxd_gemm_run(struct shxd_cpu *cpu, const struct shxd_mat *m,
		  const float *in, size_t rows, float *out)
{
	return shxd_gemm_run_n(cpu, &m, &out, 1, in, rows);
}

/* The jobs' X rows, as f32, one after another; returns the row count. */
static float *gather(struct shxd_cpu *cpu, struct shxd_pjob *const *pj,
		     unsigned int n, size_t k, size_t *rows)
{
	size_t m = 0, o = 0;
	float *x;

	for (unsigned int i = 0; i < n; i++)
		m += pj[i]->m;
	x = shxd_scratch(&cpu->ms[MS_X], m * k * sizeof(float));
	if (!x)
		return NULL;
	for (unsigned int i = 0; i < n; i++) {
		shxd_to_f32(pj[i]->xt, pj[i]->x, x + o * k, pj[i]->m * k);
		o += pj[i]->m;
	}
	*rows = m;
	return x;
}

static void scatter(struct shxd_pjob *const *pj, unsigned int n, const float *y,
		    size_t k)
{
	size_t o = 0;

	for (unsigned int i = 0; i < n; i++) {
		shxd_from_f32(pj[i]->yt, y + o * k, pj[i]->y, pj[i]->m * k);
		o += pj[i]->m;
	}
}

/* h = rmsnorm(x) * ffn_norm, or x itself. */
static float *normed(struct shxd_cpu *cpu, const struct shxd_pjob *p,
		     float *x, size_t m, size_t k)
{
	float *h;

	if (!p->norm)
		return x;
	h = shxd_scratch(&cpu->ms[MS_H], m * k * sizeof(float));
	if (h)
		shxk_rmsnorm(x, p->norm, h, k, p->eps, 0, m);
	return h;
}

static void add_residual(float *y, const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] += x[i];
}

static int linear_gemm(struct shxd_cpu *cpu, struct shxd_pjob *const *pj,
		       unsigned int n)
{
	const struct shxd_mat *w = pj[0]->w;
	size_t m;
	float *x = gather(cpu, pj, n, w->k, &m), *y;
	int ret;

	y = x ? shxd_scratch(&cpu->ms[MS_Y], m * w->n * sizeof(float)) : NULL;
	if (!y)
		return -ENOMEM;
	ret = shxd_gemm_run(cpu, w, x, m, y);
	if (!ret)
		scatter(pj, n, y, w->n);
	return ret;
}

static int linear_ffn(struct shxd_cpu *cpu, struct shxd_pjob *const *pj,
		      unsigned int n)
{
	const struct shxd_pjob *p = pj[0];
	struct shxd_seg s = { .g = p->g, .u = p->u, .d = p->d };
	struct shxd_lin t = { .cpu = cpu, .k = s.g->k, .segs = &s, .nseg = 1 };
	size_t m;
	float *x = gather(cpu, pj, n, t.k, &m), *y;
	int ret;

	s.in = x ? normed(cpu, p, x, m, t.k) : NULL;
	s.m = m;
	y = s.in ? shxd_scratch(&cpu->ms[MS_Y], m * t.k * sizeof(float)) : NULL;
	if (!y)
		return -ENOMEM;
	ret = shxd_lin_grow(&t, m);
	if (ret)
		return ret;
	shxd_pool_run(cpu->pool, task_worker, &t);
	reduce(cpu, &t, m, y);
	if (p->flags & SYSHAX_FFN_RESIDUAL)
		add_residual(y, x, m * t.k);
	scatter(pj, n, y, t.k);
	return 0;
}

/* Softmax over a row of logits, then its top k (ties: the lower id). */
static void route_row(const float *l, unsigned int nexp, unsigned int topk,
		      bool renorm, int32_t *ids, float *wts)
{
	float mx = -INFINITY, sum = 0.0f, ksum = 0.0f;

	for (unsigned int e = 0; e < nexp; e++)
		mx = l[e] > mx ? l[e] : mx;
	for (unsigned int e = 0; e < nexp; e++)
		sum += expf(l[e] - mx);
	for (unsigned int s = 0; s < topk; s++) {
		int best = -1;

		for (unsigned int e = 0; e < nexp; e++) {
			bool taken = false;

			for (unsigned int j = 0; j < s; j++)
				taken |= ids[j] == (int32_t)e;
			if (!taken && (best < 0 || l[e] > l[best]))
				best = (int)e;
		}
		ids[s] = best;
		wts[s] = expf(l[best] - mx) / sum;
		ksum += wts[s];
	}
	for (unsigned int s = 0; renorm && s < topk; s++)
		wts[s] /= ksum;
}

/* ids and weights of every row of the batch, in the batch's order. */
static int route(struct shxd_cpu *cpu, struct shxd_pjob *const *pj,
		 unsigned int n, const float *h, size_t m, int32_t *ids,
		 float *wts)
{
	const struct shxd_pjob *p0 = pj[0];
	unsigned int nexp = p0->nexp, k = p0->topk;
	bool renorm = p0->flags & SYSHAX_MOE_NORM_TOPK;
	float *logits = NULL;
	size_t o = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (pj[i]->route != SYSHAX_MOE_ROUTE_ROUTER)
			continue;
		/* Any job asks: the router runs over the whole batch. */
		logits = shxd_scratch(&cpu->ms[MS_LOGITS],
				      m * nexp * sizeof(float));
		if (!logits || shxd_gemm_run(cpu, pj[i]->router, h, m, logits))
			return -ENOMEM;
		break;
	}
	for (unsigned int i = 0; i < n; o += pj[i]->m, i++) {
		const struct shxd_pjob *p = pj[i];

		if (p->route == SYSHAX_MOE_ROUTE_IDS) {
			memcpy(ids + o * k, p->ids, p->m * k * sizeof(*ids));
			memcpy(wts + o * k, p->wts, p->m * k * sizeof(*wts));
			continue;
		}
		for (size_t r = 0; r < p->m; r++)
			route_row(p->route == SYSHAX_MOE_ROUTE_LOGITS ?
				  p->logits + r * nexp :
				  logits + (o + r) * nexp, nexp, k, renorm,
				  ids + (o + r) * k, wts + (o + r) * k);
	}
	return 0;
}

static float dot(const float *a, const float *b, size_t n)
{
	float s = 0.0f;

	for (size_t i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

static int linear_moe(struct shxd_cpu *cpu, struct shxd_pjob *const *pj,
		      unsigned int n)
{
	const struct shxd_pjob *p = pj[0];
	unsigned int nexp = p->nexp, k = p->topk, nseg = 0;
	bool shared = p->flags & SYSHAX_MOE_SHARED;
	const struct shxd_mat *g0 = shxd_wset_expert(p->ws, p->layer, "gate", 0);
	struct shxd_lin t = { .cpu = cpu, .k = g0->k };
	size_t m, hid = g0->k, rows, segoff;
	uint32_t *off, *order, *pos;
	float *x, *h, *hg, *eo, *y, *wts;
	struct shxd_seg *segs;
	int32_t *ids;
	int ret;

	x = gather(cpu, pj, n, hid, &m);
	h = x ? normed(cpu, p, x, m, hid) : NULL;
	ids = shxd_scratch(&cpu->ms[MS_IDS], m * k * sizeof(*ids));
	wts = shxd_scratch(&cpu->ms[MS_WTS], m * k * sizeof(*wts));
	/* off, order, pos (u32), then the segments at their alignment. */
	segoff = ((nexp + 1) + 2 * m * k) * sizeof(uint32_t);
	segoff = (segoff + _Alignof(struct shxd_seg) - 1) &
		 ~(size_t)(_Alignof(struct shxd_seg) - 1);
	off = shxd_scratch(&cpu->ms[MS_GRP], segoff +
			   (nexp + 1) * sizeof(struct shxd_seg));
	rows = m * k + (shared ? m : 0);
	hg = shxd_scratch(&cpu->ms[MS_SH], m * k * hid * sizeof(float));
	eo = shxd_scratch(&cpu->ms[MS_EO], rows * hid * sizeof(float));
	y = shxd_scratch(&cpu->ms[MS_Y], m * hid * sizeof(float));
	if (!h || !ids || !wts || !off || !hg || !eo || !y)
		return -ENOMEM;
	order = off + nexp + 1;
	pos = order + m * k;
	segs = (struct shxd_seg *)(void *)((uint8_t *)off + segoff);
	ret = route(cpu, pj, n, h, m, ids, wts);
	if (!ret)
		ret = shxk_moe_group(ids, m, k, nexp, off, order, pos);
	if (ret)
		return ret;
	for (size_t r = 0; r < m * k; r++)
		memcpy(hg + r * hid, h + order[r] / k * hid, hid * sizeof(float));
	for (unsigned int e = 0; e < nexp; e++) {
		if (off[e + 1] == off[e])
			continue;
		segs[nseg++] = (struct shxd_seg){
			.g = shxd_wset_expert(p->ws, p->layer, "gate", e),
			.u = shxd_wset_expert(p->ws, p->layer, "up", e),
			.d = shxd_wset_expert(p->ws, p->layer, "down", e),
			.in = hg + off[e] * hid, .m = off[e + 1] - off[e],
			.out_row = off[e],
		};
	}
	if (shared)
		segs[nseg++] = (struct shxd_seg){
			.g = p->g, .u = p->u, .d = p->d,
			.in = h, .m = m, .out_row = m * k,
		};
	t.segs = segs;
	t.nseg = nseg;
	ret = shxd_lin_grow(&t, rows);
	if (ret)
		return ret;
	shxd_pool_run(cpu->pool, task_worker, &t);
	reduce(cpu, &t, rows, eo);
	shxk_moe_combine(eo, pos, wts, k, hid, y, 0, m);
	if (shared) {
		for (size_t r = 0; r < m; r++) {
			const float *s = eo + (m * k + r) * hid;
			float gt = p->shgate ?
				   1.0f / (1.0f + expf(-dot(h + r * hid,
							    p->shgate, hid))) :
				   1.0f;

			for (size_t e = 0; e < hid; e++)
				y[r * hid + e] += gt * s[e];
		}
	}
	if (p->flags & SYSHAX_MOE_RESIDUAL)
		add_residual(y, x, m * hid);
	scatter(pj, n, y, hid);
	return 0;
}

int shxd_op_linear(struct shxd_cpu *cpu, struct shxd_pjob *const *pj,
		   unsigned int n)
{
	switch (pj[0]->op) {
	case SYSHAX_OP_GEMM:
		return linear_gemm(cpu, pj, n);
	case SYSHAX_OP_FFN:
		return linear_ffn(cpu, pj, n);
	case SYSHAX_OP_MOE:
		return linear_moe(cpu, pj, n);
	default:
		return -EINVAL;
	}
}
