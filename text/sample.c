// SPDX-License-Identifier: MIT
/*
 * The sampler (sample.h). Candidates are (id, logit) pairs after the
 * penalties; a full row gives either the top max(top_k, n_logprobs) of one
 * pass (a min-heap whose root is the threshold, so nearly every logit costs
 * one compare, and a block of 16 below it one vector test) or, without
 * top-k, every token. Top-p looks for the shortest prefix of the
 * candidates, highest first, that reaches a mass: only the head that can
 * hold it is sorted (grown by a logit threshold until it does). The draw
 * walks the kept tokens in id order, which needs no sorting.
 *
 * The penalties touch only the tokens of the window: their counts are kept
 * in an array sorted by id, which also splits a full row into runs of
 * untouched logits between them, so the row is never copied or searched.
 *
 * PRNG: xoshiro256** (Blackman and Vigna, 2018) seeded by splitmix64 of
 * the seed; each draw takes one 64-bit output, its top 53 bits as a double
 * in (0, 1].
 */
#include "sample.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cand {
	int32_t id;
	float l;
};

/* A token of the penalty window and how often it occurs there. */
struct seen {
	int32_t id;
	int32_t count;
};

struct shx_sampler {
	struct shx_sample_params p;
	int32_t n_vocab;
	uint64_t rng[4];
	bool penalize;
	/* the window: a ring of the last penalty_last_n accepted ids (none
	 * for -1: all), and their counts sorted by id */
	int32_t *hist;
	size_t hist_cap, hist_len, hist_head;
	struct seen *seen;
	size_t n_seen, seen_cap;
	float *pen;		/* n_seen penalized logits of this row */
	struct cand *cand;	/* n_vocab */
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

void shx_sample_defaults(struct shx_sample_params *p)
{
	*p = (struct shx_sample_params){
		.temperature = 1.0f, .top_p = 1.0f, .repeat_penalty = 1.0f,
		.penalty_last_n = 64,
	};
}

/* !(x >= lo && x <= hi) is also true for NaN. */
static bool out(float x, float lo, float hi)
{
	return !(x >= lo && x <= hi);
}

int shx_sample_check(const struct shx_sample_params *p, char *err,
		     size_t errlen)
{
	if (out(p->temperature, 0, INFINITY) || isinf(p->temperature))
		return fail(err, errlen, "temperature %g: must be a number >= 0",
			    p->temperature);
	if (out(p->top_p, 0, 1))
		return fail(err, errlen, "top_p %g: must be 0..1", p->top_p);
	if (out(p->min_p, 0, 1))
		return fail(err, errlen, "min_p %g: must be 0..1", p->min_p);
	if (out(p->repeat_penalty, 0, INFINITY) || p->repeat_penalty == 0 ||
	    isinf(p->repeat_penalty))
		return fail(err, errlen, "repeat_penalty %g: must be a number > 0",
			    p->repeat_penalty);
	if (out(p->frequency_penalty, -2, 2))
		return fail(err, errlen, "frequency_penalty %g: must be -2..2",
			    p->frequency_penalty);
	if (out(p->presence_penalty, -2, 2))
		return fail(err, errlen, "presence_penalty %g: must be -2..2",
			    p->presence_penalty);
	if (p->penalty_last_n < -1)
		return fail(err, errlen, "penalty_last_n %d: must be >= -1",
			    p->penalty_last_n);
	if (p->n_logprobs < 0 || p->n_logprobs > SHX_SAMPLE_LOGPROBS_MAX)
		return fail(err, errlen, "n_logprobs %d: must be 0..%d",
			    p->n_logprobs, SHX_SAMPLE_LOGPROBS_MAX);
	return 0;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t xoshiro256ss(uint64_t s[4])
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

int shx_sampler_new(const struct shx_sample_params *p, int32_t n_vocab,
		    struct shx_sampler **out)
{
	struct shx_sampler *s;
	uint64_t x = p->seed;

	if (shx_sample_check(p, NULL, 0) || n_vocab < 1)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = *p;
	s->n_vocab = n_vocab;
	for (int i = 0; i < 4; i++)
		s->rng[i] = splitmix64(&x);
	s->penalize = p->penalty_last_n != 0 &&
		      (p->repeat_penalty != 1 || p->frequency_penalty != 0 ||
		       p->presence_penalty != 0);
	s->cand = malloc(sizeof(*s->cand) * (size_t)n_vocab);
	if (!s->cand) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void shx_sampler_free(struct shx_sampler *s)
{
	if (!s)
		return;
	free(s->hist);
	free(s->seen);
	free(s->pen);
	free(s->cand);
	free(s);
}

/* The index of id in seen[], or where it would go. */
static size_t seen_find(const struct shx_sampler *s, int32_t id)
{
	size_t lo = 0, hi = s->n_seen;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->seen[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int seen_add(struct shx_sampler *s, int32_t id)
{
	size_t i = seen_find(s, id);

	if (i < s->n_seen && s->seen[i].id == id) {
		s->seen[i].count++;
		return 0;
	}
	if (s->n_seen == s->seen_cap) {
		size_t cap = s->seen_cap ? 2 * s->seen_cap : 64;
		struct seen *n = realloc(s->seen, cap * sizeof(*n));
		float *pen = realloc(s->pen, cap * sizeof(*pen));

		if (n)
			s->seen = n;
		if (pen)
			s->pen = pen;
		if (!n || !pen)
			return -ENOMEM;
		s->seen_cap = cap;
	}
	memmove(&s->seen[i + 1], &s->seen[i],
		(s->n_seen - i) * sizeof(*s->seen));
	s->seen[i] = (struct seen){ id, 1 };
	s->n_seen++;
	return 0;
}

static void seen_drop(struct shx_sampler *s, int32_t id)
{
	size_t i = seen_find(s, id);

	if (i == s->n_seen || s->seen[i].id != id || --s->seen[i].count)
		return;
	s->n_seen--;
	memmove(&s->seen[i], &s->seen[i + 1],
		(s->n_seen - i) * sizeof(*s->seen));
}

/* Out of memory, the token is left out of the window: penalties a little
 * weaker, never a failure of the sequence. */
void shx_sampler_accept(struct shx_sampler *s, int32_t id)
{
	size_t last_n = (size_t)s->p.penalty_last_n;

	if (!s->penalize || id < 0 || id >= s->n_vocab)
		return;
	if (s->p.penalty_last_n < 0) {	/* all: nothing leaves the window */
		seen_add(s, id);
		return;
	}
	if (s->hist_len == last_n) {
		seen_drop(s, s->hist[s->hist_head]);
		s->hist[s->hist_head] = id;
		s->hist_head = (s->hist_head + 1) % last_n;
		seen_add(s, id);
		return;
	}
	if (s->hist_len == s->hist_cap) {
		size_t cap = s->hist_cap ? 2 * s->hist_cap : 64;
		int32_t *h;

		if (cap > last_n)
			cap = last_n;
		h = realloc(s->hist, cap * sizeof(*h));
		if (!h)
			return;
		s->hist = h;
		s->hist_cap = cap;
	}
	if (seen_add(s, id))
		return;
	s->hist[s->hist_len++] = id;
}

/* llama.cpp's penalties (llama_sampler_penalties_apply). */
static float penalize(const struct shx_sample_params *p, float l, int32_t n)
{
	l = l <= 0 ? l * p->repeat_penalty : l / p->repeat_penalty;
	return l - (float)n * p->frequency_penalty - p->presence_penalty;
}

/* Highest first, ties: lower id. */
static bool better(struct cand a, struct cand b)
{
	return a.l > b.l || (a.l == b.l && a.id < b.id);
}

static int cmp_cand(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;

	return better(*a, *b) ? -1 : better(*b, *a) ? 1 : 0;
}

/* A min-heap of the best k: h[0] is the worst of them. */
static void heap_down(struct cand *h, size_t n, size_t i)
{
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			return;
		if (c + 1 < n && better(h[c], h[c + 1]))
			c++;
		if (!better(h[i], h[c]))
			return;
		struct cand t = h[i];
		h[i] = h[c];
		h[c] = t;
		i = c;
	}
}

static void heap_offer(struct cand *h, size_t *n, size_t k, struct cand c)
{
	size_t i;

	if (*n == k) {
		if (better(c, h[0])) {
			h[0] = c;
			heap_down(h, k, 0);
		}
		return;
	}
	i = (*n)++;
	h[i] = c;
	while (i && better(h[(i - 1) / 2], h[i])) {
		struct cand t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

/* Heap to highest first, in place. */
static void heap_sort(struct cand *h, size_t n)
{
	while (n > 1) {
		struct cand t = h[0];
		h[0] = h[--n];
		h[n] = t;
		heap_down(h, n, 0);
	}
}

/*
 * A full row after the penalties, as runs: row[lo, hi) untouched, then
 * the penalized seen token hi (unless hi == n). Nothing else reads it.
 */
struct row_pass {
	void (*run)(struct row_pass *r, const float *row, int32_t lo,
		    int32_t hi);
	void (*one)(struct row_pass *r, int32_t id, float l);
};

static void row_walk(const struct shx_sampler *s, const float *row,
		     struct row_pass *r)
{
	int32_t lo = 0;

	for (size_t j = 0; j < s->n_seen; j++) {
		r->run(r, row, lo, s->seen[j].id);
		r->one(r, s->seen[j].id, s->pen[j]);
		lo = s->seen[j].id + 1;
	}
	r->run(r, row, lo, s->n_vocab);
}

/* The top k, a min-heap; logits that are not > its worst cost a compare. */
struct pass_top {
	struct row_pass r;
	struct cand *h;
	size_t n, k;
	bool bad;
};

/* Whether one of 16 logits is above thr: branch-free, so it vectorizes. */
static bool any_above(const float *x, float thr)
{
	int m = 0;

	for (int j = 0; j < 16; j++)
		m |= x[j] > thr;
	return m;
}

static void top_run(struct row_pass *r, const float *row, int32_t lo,
		    int32_t hi)
{
	struct pass_top *t = (struct pass_top *)r;
	float thr = t->n == t->k ? t->h[0].l : -INFINITY;

	for (int32_t i = lo; i < hi; i++) {
		/* whole blocks below the heap's worst cost one test */
		if (!((i - lo) & 15) && hi - i >= 16 && !any_above(row + i, thr)) {
			i += 15;
			continue;
		}
		if (!(row[i] > thr))
			continue;
		heap_offer(t->h, &t->n, t->k, (struct cand){ i, row[i] });
		if (t->n == t->k)
			thr = t->h[0].l;
	}
}

static void top_one(struct row_pass *r, int32_t id, float l)
{
	struct pass_top *t = (struct pass_top *)r;

	if (l > -INFINITY)
		heap_offer(t->h, &t->n, t->k, (struct cand){ id, l });
}

/* Every token, in id order, and the max (NaN once one is NaN). */
struct pass_all {
	struct row_pass r;
	struct cand *c;
	float max;
};

static void all_one(struct row_pass *r, int32_t id, float l)
{
	struct pass_all *a = (struct pass_all *)r;

	a->c[id] = (struct cand){ id, l };
	if (l > a->max || isnan(l))
		a->max = l;
}

static void all_run(struct row_pass *r, const float *row, int32_t lo,
		    int32_t hi)
{
	for (int32_t i = lo; i < hi; i++)
		all_one(r, i, row[i]);
}

/* sum exp(l - max): the softmax's denominator. */
struct pass_sum {
	struct row_pass r;
	float max;
	double sum;
};

static void sum_run(struct row_pass *r, const float *row, int32_t lo,
		    int32_t hi)
{
	struct pass_sum *p = (struct pass_sum *)r;
	float m = p->max, acc = 0;

	/* float partial sums of at most 1024 terms, each <= 1 */
	for (int32_t i = lo; i < hi; i++) {
		acc += expf(row[i] - m);
		if (!((i - lo + 1) & 1023)) {
			p->sum += acc;
			acc = 0;
		}
	}
	p->sum += acc;
}

static void sum_one(struct row_pass *r, int32_t id, float l)
{
	struct pass_sum *p = (struct pass_sum *)r;

	(void)id;
	p->sum += expf(l - p->max);
}

/* The candidates of one row, the part [0, sorted) highest first and
 * every later one below all of those. */
struct cands {
	struct cand *c;
	size_t n, sorted;
	float max;
};

/* Compacts c to the candidates with l >= thr, keeping their order. */
static void cands_cut(struct cands *cs, float thr)
{
	size_t j = 0, sorted = 0;

	for (size_t i = 0; i < cs->n; i++) {
		if (!(cs->c[i].l >= thr))
			continue;
		if (i < cs->sorted)
			sorted++;
		cs->c[j++] = cs->c[i];
	}
	cs->n = j;
	cs->sorted = sorted;
}

/* float exp, summed in double: one expf per candidate */
static double weight(const struct cands *cs, size_t i, float inv_t)
{
	return expf((cs->c[i].l - cs->max) * inv_t);
}

/*
 * The number of candidates, highest first, whose weights exp(l - max)
 * reach target (all of them if none do). The sorted
 * head grows by a logit threshold: every candidate left outside is lighter
 * than each one in it, so the walk over the head is the walk over the
 * sorted whole.
 */
static size_t cands_reach(struct cands *cs, double target)
{
	double cum = 0;
	size_t i = 0;
	float span = 8;

	for (;;) {
		for (; i < cs->sorted; i++) {
			cum += weight(cs, i, 1);
			if (cum >= target)
				return i + 1;
		}
		if (cs->sorted == cs->n)
			return cs->n;
		/* the next head: logits within span of the max */
		float thr = span > 1e4f ? -INFINITY : cs->max - span;
		size_t h = cs->sorted;

		for (size_t k = h; k < cs->n; k++) {
			if (cs->c[k].l >= thr) {
				struct cand t = cs->c[h];
				cs->c[h++] = cs->c[k];
				cs->c[k] = t;
			}
		}
		qsort(cs->c + cs->sorted, h - cs->sorted, sizeof(*cs->c),
		      cmp_cand);
		cs->sorted = h;
		span *= 4;
	}
}

static double cands_sum(const struct cands *cs, float inv_t)
{
	double sum = 0;

	for (size_t i = 0; i < cs->n; i++)
		sum += weight(cs, i, inv_t);
	return sum;
}

/* The best n_logprobs of the candidates, before any truncation. */
static void top_logprobs(struct cands *cs, double lse,
			 struct shx_sample_out *out, int32_t k)
{
	size_t n = 0;

	if ((size_t)k > cs->n)
		k = (int32_t)cs->n;
	if (cs->sorted >= (size_t)k) {
		n = (size_t)k;
		memcpy(out->top, cs->c, n * sizeof(out->top[0]));
	} else {
		struct cand h[SHX_SAMPLE_LOGPROBS_MAX];

		for (size_t i = 0; i < cs->n; i++)
			heap_offer(h, &n, (size_t)k, cs->c[i]);
		heap_sort(h, n);
		memcpy(out->top, h, n * sizeof(out->top[0]));
	}
	for (size_t i = 0; i < n; i++)
		out->top[i].logprob = (float)(out->top[i].logprob - lse);
	out->n_top = (int32_t)n;
}

_Static_assert(sizeof(struct cand) == sizeof(struct shx_logprob) &&
	      offsetof(struct cand, l) == offsetof(struct shx_logprob, logprob),
	      "top_logprobs copies candidates as logprobs");

static int cmp_id(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;

	return (a->id > b->id) - (a->id < b->id);
}

/*
 * The index of the token drawn with u in (0, 1]: the kept candidates in
 * id order, so a row and its pairs draw alike, and every token keeps its
 * order without sorting when nothing sorted them.
 */
static size_t draw(struct cands *cs, float inv_t, double u)
{
	double target, cum = 0;

	if (cs->sorted)
		qsort(cs->c, cs->n, sizeof(*cs->c), cmp_id);
	cs->sorted = 0;
	target = u * cands_sum(cs, inv_t);
	for (size_t i = 0; i < cs->n; i++) {
		double w = weight(cs, i, inv_t);

		cum += w;
		if (cum >= target && w > 0)
			return i;
	}
	/* rounding left the target above the sum: the last with weight */
	for (size_t i = cs->n; i-- > 0;)
		if (weight(cs, i, inv_t) > 0)
			return i;
	return 0;
}

/* A temperature so small that 1 / t is not finite is greedy too. */
static bool greedy(const struct shx_sample_params *p)
{
	return !isfinite(1 / p->temperature);
}

/*
 * Top-k, top-p, min-p on candidates that are not empty, max finite.
 * top-p's probabilities are over the top-k (llama.cpp's order); min-p's
 * ratio to the max is the same before and after top-p, so it cuts first.
 */
static void cands_trunc(const struct shx_sample_params *p, struct cands *cs)
{
	double topp;

	/* the candidates of a top-k are sorted already */
	if (p->top_k > 0 && (size_t)p->top_k < cs->n)
		cs->n = cs->sorted = (size_t)p->top_k;
	topp = p->top_p < 1 ? p->top_p * cands_sum(cs, 1) : 0;
	if (p->min_p > 0)
		cands_cut(cs, cs->max + logf(p->min_p));
	if (p->top_p < 1)
		cs->n = cs->sorted = cands_reach(cs, topp);
}

/*
 * Penalties applied; lse: max + log(sum exp(l - max)) over the whole row
 * (or the pairs), NAN when logprobs are not wanted. Truncation, then one
 * draw.
 */
static int pick(struct shx_sampler *s, struct cands *cs, double lse,
		struct shx_sample_out *out)
{
	const struct shx_sample_params *p = &s->p;
	float inv_t = 1 / p->temperature;
	size_t best = 0;

	if (!cs->n || !(cs->max > -INFINITY) || isinf(cs->max))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!isnan(lse) && p->n_logprobs)
		top_logprobs(cs, lse, out, p->n_logprobs);
	if (greedy(p)) {
		for (size_t i = 1; i < cs->n; i++)
			if (better(cs->c[i], cs->c[best]))
				best = i;
	} else {
		double u = (double)((xoshiro256ss(s->rng) >> 11) + 1) * 0x1p-53;

		cands_trunc(p, cs);
		best = draw(cs, inv_t, u);
	}
	out->id = cs->c[best].id;
	if (!isnan(lse))
		out->logprob = (float)(cs->c[best].l - lse);
	return 0;
}

static bool want_logprobs(const struct shx_sampler *s)
{
	return s->p.logprobs || s->p.n_logprobs > 0;
}

/* The candidates of a full row of n_vocab logits and their lse (pick). */
static int gather_row(struct shx_sampler *s, const float *logits,
		      struct cands *cs, double *lse)
{
	const struct shx_sample_params *p = &s->p;
	int32_t n = s->n_vocab;

	*cs = (struct cands){ .c = s->cand, .max = -INFINITY };
	*lse = NAN;
	for (size_t j = 0; j < s->n_seen; j++)
		s->pen[j] = penalize(p, logits[s->seen[j].id], s->seen[j].count);
	if (p->top_k > 0 || greedy(p)) {
		/* greedy needs one candidate, logprobs n_logprobs */
		size_t k = greedy(p) ? 1 : (size_t)p->top_k;
		struct pass_top t = { { top_run, top_one }, s->cand, 0, 0, 0 };

		if (k < (size_t)p->n_logprobs)
			k = (size_t)p->n_logprobs;
		t.k = k < (size_t)n ? k : (size_t)n;
		row_walk(s, logits, &t.r);
		heap_sort(t.h, t.n);
		cs->n = cs->sorted = t.n;
		if (t.n)
			cs->max = t.h[0].l;
	} else {
		struct pass_all a = { { all_run, all_one }, s->cand,
				      -INFINITY };

		row_walk(s, logits, &a.r);
		cs->n = (size_t)n;
		cs->max = a.max;
	}
	if (want_logprobs(s) && cs->n && cs->max > -INFINITY) {
		struct pass_sum sum = { { sum_run, sum_one }, cs->max, 0 };

		row_walk(s, logits, &sum.r);
		if (isnan(sum.sum))
			return -EINVAL;
		*lse = cs->max + log(sum.sum);
	}
	return 0;
}

int shx_sampler_sample(struct shx_sampler *s, const float *logits, int32_t n,
		       struct shx_sample_out *out)
{
	struct cands cs;
	double lse;
	int e;

	if (n != s->n_vocab)
		return -EINVAL;
	e = gather_row(s, logits, &cs, &lse);
	return e ? e : pick(s, &cs, lse, out);
}

/* The candidates of n pairs, sorted, and their lse (pick). */
static int gather_pairs(struct shx_sampler *s,
			const struct shx_logit_pair *pairs, int32_t n,
			struct cands *cs, double *lse)
{
	*cs = (struct cands){ .c = s->cand, .max = -INFINITY };
	*lse = NAN;

	if (n < 1 || n > s->n_vocab)
		return -EINVAL;
	for (int32_t i = 0; i < n; i++) {
		struct cand c = { pairs[i].id, pairs[i].logit };
		size_t j;

		if (c.id < 0 || c.id >= s->n_vocab || isnan(c.l))
			return -EINVAL;
		j = seen_find(s, c.id);
		if (j < s->n_seen && s->seen[j].id == c.id)
			c.l = penalize(&s->p, c.l, s->seen[j].count);
		if (c.l > cs->max)
			cs->max = c.l;
		cs->c[i] = c;
	}
	cs->n = (size_t)n;
	qsort(cs->c, cs->n, sizeof(*cs->c), cmp_cand);
	cs->sorted = cs->n;
	if (want_logprobs(s) && cs->max > -INFINITY)
		*lse = cs->max + log(cands_sum(cs, 1));
	return 0;
}

int shx_sampler_sample_pairs(struct shx_sampler *s,
			     const struct shx_logit_pair *pairs, int32_t n,
			     struct shx_sample_out *out)
{
	struct cands cs;
	double lse;
	int e = gather_pairs(s, pairs, n, &cs, &lse);

	return e ? e : pick(s, &cs, lse, out);
}

int shx_logprobs(const float *logits, int32_t n, int32_t id, int32_t k,
		 struct shx_sample_out *out)
{
	/* greedy, no penalties: the row's top max(k, 1) and its lse */
	struct cand top[SHX_SAMPLE_LOGPROBS_MAX];
	struct shx_sampler s = {
		.p = { .temperature = 0, .top_p = 1, .repeat_penalty = 1,
		       .n_logprobs = k, .logprobs = true },
		.n_vocab = n, .cand = top,
	};
	struct cands cs;
	double lse;
	int e;

	if (n < 1 || id < 0 || id >= n || k < 0 ||
	    k > SHX_SAMPLE_LOGPROBS_MAX)
		return -EINVAL;
	e = gather_row(&s, logits, &cs, &lse);
	if (!e && (isnan(lse) || isinf(cs.max) || isnan(logits[id])))
		e = -EINVAL;
	if (e)
		return e;
	memset(out, 0, sizeof(*out));
	out->id = id;
	out->logprob = (float)(logits[id] - lse);
	if (k)
		top_logprobs(&cs, lse, out, k);
	return 0;
}
