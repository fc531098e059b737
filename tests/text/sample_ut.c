// SPDX-License-Identifier: MIT
/*
 * tests/text/sample_ut: the sampler (text/sample.c, included to reach the
 * candidate set it keeps) against a double-precision reference written
 * here, and the stop-string matcher (text/stop.c) at every split.
 */
#include "../../text/sample.c"

#include <time.h>

#include "syshax_ops.h"

#include "../t_cunit.h"

/* The test's own PRNG for logits and streams (not the sampler's). */
static uint64_t g_rng = 42;

static double t_uniform(void)
{
	return (double)(splitmix64(&g_rng) >> 11) * 0x1p-53;
}

static double t_normal(void)
{
	double u = t_uniform() + 0x1p-54, v = t_uniform();

	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static void t_logits(float *l, int32_t n, double scale)
{
	for (int32_t i = 0; i < n; i++)
		l[i] = (float)(scale * t_normal());
}

static struct shx_sampler *t_new(const struct shx_sample_params *p,
				 int32_t n)
{
	struct shx_sampler *s = NULL;

	CU_ASSERT_FATAL(shx_sampler_new(p, n, &s) == 0);
	return s;
}

/*
 * The reference: sampling probabilities in double over a penalized row,
 * llama.cpp's order (top-k, top-p over the top-k's softmax, min-p against
 * the max, temperature). prob[i] is 0 for every token not kept.
 */
static int t_cmp_desc(const void *x, const void *y, void *arg)
{
	const double *l = arg;
	int a = *(const int *)x, b = *(const int *)y;

	if (l[a] != l[b])
		return l[a] > l[b] ? -1 : 1;
	return a - b;
}

static void t_reference(const double *l, int32_t n,
			const struct shx_sample_params *p, double *prob)
{
	int *ord = malloc(sizeof(int) * (size_t)n);
	int32_t keep = n;
	double max, sum = 0, cum = 0;

	for (int32_t i = 0; i < n; i++)
		ord[i] = i;
	qsort_r(ord, (size_t)n, sizeof(int), t_cmp_desc, (void *)l);
	max = l[ord[0]];
	if (p->top_k > 0 && p->top_k < keep)
		keep = p->top_k;
	for (int32_t i = 0; i < keep; i++)
		sum += exp(l[ord[i]] - max);
	if (p->top_p < 1) {
		for (int32_t i = 0; i < keep; i++) {
			cum += exp(l[ord[i]] - max) / sum;
			if (cum >= p->top_p) {
				keep = i + 1;
				break;
			}
		}
	}
	for (int32_t i = 0; i < n; i++)
		prob[i] = 0;
	sum = 0;
	for (int32_t i = 0; i < keep; i++) {
		if (p->min_p > 0 && exp(l[ord[i]] - max) < p->min_p)
			break;
		prob[ord[i]] = exp((l[ord[i]] - max) / p->temperature);
		sum += prob[ord[i]];
	}
	for (int32_t i = 0; i < n; i++)
		prob[i] /= sum;
	free(ord);
}

static void t_widen(const float *f, double *d, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		d[i] = f[i];
}

static void test_greedy(void)
{
	struct shx_sample_params p;
	enum { N = 5000 };
	float *l = malloc(sizeof(float) * N);
	struct shx_logit_pair pairs[64];
	struct shx_sample_out o;

	shx_sample_defaults(&p);
	p.temperature = 0;
	struct shx_sampler *s = t_new(&p, N);

	for (int trial = 0; trial < 50; trial++) {
		int32_t best = 0;

		t_logits(l, N, 3);
		/* ties at the max: the lower id wins */
		int32_t a = (int32_t)(t_uniform() * N);
		int32_t b = (int32_t)(t_uniform() * N);

		l[a] = l[b] = 100;
		for (int32_t i = 1; i < N; i++)
			if (l[i] > l[best])
				best = i;
		CU_ASSERT_EQUAL(best, a < b ? a : b);
		CU_ASSERT_EQUAL_FATAL(shx_sampler_sample(s, l, N, &o), 0);
		CU_ASSERT_EQUAL(o.id, best);
		/* the same tie as pairs in the engine's order */
		for (int i = 0; i < 64; i++)
			pairs[i] = (struct shx_logit_pair){ (int32_t)(63 - i),
							    i < 3 ? 5.0f : -i };
		CU_ASSERT_EQUAL_FATAL(shx_sampler_sample_pairs(s, pairs, 64, &o),
				      0);
		CU_ASSERT_EQUAL(o.id, 61);
	}
	shx_sampler_free(s);
	free(l);
}

/* The set of tokens gather + cands_trunc keep equals the reference's. */
static void t_check_set(const struct shx_sample_params *p, int32_t n)
{
	float *l = malloc(sizeof(float) * (size_t)n);
	double *d = malloc(sizeof(double) * (size_t)n);
	double *ref = malloc(sizeof(double) * (size_t)n);
	char *in = calloc((size_t)n, 1);
	struct shx_sampler *s = t_new(p, n);
	struct cands cs;
	double lse;
	int32_t nref = 0;

	t_logits(l, n, 2 + 3 * t_uniform());
	t_widen(l, d, n);
	t_reference(d, n, p, ref);
	CU_ASSERT_EQUAL_FATAL(gather_row(s, l, &cs, &lse), 0);
	cands_trunc(p, &cs);
	for (size_t i = 0; i < cs.n; i++) {
		CU_ASSERT(ref[cs.c[i].id] > 0);
		CU_ASSERT(!in[cs.c[i].id]);
		in[cs.c[i].id] = 1;
	}
	for (int32_t i = 0; i < n; i++)
		nref += ref[i] > 0;
	CU_ASSERT_EQUAL(cs.n, (size_t)nref);
	if (cs.n != (size_t)nref)
		printf("\n  top_k %d top_p %g min_p %g n %d: %zu kept, reference %d\n",
		       p->top_k, p->top_p, p->min_p, n, cs.n, nref);
	shx_sampler_free(s);
	free(in);
	free(ref);
	free(d);
	free(l);
}

static void test_truncation_sets(void)
{
	static const struct {
		int32_t top_k;
		float top_p, min_p;
	} c[] = {
		{ 40, 1, 0 }, { 0, 0.95f, 0 }, { 0, 1, 0.05f }, { 40, 0.95f, 0 },
		{ 40, 0.9f, 0.05f }, { 0, 0.5f, 0.01f }, { 1, 1, 0 },
		{ 0, 0, 0 }, { 200, 0.99f, 0.001f }, { 0, 0.999f, 0 },
	};
	struct shx_sample_params p;

	shx_sample_defaults(&p);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		p.top_k = c[i].top_k;
		p.top_p = c[i].top_p;
		p.min_p = c[i].min_p;
		for (int trial = 0; trial < 20; trial++)
			t_check_set(&p, trial & 1 ? 1000 : 151936);
	}
}

/* Wilson-Hilferty: the chi-square value a df-degree statistic exceeds
 * with probability 1e-4 (z = 3.719). */
static double t_chi2_crit(int df)
{
	double a = 2.0 / (9 * df);

	return df * pow(1 - a + 3.719 * sqrt(a), 3);
}

/*
 * 100k draws against the reference probabilities: no token outside the
 * kept set, and a chi-square over bins of expected count >= 5 (smaller
 * ones pooled) under the 1e-4 critical value.
 */
static void t_chi2(const struct shx_sample_params *p, int32_t n, bool pairs)
{
	enum { DRAWS = 100000 };
	float *l = malloc(sizeof(float) * (size_t)n);
	double *d = malloc(sizeof(double) * (size_t)n);
	double *ref = malloc(sizeof(double) * (size_t)n);
	long *cnt = calloc((size_t)n, sizeof(long));
	struct shx_logit_pair pr[SYSHAX_STEP_TOPK_MAX];
	struct shx_sampler *s = t_new(p, n);
	struct shx_sample_out o;
	double chi2 = 0, pool_e = 0, pool_o = 0;
	long outside = 0;
	int df = -1;

	t_logits(l, n, 1.5);
	if (pairs) {
		/* only the 64 highest count: the rest -inf */
		struct cands cs;
		double lse;
		struct shx_sample_params q = *p;

		q.top_k = SYSHAX_STEP_TOPK_MAX;
		q.top_p = 1;
		q.min_p = 0;
		struct shx_sampler *t = t_new(&q, n);

		CU_ASSERT_EQUAL_FATAL(gather_row(t, l, &cs, &lse), 0);
		for (size_t i = 0; i < cs.n; i++)
			pr[i] = (struct shx_logit_pair){ cs.c[i].id, cs.c[i].l };
		for (int32_t i = 0; i < n; i++)
			d[i] = -INFINITY;
		for (size_t i = 0; i < cs.n; i++)
			d[pr[i].id] = pr[i].logit;
		shx_sampler_free(t);
	} else {
		t_widen(l, d, n);
	}
	t_reference(d, n, p, ref);
	for (int i = 0; i < DRAWS; i++) {
		int e = pairs ? shx_sampler_sample_pairs(s, pr, SYSHAX_STEP_TOPK_MAX, &o)
			      : shx_sampler_sample(s, l, n, &o);

		CU_ASSERT_EQUAL_FATAL(e, 0);
		cnt[o.id]++;
	}
	for (int32_t i = 0; i < n; i++) {
		double e = ref[i] * DRAWS;

		if (ref[i] == 0) {
			outside += cnt[i];
			continue;
		}
		if (e < 5) {
			pool_e += e;
			pool_o += (double)cnt[i];
			continue;
		}
		chi2 += (cnt[i] - e) * (cnt[i] - e) / e;
		df++;
	}
	if (pool_e > 0) {
		chi2 += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
		df++;
	}
	CU_ASSERT_EQUAL(outside, 0);
	CU_ASSERT(df >= 1);
	if (df >= 1) {
		CU_ASSERT(chi2 < t_chi2_crit(df));
		printf("\n  chi2 %.1f, df %d, critical %.1f ", chi2, df,
		       t_chi2_crit(df));
	}
	shx_sampler_free(s);
	free(cnt);
	free(ref);
	free(d);
	free(l);
}

static void test_distribution(void)
{
	struct shx_sample_params p;

	shx_sample_defaults(&p);
	p.seed = 7;
	p.temperature = 0.7f;
	p.top_k = 30;
	p.top_p = 0.9f;
	p.min_p = 0.02f;
	t_chi2(&p, 50, false);		/* the top-k pass */
	p.top_k = 0;
	p.temperature = 1.3f;
	t_chi2(&p, 3000, false);	/* every token */
	p.top_p = 1;
	p.min_p = 0;
	p.temperature = 1;
	t_chi2(&p, 500, false);		/* OpenAI's defaults */
	p.temperature = 0.8f;
	p.top_p = 0.95f;
	t_chi2(&p, 1000, true);		/* the engine's pairs */
}

static void t_sequence(const struct shx_sample_params *p, const float *l,
		       int32_t n, int32_t *ids, int len)
{
	struct shx_sampler *s = t_new(p, n);
	struct shx_sample_out o;

	for (int i = 0; i < len; i++) {
		CU_ASSERT_EQUAL_FATAL(shx_sampler_sample(s, l, n, &o), 0);
		ids[i] = o.id;
		shx_sampler_accept(s, o.id);
	}
	shx_sampler_free(s);
}

static void test_seed(void)
{
	enum { N = 2000, LEN = 500 };
	float *l = malloc(sizeof(float) * N);
	int32_t a[LEN], b[LEN], c[LEN];
	struct shx_sample_params p;

	shx_sample_defaults(&p);
	p.temperature = 1.2f;
	p.top_p = 0.98f;
	p.repeat_penalty = 1.1f;
	p.seed = 1234;
	t_logits(l, N, 1);
	t_sequence(&p, l, N, a, LEN);
	t_sequence(&p, l, N, b, LEN);
	p.seed = 1235;
	t_sequence(&p, l, N, c, LEN);
	CU_ASSERT(!memcmp(a, b, sizeof(a)));
	CU_ASSERT(memcmp(a, c, sizeof(a)));
	free(l);
}

/* The window's counts, from the accepted ids written out. */
static int32_t t_count(const int32_t *acc, int n_acc, int last_n, int32_t id)
{
	int32_t c = 0;

	for (int i = last_n < 0 || n_acc < last_n ? 0 : n_acc - last_n;
	     i < n_acc; i++)
		c += acc[i] == id;
	return c;
}

static void test_penalties(void)
{
	enum { N = 3000 };
	static const int last_n[] = { 8, 64, -1 };
	float *l = malloc(sizeof(float) * N);
	int32_t acc[200];
	struct shx_sample_params p;

	shx_sample_defaults(&p);
	p.top_k = 0;
	p.repeat_penalty = 1.3f;
	p.frequency_penalty = 0.4f;
	p.presence_penalty = -0.25f;
	t_logits(l, N, 2);
	for (size_t k = 0; k < sizeof(last_n) / sizeof(last_n[0]); k++) {
		p.penalty_last_n = last_n[k];
		struct shx_sampler *s = t_new(&p, N);

		for (int i = 0; i < 200; i++) {
			struct cands cs;
			double lse;
			int changed = 0, window = 0;

			CU_ASSERT_EQUAL_FATAL(gather_row(s, l, &cs, &lse), 0);
			for (int32_t id = 0; id < N; id++) {
				int32_t c = t_count(acc, i, last_n[k], id);
				double v = l[id];

				if (c) {
					v = v <= 0 ? v * 1.3 : v / 1.3;
					v -= c * 0.4 - 0.25;
					window++;
				}
				CU_ASSERT_EQUAL(cs.c[id].id, id);
				CU_ASSERT(fabs(cs.c[id].l - v) <= 1e-5 * (1 + fabs(v)));
				changed += cs.c[id].l != l[id];
			}
			CU_ASSERT_EQUAL(changed, window);
			/* a small vocabulary repeats: counts above 1 */
			acc[i] = (int32_t)(t_uniform() * 40);
			shx_sampler_accept(s, acc[i]);
		}
		shx_sampler_free(s);
	}
	free(l);
}

static void test_logprobs(void)
{
	enum { N = 151936 };
	float *l = malloc(sizeof(float) * N);
	struct shx_logit_pair pr[20];
	struct shx_sample_params p;
	struct shx_sample_out o;
	double max = -INFINITY, sum = 0, top = 0;

	shx_sample_defaults(&p);
	p.n_logprobs = 20;
	p.top_k = 5;
	p.repeat_penalty = 1.5f;
	p.presence_penalty = 1;
	t_logits(l, N, 3);
	struct shx_sampler *s = t_new(&p, N);

	/* the top token twice in the window: the reference penalizes it */
	int32_t best = 0;

	for (int32_t i = 1; i < N; i++)
		if (l[i] > l[best])
			best = i;
	shx_sampler_accept(s, best);
	shx_sampler_accept(s, best);
	double pen = (l[best] > 0 ? l[best] / 1.5 : l[best] * 1.5) - 1;

	for (int32_t i = 0; i < N; i++)
		max = fmax(max, i == best ? pen : l[i]);
	for (int32_t i = 0; i < N; i++)
		sum += exp((i == best ? pen : l[i]) - max);
	CU_ASSERT_EQUAL_FATAL(shx_sampler_sample(s, l, N, &o), 0);
	CU_ASSERT_EQUAL(o.n_top, 20);
	for (int i = 0; i < o.n_top; i++) {
		int32_t id = o.top[i].id;
		double ref = (id == best ? pen : l[id]) - max - log(sum);

		CU_ASSERT(fabs(o.top[i].logprob - ref) < 1e-4);
		if (i)
			CU_ASSERT(o.top[i].logprob <= o.top[i - 1].logprob);
		top += exp(o.top[i].logprob);
	}
	CU_ASSERT(top < 1);
	double ref = (o.id == best ? pen : l[o.id]) - max - log(sum);

	CU_ASSERT(fabs(o.logprob - ref) < 1e-4);
	/* 20 pairs hold all the mass they are given: the sum is 1 */
	for (int i = 0; i < 20; i++)
		pr[i] = (struct shx_logit_pair){ i * 7, (float)(3 * t_normal()) };
	CU_ASSERT_EQUAL_FATAL(shx_sampler_sample_pairs(s, pr, 20, &o), 0);
	top = 0;
	for (int i = 0; i < o.n_top; i++)
		top += exp(o.top[i].logprob);
	CU_ASSERT_EQUAL(o.n_top, 20);
	CU_ASSERT(fabs(top - 1) < 1e-5);
	shx_sampler_free(s);
	/* no logprobs asked: none computed */
	p.n_logprobs = 0;
	s = t_new(&p, N);
	CU_ASSERT_EQUAL_FATAL(shx_sampler_sample(s, l, N, &o), 0);
	CU_ASSERT_EQUAL(o.n_top, 0);
	CU_ASSERT_EQUAL(o.logprob, 0);
	shx_sampler_free(s);
	free(l);
}

/* shx_logprobs: the raw row's log-softmax, whatever the sampler does. */
static void test_raw_logprobs(void)
{
	enum { N = 151936 };
	float *l = malloc(sizeof(float) * N);
	struct shx_sample_out o;
	double max = -INFINITY, sum = 0, top = 0;
	int32_t best = 0;

	t_logits(l, N, 3);
	for (int32_t i = 0; i < N; i++) {
		max = fmax(max, l[i]);
		best = l[i] > l[best] ? i : best;
	}
	for (int32_t i = 0; i < N; i++)
		sum += exp(l[i] - max);
	CU_ASSERT_EQUAL_FATAL(shx_logprobs(l, N, 77, 20, &o), 0);
	CU_ASSERT_EQUAL(o.id, 77);
	CU_ASSERT(fabs(o.logprob - (l[77] - max - log(sum))) < 1e-4);
	CU_ASSERT_EQUAL(o.n_top, 20);
	CU_ASSERT_EQUAL(o.top[0].id, best);
	for (int i = 0; i < o.n_top; i++) {
		CU_ASSERT(fabs(o.top[i].logprob -
			       (l[o.top[i].id] - max - log(sum))) < 1e-4);
		if (i)
			CU_ASSERT(o.top[i].logprob <= o.top[i - 1].logprob);
		top += exp(o.top[i].logprob);
	}
	CU_ASSERT(top <= 1);
	CU_ASSERT_EQUAL_FATAL(shx_logprobs(l, N, best, 0, &o), 0);
	CU_ASSERT_EQUAL(o.n_top, 0);
	CU_ASSERT(fabs(o.logprob - (max - max - log(sum))) < 1e-4);
	CU_ASSERT_EQUAL(shx_logprobs(l, N, N, 1, &o), -EINVAL);
	CU_ASSERT_EQUAL(shx_logprobs(l, N, 0, 21, &o), -EINVAL);
	CU_ASSERT_EQUAL(shx_logprobs(l, 0, 0, 1, &o), -EINVAL);
	l[5] = NAN;
	CU_ASSERT_EQUAL(shx_logprobs(l, N, 0, 1, &o), -EINVAL);
	l[5] = INFINITY;
	CU_ASSERT_EQUAL(shx_logprobs(l, N, 0, 1, &o), -EINVAL);
	free(l);
}

/* A row whose mass is all in its top 64 samples as its TOPK pairs do. */
static void test_pairs_equal_row(void)
{
	enum { N = 151936, LEN = 300 };
	float *l = malloc(sizeof(float) * N);
	struct shx_logit_pair pr[SYSHAX_STEP_TOPK_MAX];
	struct shx_sample_params p;
	struct shx_sample_out a, b;

	for (int32_t i = 0; i < N; i++)
		l[i] = -INFINITY;
	for (int i = 0; i < SYSHAX_STEP_TOPK_MAX; i++) {
		int32_t id = (int32_t)(t_uniform() * N);

		if (l[id] > -INFINITY) {
			i--;
			continue;
		}
		l[id] = (float)(2 * t_normal());
		pr[i] = (struct shx_logit_pair){ id, l[id] };
	}
	qsort(pr, SYSHAX_STEP_TOPK_MAX, sizeof(pr[0]), cmp_cand);
	for (int cfg = 0; cfg < 3; cfg++) {
		shx_sample_defaults(&p);
		p.seed = 99 + (uint64_t)cfg;
		p.logprobs = true;
		p.n_logprobs = 5;
		p.temperature = cfg == 2 ? 0 : 0.9f;
		p.top_p = cfg == 1 ? 0.9f : 1;
		p.top_k = cfg == 1 ? 40 : 0;
		p.min_p = cfg == 1 ? 0.01f : 0;
		p.frequency_penalty = 0.5f;
		struct shx_sampler *s = t_new(&p, N), *t = t_new(&p, N);

		for (int i = 0; i < LEN; i++) {
			CU_ASSERT_EQUAL_FATAL(shx_sampler_sample(s, l, N, &a), 0);
			CU_ASSERT_EQUAL_FATAL(
				shx_sampler_sample_pairs(t, pr, SYSHAX_STEP_TOPK_MAX, &b), 0);
			CU_ASSERT_EQUAL(a.id, b.id);
			CU_ASSERT(fabsf(a.logprob - b.logprob) < 1e-5f);
			CU_ASSERT_EQUAL(a.n_top, b.n_top);
			for (int k = 0; k < a.n_top && k < b.n_top; k++) {
				CU_ASSERT_EQUAL(a.top[k].id, b.top[k].id);
				CU_ASSERT(fabsf(a.top[k].logprob - b.top[k].logprob) < 1e-5f);
			}
			shx_sampler_accept(s, a.id);
			shx_sampler_accept(t, b.id);
		}
		shx_sampler_free(s);
		shx_sampler_free(t);
	}
	free(l);
}

static void test_bad_input(void)
{
	struct shx_sample_params p;
	struct shx_sampler *s;
	struct shx_sample_out o;
	struct shx_logit_pair pr[2] = { { 0, 1 }, { 5, 0 } };
	float l[4] = { 0, 1, 2, 3 };
	char err[128];

	/* one bad field at a time: -EINVAL, and the message names it */
#define T_BAD(field, value)						\
	do {								\
		shx_sample_defaults(&p);				\
		p.field = value;					\
		err[0] = 0;						\
		CU_ASSERT_EQUAL(shx_sample_check(&p, err, sizeof(err)), -EINVAL); \
		CU_ASSERT(strstr(err, #field) == err);			\
		CU_ASSERT_EQUAL(shx_sampler_new(&p, 4, &s), -EINVAL);	\
	} while (0)
	T_BAD(temperature, -0.5f);
	T_BAD(temperature, NAN);
	T_BAD(temperature, INFINITY);
	T_BAD(top_p, 1.01f);
	T_BAD(top_p, NAN);
	T_BAD(top_p, -0.1f);
	T_BAD(min_p, 2);
	T_BAD(min_p, NAN);
	T_BAD(repeat_penalty, 0);
	T_BAD(repeat_penalty, NAN);
	T_BAD(frequency_penalty, 2.5f);
	T_BAD(presence_penalty, NAN);
	T_BAD(penalty_last_n, -2);
	T_BAD(n_logprobs, 21);
	T_BAD(n_logprobs, -1);
#undef T_BAD
	shx_sample_defaults(&p);
	CU_ASSERT_EQUAL(shx_sample_check(&p, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(shx_sampler_new(&p, 0, &s), -EINVAL);
	s = t_new(&p, 4);
	CU_ASSERT_EQUAL(shx_sampler_sample(s, l, 3, &o), -EINVAL);
	l[2] = NAN;
	CU_ASSERT_EQUAL(shx_sampler_sample(s, l, 4, &o), -EINVAL);
	l[2] = INFINITY;
	CU_ASSERT_EQUAL(shx_sampler_sample(s, l, 4, &o), -EINVAL);
	for (int i = 0; i < 4; i++)
		l[i] = -INFINITY;
	CU_ASSERT_EQUAL(shx_sampler_sample(s, l, 4, &o), -EINVAL);
	CU_ASSERT_EQUAL(shx_sampler_sample_pairs(s, pr, 2, &o), -EINVAL);
	pr[1].id = 3;
	CU_ASSERT_EQUAL(shx_sampler_sample_pairs(s, pr, 2, &o), 0);
	CU_ASSERT_EQUAL(shx_sampler_sample_pairs(s, pr, 0, &o), -EINVAL);
	pr[1].logit = NAN;
	CU_ASSERT_EQUAL(shx_sampler_sample_pairs(s, pr, 2, &o), -EINVAL);
	shx_sampler_accept(s, -1);	/* ignored */
	shx_sampler_accept(s, 4);
	shx_sampler_free(s);
	shx_sampler_free(NULL);
}

static double t_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* ns per token on Qwen's vocabulary; the best of 5 runs of 200 tokens. */
static double t_speed(const struct shx_sample_params *p, const float *l,
		      int32_t n)
{
	struct shx_sampler *s = t_new(p, n);
	struct shx_sample_out o;
	double best = INFINITY;

	for (int r = 0; r < 5; r++) {
		double t0 = t_now_ns();

		for (int i = 0; i < 200; i++) {
			CU_ASSERT_EQUAL_FATAL(shx_sampler_sample(s, l, n, &o), 0);
			shx_sampler_accept(s, o.id);
		}
		best = fmin(best, (t_now_ns() - t0) / 200);
	}
	shx_sampler_free(s);
	return best;
}

static void test_speed(void)
{
	enum { N = 151936 };
	float *l = malloc(sizeof(float) * N);
	struct shx_sample_params p;
	double g, k, a, lp;

	t_logits(l, N, 2.5);
	shx_sample_defaults(&p);
	p.temperature = 0;
	g = t_speed(&p, l, N);
	p.temperature = 0.8f;
	p.top_k = 40;
	p.top_p = 0.95f;
	k = t_speed(&p, l, N);
	p.n_logprobs = 5;
	lp = t_speed(&p, l, N);
	shx_sample_defaults(&p);
	a = t_speed(&p, l, N);
	printf("\n  ns/token, %d logits: greedy %.0f, top-k 40 + top-p 0.95 + temperature %.0f (with 5 logprobs %.0f), OpenAI defaults (every token) %.0f ",
	       N, g, k, lp, a);
	/* small against a decode step (tens of ms): under 2 ms even on a
	 * loaded machine; sanitizer builds are too slow to tell */
#ifndef __SANITIZE_ADDRESS__
	CU_ASSERT(g < 2e6 && k < 2e6);
#endif
	free(l);
}

/* ---- stop strings ---- */

/* The reference: the text up to the first stop to end (longest of those). */
static size_t t_stop_ref(const char *text, const char *const *stops,
			 size_t n, bool *hit)
{
	size_t len = strlen(text);

	for (size_t end = 1; end <= len; end++) {
		size_t best = 0;

		for (size_t k = 0; k < n; k++) {
			size_t l = strlen(stops[k]);

			if (l <= end && l > best &&
			    !memcmp(text + end - l, stops[k], l))
				best = l;
		}
		if (best) {
			*hit = true;
			return end - best;
		}
	}
	*hit = false;
	return len;
}

/* Pushes text in pieces cut at the given positions, checks every push
 * emits all but what could still begin a stop string. */
static void t_stop_run(const char *text, const char *const *stops, size_t n,
		       const size_t *cuts, size_t ncuts)
{
	size_t len = strlen(text), got = 0, from = 0, want;
	char out[1024], buf[1024];
	struct shx_stop *st;
	bool hit = false, ref_hit;

	want = t_stop_ref(text, stops, n, &ref_hit);
	CU_ASSERT_EQUAL_FATAL(shx_stop_new(stops, n, &st), 0);
	for (size_t c = 0; c <= ncuts; c++) {
		size_t to = c < ncuts ? cuts[c] : len;
		ssize_t r = shx_stop_push(st, text + from, to - from, buf,
					  sizeof(buf), &hit);

		CU_ASSERT_FATAL(r >= 0);
		memcpy(out + got, buf, (size_t)r);
		got += (size_t)r;
		from = to;
		if (hit)
			break;
		/* held back: exactly the longest tail that begins a stop */
		size_t hold = 0;

		for (size_t k = 0; k < n; k++)
			for (size_t l = strlen(stops[k]) - 1; l > hold; l--)
				if (l <= to && !memcmp(text + to - l, stops[k], l)) {
					hold = l;
					break;
				}
		CU_ASSERT_EQUAL(got, to - hold);
	}
	if (!hit) {
		ssize_t r = shx_stop_flush(st, buf, sizeof(buf));

		CU_ASSERT_FATAL(r >= 0);
		memcpy(out + got, buf, (size_t)r);
		got += (size_t)r;
	}
	CU_ASSERT_EQUAL(hit, ref_hit);
	CU_ASSERT_EQUAL(got, want);
	CU_ASSERT(!memcmp(out, text, want));
	shx_stop_free(st);
}

static void test_stop_splits(void)
{
	static const struct {
		const char *text;
		const char *stops[SHX_STOP_MAX];
		size_t n;
	} c[] = {
		{ "Hello world. User: hi", { "User:" }, 1 },
		{ "abababc", { "ababc" }, 1 },
		{ "xxabcx", { "abc", "b" }, 2 },	/* "b" ends first */
		{ "the end</s>more", { "</s>", "<|im_end|>", "\n\n", "END" }, 4 },
		{ "no stop here <|im_en", { "<|im_end|>" }, 1 },
		{ "aaaa", { "aaab" }, 1 },
		{ "żółw 🐢 stop", { "🐢", "ó" }, 2 },
		{ "line\n\nnext", { "\n\n", "\n\nnext" }, 2 },	/* longest */
		{ "plain text", { NULL }, 0 },
	};
	size_t cuts[64];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t len = strlen(c[i].text);

		/* one cut at every position, then every byte alone */
		for (size_t k = 0; k <= len; k++) {
			cuts[0] = k;
			t_stop_run(c[i].text, c[i].stops, c[i].n, cuts, 1);
		}
		for (size_t k = 0; k < len && k < 64; k++)
			cuts[k] = k + 1;
		t_stop_run(c[i].text, c[i].stops, c[i].n, cuts, len - 1);
		/* random cuts */
		for (int r = 0; r < 20; r++) {
			size_t m = 0, at = 0;

			while (m < 8 && at < len) {
				at += 1 + (size_t)(t_uniform() * 4);
				if (at < len)
					cuts[m++] = at;
			}
			t_stop_run(c[i].text, c[i].stops, c[i].n, cuts, m);
		}
	}
}

static void test_stop_bad(void)
{
	char lng[SHX_STOP_LEN_MAX + 2], out[8];
	const char *s[5] = { "a", "b", "c", "d", "e" };
	struct shx_stop *st;
	bool hit;

	memset(lng, 'x', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = 0;
	CU_ASSERT_EQUAL(shx_stop_new(s, 5, &st), -EINVAL);
	s[0] = "";
	CU_ASSERT_EQUAL(shx_stop_new(s, 1, &st), -EINVAL);
	s[0] = NULL;
	CU_ASSERT_EQUAL(shx_stop_new(s, 1, &st), -EINVAL);
	s[0] = lng;
	CU_ASSERT_EQUAL(shx_stop_new(s, 1, &st), -EINVAL);
	lng[SHX_STOP_LEN_MAX] = 0;
	CU_ASSERT_EQUAL_FATAL(shx_stop_new(s, 1, &st), 0);
	/* too little room: nothing consumed */
	CU_ASSERT_EQUAL(shx_stop_push(st, "0123456789", 10, out, 8, &hit),
			-ENOSPC);
	CU_ASSERT_EQUAL(shx_stop_push(st, "0123", 4, out, 8, &hit), 4);
	CU_ASSERT(!memcmp(out, "0123", 4) && !hit);
	/* nothing pushed, nothing held: no bytes, no buffer touched */
	CU_ASSERT_EQUAL(shx_stop_push(st, NULL, 0, NULL, 0, &hit), 0);
	CU_ASSERT_EQUAL(shx_stop_flush(st, NULL, 0), 0);
	CU_ASSERT(!hit);
	shx_stop_free(st);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "greedy is argmax, ties to the lower id", test_greedy },
		{ "top-k/top-p/min-p keep the reference set", test_truncation_sets },
		{ "100k draws match the reference (chi-square)", test_distribution },
		{ "same seed, same tokens", test_seed },
		{ "penalties change exactly the window's tokens", test_penalties },
		{ "logprobs", test_logprobs },
		{ "raw logprobs of a full row", test_raw_logprobs },
		{ "TOPK pairs sample as the full row", test_pairs_equal_row },
		{ "bad params and logits", test_bad_input },
		{ "speed on 151936 logits", test_speed },
		{ "stop strings split at every byte", test_stop_splits },
		{ "stop strings: bad input", test_stop_bad },
	};

	return T_RUN_SUITE("sample", NULL, NULL, tests);
}
