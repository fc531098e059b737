// SPDX-License-Identifier: MIT
/*
 * GEMM, FFN and MOE on the pools, batched: the jobs' rows are gathered
 * into one f32 matrix, each pool runs its slice of the weights on its own
 * prepared copy of the activations, one sum over the pools ends an FFN,
 * and the rows go back to each job in its output type. An MOE batch's
 * phases are in op_moe.c.
 */
#include <errno.h>
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

/* Rows of a matrix in a phase's row space: padded so that every chunk
 * edge falls on an SHXD_SPLIT_ALIGN multiple of each matrix's rows. */
static size_t span(size_t n)
{
	return (n + SHXD_SPLIT_ALIGN - 1) / SHXD_SPLIT_ALIGN * SHXD_SPLIT_ALIGN;
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
	bool prepared = false;

	for (size_t c = 0; c < t->m; c += SHXK_GEMM_MAX_M) {
		size_t mc = min_sz(t->m - c, SHXK_GEMM_MAX_M);

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
	}
}

/* Segments in one group at most: its layout is on each worker's stack. */
#define SEG_GROUP_MAX 32

/*
 * Segments [i, end) run as one group, each phase over all of them: up to
 * SEG_GROUP_MAX whose rows fit one chunk together (the experts of a
 * decode step), or one segment of any size, chunk by chunk. A group's
 * chunk costs three barriers, where a segment at a time cost four each.
 */
static unsigned int group_end(const struct shxd_lin *t, unsigned int i)
{
	size_t rows = t->segs[i].m;
	unsigned int j = i + 1;

	while (rows <= SHXK_GEMM_MAX_M && j < t->nseg &&
	       j - i < SEG_GROUP_MAX && rows + t->segs[j].m <= SHXK_GEMM_MAX_M)
		rows += t->segs[j++].m;
	return j;
}

/* One segment's rows of a chunk and its places in the group's scratch. */
struct seg_at {
	const struct shxk_weights *g, *u, *d;
	const float *in;
	const uint32_t *rows;	/* as shxd_seg's */
	float *out, *G, *U;
	void *act, *act_u, *actd;
	size_t mc, row;		/* rows in this chunk; first in the group's */
};

/* The segments [i, j)'s rows [c, c + SHXK_GEMM_MAX_M) laid out one after
 * another in pool p's scratch; returns the group's row count. */
static size_t seg_layout(const struct shxd_lin *t, unsigned int i,
			 unsigned int j, size_t c, unsigned int p,
			 struct seg_at *at)
{
	struct scratch *sc = t->cpu->sc[p];
	size_t rows = 0, oa = 0, ou = 0, of = 0, od = 0, hid = t->k;

	for (unsigned int e = i; e < j; e++) {
		const struct shxd_seg *s = &t->segs[e];
		struct seg_at *x = &at[e - i];

		x->g = &s->g->part[p];
		x->u = &s->u->part[p];
		x->d = &s->d->part[p];
		x->mc = s->m > c ? min_sz(s->m - c, SHXK_GEMM_MAX_M) : 0;
		x->row = rows;
		x->rows = s->rows ? s->rows + c : NULL;
		x->in = s->rows ? s->in : s->in + c * hid;
		x->out = t->pout[p] + (s->out_row + c) * hid;
		x->act = (uint8_t *)sc[SC_ACT].p + oa;
		x->act_u = x->u->type == x->g->type ? x->act :
			   (uint8_t *)sc[SC_ACT2].p + ou;
		x->G = (float *)sc[SC_G].p + of;
		x->U = (float *)sc[SC_U].p + of;
		x->actd = (uint8_t *)sc[SC_ACTD].p + od;
		rows += x->mc;
		oa += x->mc * shxk_act_row_size(x->g->type, hid);
		ou += x->mc * shxk_act_row_size(x->u->type, hid);
		of += x->mc * x->g->n;
		od += x->mc * shxk_act_row_size(x->d->type, x->g->n);
	}
	return rows;
}

/* Rows [m0, m1) of x (row stride hid) as gate's and up's activations. */
static void prepare_gu(const struct seg_at *s, const float *x, size_t m0,
		       size_t m1, void *act, void *act_u, size_t hid)
{
	shxk_act_prepare(s->g->type, SHXK_F32, x, hid, hid, act, m0, m1);
	if (act_u != act)
		shxk_act_prepare(s->u->type, SHXK_F32, x, hid, hid, act_u,
				 m0, m1);
}

/* Rows [lo, hi) of a segment's input, prepared for gate and up. */
static void seg_prepare_in(const struct seg_at *x, size_t lo, size_t hi,
			   size_t hid)
{
	size_t ga = shxk_act_row_size(x->g->type, hid);
	size_t ua = shxk_act_row_size(x->u->type, hid);

	if (!x->rows) {
		prepare_gu(x, x->in, lo, hi, x->act, x->act_u, hid);
		return;
	}
	for (size_t r = lo; r < hi; r++)
		prepare_gu(x, x->in + x->rows[r] * hid, 0, 1,
			   (uint8_t *)x->act + r * ga,
			   (uint8_t *)x->act_u + r * ua, hid);
}

/* Worker w's rows [a, b) of the group's, segment by segment: the
 * activations of gate and up (down: of G), or zeros where w's pool holds
 * none of a segment. */
static void seg_prepare(const struct seg_at *at, unsigned int n, size_t hid,
			bool down, const struct shxd_worker *w)
{
	size_t rows = at[n - 1].row + at[n - 1].mc, a, b;

	shxd_split(rows, 1, w->tid, w->nthr, &a, &b);
	for (unsigned int e = 0; e < n; e++) {
		const struct seg_at *x = &at[e];
		size_t lo = a > x->row ? a - x->row : 0;
		size_t hi = min_sz(b > x->row ? b - x->row : 0, x->mc);
		size_t f = x->g->n;

		if (lo >= hi)
			continue;
		if (!f) {
			if (down)
				memset(x->out + lo * hid, 0,
				       (hi - lo) * hid * sizeof(float));
		} else if (down) {
			shxk_act_prepare(x->d->type, SHXK_F32, x->G, f, f,
					 x->actd, lo, hi);
		} else {
			seg_prepare_in(x, lo, hi, hid);
		}
	}
}

/* Gate, up and SwiGLU (down) over the group's rows of its segments'
 * matrices laid end to end, claimed as one phase. */
static void seg_gemms(struct shxd_pool *pool, const struct seg_at *at,
		      unsigned int n, size_t hid, bool down,
		      const struct shxd_worker *w)
{
	size_t total = 0, a, b;

	for (unsigned int e = 0; e < n; e++)
		total += at[e].mc && at[e].g->n ?
			 span(down ? at[e].d->n : at[e].g->n) : 0;
	while (shxd_pool_claim(pool, w, total, SHXD_SPLIT_ALIGN, &a, &b)) {
		size_t base = 0;

		for (unsigned int e = 0; e < n && base < b; e++) {
			const struct seg_at *x = &at[e];
			size_t f = x->g->n, nr = down ? x->d->n : f, lo, hi;

			if (!x->mc || !f)
				continue;
			lo = a > base ? a - base : 0;
			hi = min_sz(b - base, nr);
			base += span(nr);
			if (lo >= hi)
				continue;
			if (down) {
				shxk_gemm(x->d, x->actd, x->mc, x->out,
					  SHXK_F32, hid, lo, hi);
				continue;
			}
			/* Nothing here needs another thread's columns. */
			shxk_gemm(x->g, x->act, x->mc, x->G, SHXK_F32, f, lo, hi);
			shxk_gemm(x->u, x->act_u, x->mc, x->U, SHXK_F32, f, lo, hi);
			shxk_swiglu(x->G, f, x->U, f, x->G, f, x->mc, lo, hi);
		}
	}
}

static void group_worker(struct shxd_lin *t, unsigned int i, unsigned int j,
			 const struct shxd_worker *w)
{
	struct shxd_pool *pool = t->cpu->pool;
	struct seg_at at[SEG_GROUP_MAX];
	size_t mmax = 0;

	for (unsigned int e = i; e < j; e++)
		mmax = t->segs[e].m > mmax ? t->segs[e].m : mmax;
	for (size_t c = 0; c < mmax; c += SHXK_GEMM_MAX_M) {
		seg_layout(t, i, j, c, w->pool, at);
		seg_prepare(at, j - i, t->k, false, w);
		shxd_pool_barrier(pool, w);
		seg_gemms(pool, at, j - i, t->k, false, w);
		shxd_pool_barrier(pool, w);
		seg_prepare(at, j - i, t->k, true, w);
		shxd_pool_barrier(pool, w);
		/*
		 * No barrier here: the next chunk's or group's first two
		 * phases, each behind one, come before it rewrites G, U or
		 * actd, and the caller's barrier ends the last.
		 */
		seg_gemms(pool, at, j - i, t->k, true, w);
	}
}

void shxd_lin_work(struct shxd_lin *t, const struct shxd_worker *w)
{
	if (t->nw)
		gemm_worker(t, w);
	/* The segments' activations go where the matrices' were. */
	if (t->nw && t->nseg)
		shxd_pool_barrier(t->cpu->pool, w);
	for (unsigned int i = 0, j; i < t->nseg; i = j) {
		j = group_end(t, i);
		group_worker(t, i, j, w);
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

static int grow_segs(struct shxd_lin *t, size_t out_rows)
{
	for (unsigned int p = 0; p < shxd_pool_count(t->cpu->pool); p++) {
		struct scratch *sc = t->cpu->sc[p];

		for (unsigned int i = 0, j; i < t->nseg; i = j) {
			size_t na = 0, nu = 0, nf = 0, nd = 0, hid = t->k;

			j = group_end(t, i);
			/* The group's first chunk is its largest. */
			for (unsigned int e = i; e < j; e++) {
				const struct shxd_seg *s = &t->segs[e];
				size_t mc = min_sz(s->m, SHXK_GEMM_MAX_M);
				size_t f = s->g->part[p].n;

				na += mc * shxk_act_row_size(s->g->part[p].type, hid);
				nu += mc * shxk_act_row_size(s->u->part[p].type, hid);
				nf += mc * f * 4;
				nd += mc * shxk_act_row_size(s->d->part[p].type, f);
			}
			if (!shxd_scratch(&sc[SC_ACT], na) ||
			    !shxd_scratch(&sc[SC_ACT2], nu) ||
			    !shxd_scratch(&sc[SC_G], nf) ||
			    !shxd_scratch(&sc[SC_U], nf) ||
			    !shxd_scratch(&sc[SC_ACTD], nd))
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
		ret = grow_segs(t, out_rows);
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

struct moe_run {
	struct shxd_moe *t;
	struct shxd_pjob *const *pj;
	unsigned int n;
	float *x;
	size_t m;
};

static void moe_worker(void *arg, const struct shxd_worker *w)
{
	const struct moe_run *r = arg;
	uint64_t t0 = shxd_now_ns();

	shxd_moe_work(r->t, r->pj, r->n, r->x, r->m, w);
	if (!w->tid)
		r->t->cpu->pool_ns[w->pool] = shxd_now_ns() - t0;
}

static int linear_moe(struct shxd_cpu *cpu, struct shxd_pjob *const *pj,
		      unsigned int n)
{
	const struct shxd_pjob *p = pj[0];
	const struct shxd_mat *g0 = shxd_wset_expert(p->ws, p->layer, "gate", 0);
	struct shxd_moe t;
	struct moe_run r = { .t = &t, .pj = pj, .n = n };
	int ret;

	r.x = g0 ? gather(cpu, pj, n, g0->k, &r.m) : NULL;
	if (!r.x)
		return g0 ? -ENOMEM : -EINVAL;
	ret = shxd_moe_setup(&t, cpu, pj, n, r.m);
	if (ret)
		return ret;
	shxd_pool_run(cpu->pool, moe_worker, &r);
	if (!t.err)
		scatter(pj, n, r.x, g0->k);
	return t.err;
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
