// SPDX-License-Identifier: MIT
/*
 * syshax-bench kernels: our GEMM and decode-attention kernels against this
 * machine's limits (read bandwidth, integer dot-product peak) and against
 * ggml's CPU backend and oneDNN, all in one run so that the ratios hold
 * even on a shared, noisy machine. Weights rotate through >= 512 MiB of
 * copies so that every call streams them from DRAM, as real decode does.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kernels.h"
#include "shxk.h"

static const char *const g_wtype_names[BENCH_NWTYPES] = {
	[BENCH_Q4_0] = "q4_0", [BENCH_Q8_0] = "q8_0", [BENCH_BF16] = "bf16",
	[BENCH_F16] = "f16", [BENCH_F32] = "f32",
};

static const struct shape g_default_shapes[] = {
	{ 4096, 14336 }, { 14336, 4096 },	/* dense FFN up/gate, down */
	{ 2048, 768 }, { 768, 2048 },		/* Qwen3-30B-A3B expert */
};

/*
 * --wide adds shapes the default set lacks (13B-class FFN up and down,
 * a 4B-class FFN up: K = 13824 rows longer than the L1 holds as f32) and
 * the batch sizes batching produces (leftover rows of every tile height).
 */
static const struct shape g_wide_shapes[] = {
	{ 5120, 13824 }, { 13824, 5120 }, { 2560, 9728 },
};
static const int g_default_ms[] = { 1, 8, 32 };
static const int g_wide_ms[] = { 1, 2, 3, 4, 8, 16, 32, 64 };

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *bench_wtype_name(enum bench_wtype t)
{
	return g_wtype_names[t];
}

size_t bench_wtype_row_bytes(enum bench_wtype t, size_t k)
{
	switch (t) {
	case BENCH_Q4_0:
		return k / 32 * 18;
	case BENCH_Q8_0:
		return k / 32 * 34;
	case BENCH_BF16:
	case BENCH_F16:
		return k * 2;
	default:
		return k * 4;
	}
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: syshax-bench kernels [options]\n"
"  --json            JSON instead of the table\n"
"  --quick           shorter timing per case (20 ms instead of 100 ms)\n"
"  --warm            also time each GEMM on one weight copy (cache-resident)\n"
"  --ggml DIR        ggml libraries (default $SYSHAX_GGML_DIR); see\n"
"                    tools/fetch-ggml.sh\n"
"  --no-ggml, --no-dnnl, --no-attn   leave a peer or a part out\n"
"  --attn-heads Q/KV,...  decode attention's query / kv heads (default\n"
"                    32/8; the models' own: 32/8 Llama-3-8B, 28/4\n"
"                    Qwen2.5-7B, 32/4 Qwen3-30B-A3B, 40/8 R1-Qwen-32B)\n"
"  --no-repack       leave out ggml with its repack buffer type (the\n"
"                    \"ggml rp\" column: q4_0 repacked as llama.cpp does)\n"
"  --shapes KxN,...  default 4096x14336,14336x4096,2048x768,768x2048\n"
"  --types T,...     q4_0,q8_0,bf16,f16,f32 (default all)\n"
"  --m M,...         activation rows (default 1,8,32)\n"
"  --wide            the big matrix: shapes 5120x13824,13824x5120,2560x9728\n"
"                    added to the default ones, M 1,2,3,4,8,16,32,64\n"
"                    (--shapes and --m still override)\n"
"  --threads T,...   thread counts (default 1,2, capped at the CPUs)\n"
"  --layout L        x8 (interleaved, default) or rows for q4_0/q8_0\n"
"  --budget MS       timing per case in milliseconds\n");
}

/* Splits a comma list; each item goes to parse(), which returns 0 or -1. */
static int parse_list(const char *arg, int max, int *count,
		      int (*parse)(const char *item, void *dst, int i),
		      void *dst)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", arg);
	*count = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*count == max || parse(tok, dst, *count))
			return -1;
		(*count)++;
	}
	return *count ? 0 : -1;
}

static int parse_shape(const char *s, void *dst, int i)
{
	struct shape *sh = (struct shape *)dst + i;
	char tail;

	if (sscanf(s, "%dx%d%c", &sh->k, &sh->n, &tail) != 2)
		return -1;
	/* Whole 32-value blocks and whole row groups. */
	return sh->k > 0 && sh->k % 32 == 0 && sh->n > 0 && sh->n % 16 == 0 ?
	       0 : -1;
}

static int parse_heads(const char *s, void *dst, int i)
{
	struct attn_heads *h = (struct attn_heads *)dst + i;
	char tail;

	if (sscanf(s, "%d/%d%c", &h->q, &h->kv, &tail) != 2)
		return -1;
	/* Whole groups; SHXK_ATTN_HEADS (64) is no limit: passes split. */
	return h->kv > 0 && h->q >= h->kv && h->q <= 256 && h->q % h->kv == 0 ?
	       0 : -1;
}

static int parse_type(const char *s, void *dst, int i)
{
	for (int t = 0; t < BENCH_NWTYPES; t++)
		if (!strcmp(s, g_wtype_names[t])) {
			((enum bench_wtype *)dst)[i] = (enum bench_wtype)t;
			return 0;
		}
	return -1;
}

static int parse_int(const char *s, void *dst, int i)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || v < 1 || v > 256)
		return -1;
	((int *)dst)[i] = (int)v;
	return 0;
}

enum { O_GGML = 256, O_NO_GGML, O_NO_DNNL, O_NO_ATTN, O_ATTN_HEADS,
       O_SHAPES, O_TYPES, O_M, O_THREADS, O_LAYOUT, O_BUDGET, O_NO_REPACK,
       O_WIDE };

static const struct option g_longopts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "quick", no_argument, NULL, 'q' },
	{ "warm", no_argument, NULL, 'w' },
	{ "help", no_argument, NULL, 'h' },
	{ "ggml", required_argument, NULL, O_GGML },
	{ "no-ggml", no_argument, NULL, O_NO_GGML },
	{ "no-dnnl", no_argument, NULL, O_NO_DNNL },
	{ "no-attn", no_argument, NULL, O_NO_ATTN },
	{ "attn-heads", required_argument, NULL, O_ATTN_HEADS },
	{ "no-repack", no_argument, NULL, O_NO_REPACK },
	{ "wide", no_argument, NULL, O_WIDE },
	{ "shapes", required_argument, NULL, O_SHAPES },
	{ "types", required_argument, NULL, O_TYPES },
	{ "m", required_argument, NULL, O_M },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "layout", required_argument, NULL, O_LAYOUT },
	{ "budget", required_argument, NULL, O_BUDGET },
	{ 0 },
};

/* Returns 0 to run, 1 after --help, -1 on a usage error. */
static int parse_opts(struct opts *o, int argc, char **argv)
{
	int c, li = -1, bad = 0, ncpus = bench_ncpus(), shapes = 0, ms = 0;
	size_t i;

	*o = (struct opts){ .x8 = 1, .attn = 1, .use_ggml = 1, .use_dnnl = 1,
			    .use_repack = 1, .budget = 0.1 };
	o->ggml_dir = getenv("SYSHAX_GGML_DIR");
	o->ntypes = BENCH_NWTYPES;
	for (i = 0; i < BENCH_NWTYPES; i++)
		o->types[i] = (enum bench_wtype)i;
	o->thr[o->nthr++] = 1;
	if (ncpus > 1)
		o->thr[o->nthr++] = 2;
	optind = 1;
	while (!bad && (c = getopt_long(argc, argv, "jqwh", g_longopts,
					&li)) != -1) {
		switch (c) {
		case 'j': o->json = 1; break;
		case 'q': o->budget = 0.02; break;
		case 'w': o->warm = 1; break;
		case 'h': usage(stdout); return 1;
		case O_GGML: o->ggml_dir = optarg; break;
		case O_NO_GGML: o->use_ggml = 0; break;
		case O_NO_DNNL: o->use_dnnl = 0; break;
		case O_NO_ATTN: o->attn = 0; break;
		case O_ATTN_HEADS:
			bad = parse_list(optarg, MAX_LIST, &o->nheads,
					 parse_heads, o->heads);
			break;
		case O_NO_REPACK: o->use_repack = 0; break;
		case O_WIDE: o->wide = 1; break;
		case O_SHAPES:
			bad = parse_list(optarg, MAX_LIST, &o->nshapes,
					 parse_shape, o->shapes);
			shapes = 1;
			break;
		case O_TYPES:
			bad = parse_list(optarg, BENCH_NWTYPES, &o->ntypes,
					 parse_type, o->types);
			break;
		case O_M:
			bad = parse_list(optarg, MAX_LIST, &o->nm, parse_int,
					 o->ms);
			ms = 1;
			break;
		case O_THREADS:
			bad = parse_list(optarg, MAX_LIST, &o->nthr, parse_int,
					 o->thr);
			for (i = 0; !bad && i < (size_t)o->nthr; i++)
				bad = o->thr[i] > ncpus ? -1 : 0;
			break;
		case O_LAYOUT:
			bad = strcmp(optarg, "x8") && strcmp(optarg, "rows");
			o->x8 = !strcmp(optarg, "x8");
			break;
		case O_BUDGET:
			o->budget = atof(optarg) / 1000;
			bad = !(o->budget > 0);
			break;
		default:
			bad = 1;
		}
	}
	if (bad || optind != argc) {
		if (bad && li >= 0 && optarg)
			fprintf(stderr, "syshax-bench kernels: bad --%s '%s' "
				"(shapes KxN with K %% 32 == 0 and N %% 16 == 0, "
				"M 1-256, heads Q/KV with KV dividing Q <= 256, "
				"at most %d threads here)\n",
				g_longopts[li].name, optarg, ncpus);
		usage(stderr);
		return -1;
	}
	if (!o->nheads)
		o->heads[o->nheads++] = (struct attn_heads){ 32, 8 };
	for (i = 0; !shapes && i < NELEM(g_default_shapes); i++)
		o->shapes[o->nshapes++] = g_default_shapes[i];
	for (i = 0; !shapes && o->wide && i < NELEM(g_wide_shapes); i++)
		o->shapes[o->nshapes++] = g_wide_shapes[i];
	for (i = 0; !ms && !o->wide && i < NELEM(g_default_ms); i++)
		o->ms[o->nm++] = g_default_ms[i];
	for (i = 0; !ms && o->wide && i < NELEM(g_wide_ms); i++)
		o->ms[o->nm++] = g_wide_ms[i];
	return 0;
}

/* ---- measuring ---- */

/*
 * Run before, between the shapes and after the kernels, keeping the
 * highest figure: other load on the machine lowers a limit, and a limit
 * measured too low would flatter every "%" column.
 */
static void measure_limits(struct run *r, int again)
{
	for (int i = 0; i < r->o.nthr; i++) {
		struct limits *l = &r->lim[i];
		double bw = 0, dot = 0;

		l->nthr = r->o.thr[i];
		if (!l->bw_err)
			l->bw_err = r->reader ? bench_reader_sustained(
					r->reader, l->nthr, &bw) : -ENOMEM;
		if (!l->dot_err)
			l->dot_err = bench_dot_peak(l->nthr, &dot, &l->dot_isa);
		if (!again) {
			l->bw_first = bw;
			l->dot_first = dot;
		}
		l->bw = bw > l->bw ? bw : l->bw;
		l->dot = dot > l->dot ? dot : l->dot;
	}
}

static void open_peers(struct run *r, struct ggml_peer **gp,
		       struct dnnl_peer **dp)
{
	int err;

	snprintf(r->ggml_note, sizeof(r->ggml_note), "disabled (--no-ggml)");
	if (r->o.use_ggml && !r->o.ggml_dir) {
		snprintf(r->ggml_note, sizeof(r->ggml_note),
			 "not measured: no --ggml DIR or $SYSHAX_GGML_DIR "
			 "(tools/fetch-ggml.sh fetches it)");
	} else if (r->o.use_ggml) {
		err = ggml_peer_open(gp, r->o.ggml_dir, &r->ggml_variant);
		if (err)
			snprintf(r->ggml_note, sizeof(r->ggml_note),
				 "not measured: %s: %s", r->o.ggml_dir,
				 strerror(-err));
		else if (r->o.use_repack)
			r->ggml_repack = ggml_peer_repack_name(*gp);
	}
	snprintf(r->dnnl_note, sizeof(r->dnnl_note), "disabled (--no-dnnl)");
	if (r->o.use_dnnl) {
		err = dnnl_peer_open(dp, &r->dnnl_version);
		if (err)
			snprintf(r->dnnl_note, sizeof(r->dnnl_note),
				 "not measured: libdnnl.so.2: %s (apt-get "
				 "install libdnnl2)", strerror(-err));
	}
}

/* Other load changes every figure: the report states it. */
static double load_average(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

static void describe_machine(struct run *r)
{
	struct shxk_cpu_info ci;

	shxk_cpu_info(&ci);
	snprintf(r->cpu_model, sizeof(r->cpu_model), "%s", ci.model);
	r->load[0] = load_average();
}

/* Deterministic weights in [-1, 1): a 32-bit xorshift per element. */
static float *make_weights(const struct shape *s)
{
	size_t n = (size_t)s->k * s->n;
	float *w = malloc(n * sizeof(*w));
	uint32_t x = 2463534242u;

	for (size_t i = 0; w && i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		w[i] = (float)(x >> 8) / 8388608.0f - 1.0f;
	}
	return w;
}

static enum dnnl_kind kind_of(enum bench_wtype t)
{
	return t == BENCH_Q4_0 || t == BENCH_Q8_0 ? DNNL_S8S8 : DNNL_BF16;
}

/* dnnl[kind][m index][thread index] for one shape. */
typedef double dnnl_times[DNNL_NKINDS][MAX_LIST][MAX_LIST];

static void measure_dnnl(struct run *r, struct dnnl_peer *dp,
			 const struct shape *s, dnnl_times t)
{
	const struct opts *o = &r->o;
	int need[DNNL_NKINDS] = { 0 };

	memset(t, 0, sizeof(dnnl_times));
	if (!dp)
		return;
	for (int i = 0; i < o->ntypes; i++)
		need[kind_of(o->types[i])] = 1;
	fprintf(stderr, "kernels: %dx%d oneDNN\n", s->k, s->n);
	for (int kd = 0; kd < DNNL_NKINDS; kd++)
		for (int mi = 0; need[kd] && mi < o->nm; mi++)
			for (int ti = 0; ti < o->nthr; ti++)
				if (dnnl_peer_time(dp, (enum dnnl_kind)kd,
						   s->k, s->n, o->ms[mi],
						   o->thr[ti], o->budget,
						   &t[kd][mi][ti]))
					t[kd][mi][ti] = 0;
}

/* The lower of two times; 0 means "not measured". */
static double lower(double a, double b)
{
	return a > 0 && (b <= 0 || a < b) ? a : b;
}

/*
 * Ours and ggml take turns: BENCH_ROUNDS rounds over every (M, threads),
 * each a median over a share of the budget, and the lowest round counts.
 * A burst of other load then hits one round of both, not one of them.
 */
static void measure_type(struct run *r, struct ggml_peer *gp,
			 const struct shape *s, enum bench_wtype t,
			 const float *w, dnnl_times dt)
{
	const struct opts *o = &r->o;
	double budget = o->budget / BENCH_ROUNDS, sec;
	size_t bytes = bench_wtype_row_bytes(t, (size_t)s->k) * (size_t)s->n;
	struct gemm_row *rows = &r->rows[r->nrows];
	struct ours_case *oc = NULL;
	struct ggml_case *gc = NULL, *rc = NULL;
	int err = ours_case_new(&oc, t, s->k, s->n, w, o->x8);
	/* Repacked ggml: only where ggml has a repacked kernel for it. */
	int rp_err = !gp ? -ENOENT : !r->ggml_repack ? -ENOTSUP :
		     ggml_case_new(gp, &rc, t, s->k, s->n, w, 1);

	if (gp && ggml_case_new(gp, &gc, t, s->k, s->n, w, 0))
		gc = NULL;
	for (int mi = 0; mi < o->nm; mi++)
		for (int ti = 0; ti < o->nthr; ti++)
			rows[mi * o->nthr + ti] = (struct gemm_row){
				.s = *s, .t = t, .m = o->ms[mi],
				.nthr = o->thr[ti], .kind = kind_of(t),
				.dnnl = dt[kind_of(t)][mi][ti], .err = err,
				.rp_err = rp_err };
	r->nrows += (size_t)o->nm * o->nthr;
	fprintf(stderr, "kernels: %dx%d %s\n", s->k, s->n,
		bench_wtype_name(t));
	for (int round = 0; round < BENCH_ROUNDS; round++) {
		for (int i = 0; i < o->nm * o->nthr; i++) {
			struct gemm_row *g = &rows[i];

			if (!g->err)
				g->err = ours_case_time(oc, g->m, g->nthr, 0,
							budget, &sec);
			if (!g->err)
				g->ours = lower(g->ours, sec);
			if (!g->err && o->warm &&
			    !ours_case_time(oc, g->m, g->nthr, 1, budget, &sec))
				g->warm = lower(g->warm, sec);
			if (gc && !ggml_case_time(gc, g->m, g->nthr, budget,
						  &sec))
				g->ggml = lower(g->ggml, sec);
			if (rc && !g->rp_err)
				g->rp_err = ggml_case_time(rc, g->m, g->nthr,
							   budget, &sec);
			if (rc && !g->rp_err)
				g->ggml_rp = lower(g->ggml_rp, sec);
			if (r->reader && !bench_reader_time(r->reader, bytes,
							    g->nthr, budget,
							    &sec))
				g->read = lower(g->read, sec);
		}
	}
	ggml_case_free(rc);
	ggml_case_free(gc);
	ours_case_free(oc);
}

static void measure_attn(struct run *r)
{
	static const int seqs[] = { 1, 8 };
	double budget = r->o.budget / BENCH_ROUNDS, sec;

	fprintf(stderr, "kernels: decode attention\n");
	for (int hi = 0; hi < r->o.nheads; hi++)
		for (int si = 0; si < 2; si++)
			for (int ti = 0; ti < r->o.nthr; ti++)
				r->attn[r->nattn++] = (struct attn_row){
					.h = r->o.heads[hi], .nseq = seqs[si],
					.nthr = r->o.thr[ti] };
	for (int round = 0; round < BENCH_ROUNDS; round++) {
		for (size_t i = 0; i < r->nattn; i++) {
			struct attn_row *a = &r->attn[i];

			if (!a->err)
				a->err = ours_attn_time(a->h.q, a->h.kv,
							a->nseq, a->nthr, 0,
							budget, &sec,
							&a->bytes);
			if (!a->err)
				a->sec = lower(a->sec, sec);
			if (r->reader &&
			    !bench_reader_time(r->reader, (size_t)a->bytes,
					       a->nthr, budget, &sec))
				a->read = lower(a->read, sec);
			if (!a->err && r->o.warm &&
			    !ours_attn_time(a->h.q, a->h.kv, a->nseq, a->nthr,
					    1, budget, &sec, &a->bytes))
				a->warm = lower(a->warm, sec);
		}
	}
}

int bench_kernels_main(int argc, char **argv)
{
	struct run r = { 0 };
	struct ggml_peer *gp = NULL;
	struct dnnl_peer *dp = NULL;
	int err, failed = 0;
	size_t i;

	err = parse_opts(&r.o, argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	err = ours_init(&r.isa);
	if (err) {
		fprintf(stderr, "syshax-bench kernels: shxk_init: %s\n",
			strerror(-err));
		return 1;
	}
	r.rows = calloc((size_t)r.o.nshapes * r.o.ntypes * r.o.nm * r.o.nthr,
			sizeof(*r.rows));
	if (!r.rows)
		return 1;
	if (bench_reader_new(&r.reader))
		r.reader = NULL;	/* the %BW columns stay empty */
	measure_limits(&r, 0);
	open_peers(&r, &gp, &dp);
	describe_machine(&r);
	for (int si = 0; si < r.o.nshapes; si++) {
		const struct shape *s = &r.o.shapes[si];
		float *w = make_weights(s);
		dnnl_times dt;

		if (!w) {
			fprintf(stderr, "syshax-bench kernels: out of memory\n");
			failed = 1;
			break;
		}
		if (si)
			measure_limits(&r, 1);
		measure_dnnl(&r, dp, s, dt);
		for (int ti = 0; ti < r.o.ntypes; ti++)
			measure_type(&r, gp, s, r.o.types[ti], w, dt);
		free(w);
	}
	if (r.o.attn)
		measure_attn(&r);
	measure_limits(&r, 1);
	r.load[1] = load_average();
	if (r.o.json)
		kernels_print_json(&r);
	else
		kernels_print_table(&r);
	for (i = 0; i < r.nrows; i++)
		failed |= r.rows[i].err != 0;
	for (i = 0; i < r.nattn; i++)
		failed |= r.attn[i].err != 0;
	bench_reader_free(r.reader);
	ggml_peer_close(gp);
	dnnl_peer_close(dp);
	free(r.rows);
	return failed;
}
