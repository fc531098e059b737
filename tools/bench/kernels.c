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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_LIST 8

struct shape {
	int k, n;
};

struct opts {
	int json, warm, x8, attn, use_ggml, use_dnnl;
	const char *ggml_dir;
	double budget;
	int nshapes, ntypes, nm, nthr;
	struct shape shapes[MAX_LIST];
	enum bench_wtype types[BENCH_NWTYPES];
	int ms[MAX_LIST], thr[MAX_LIST];
};

/* Measured before and after the kernels; the higher figure counts. */
struct limits {
	int nthr, bw_err, dot_err;
	double bw, dot, bw_first, dot_first;
	const char *dot_isa;
};

struct gemm_row {
	struct shape s;
	enum bench_wtype t;
	int m, nthr, err;
	enum dnnl_kind kind;
	/* seconds per call; 0 when not measured */
	double ours, warm, ggml, dnnl;
};

struct attn_row {
	int nseq, nthr, err;
	double sec, warm, bytes;
};

/* Everything one run measured, for the table, JSON and target checks. */
struct run {
	struct opts o;
	const char *isa, *ggml_variant, *dnnl_version;
	char ggml_note[128], dnnl_note[128];
	struct limits lim[MAX_LIST];
	struct gemm_row *rows;
	size_t nrows;
	struct attn_row attn[2 * MAX_LIST];
	size_t nattn;
};

static const char *const g_wtype_names[BENCH_NWTYPES] = {
	[BENCH_Q4_0] = "q4_0", [BENCH_Q8_0] = "q8_0", [BENCH_BF16] = "bf16",
	[BENCH_F16] = "f16", [BENCH_F32] = "f32",
};

static const struct shape g_default_shapes[] = {
	{ 4096, 14336 }, { 14336, 4096 },	/* dense FFN up/gate, down */
	{ 2048, 768 }, { 768, 2048 },		/* Qwen3-30B-A3B expert */
};

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
"  --shapes KxN,...  default 4096x14336,14336x4096,2048x768,768x2048\n"
"  --types T,...     q4_0,q8_0,bf16,f16,f32 (default all)\n"
"  --m M,...         activation rows (default 1,8,32)\n"
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

enum { O_GGML = 256, O_NO_GGML, O_NO_DNNL, O_NO_ATTN, O_SHAPES, O_TYPES,
       O_M, O_THREADS, O_LAYOUT, O_BUDGET };

static const struct option g_longopts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "quick", no_argument, NULL, 'q' },
	{ "warm", no_argument, NULL, 'w' },
	{ "help", no_argument, NULL, 'h' },
	{ "ggml", required_argument, NULL, O_GGML },
	{ "no-ggml", no_argument, NULL, O_NO_GGML },
	{ "no-dnnl", no_argument, NULL, O_NO_DNNL },
	{ "no-attn", no_argument, NULL, O_NO_ATTN },
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
	int c, bad = 0, ncpus = bench_ncpus();
	size_t i;

	*o = (struct opts){ .x8 = 1, .attn = 1, .use_ggml = 1, .use_dnnl = 1,
			    .budget = 0.1, .nm = 3, .ms = { 1, 8, 32 } };
	o->ggml_dir = getenv("SYSHAX_GGML_DIR");
	o->nshapes = sizeof(g_default_shapes) / sizeof(g_default_shapes[0]);
	for (i = 0; i < (size_t)o->nshapes; i++)
		o->shapes[i] = g_default_shapes[i];
	o->ntypes = BENCH_NWTYPES;
	for (i = 0; i < BENCH_NWTYPES; i++)
		o->types[i] = (enum bench_wtype)i;
	o->thr[o->nthr++] = 1;
	if (ncpus > 1)
		o->thr[o->nthr++] = 2;
	optind = 1;
	while (!bad && (c = getopt_long(argc, argv, "jqwh", g_longopts,
					NULL)) != -1) {
		switch (c) {
		case 'j': o->json = 1; break;
		case 'q': o->budget = 0.02; break;
		case 'w': o->warm = 1; break;
		case 'h': usage(stdout); return 1;
		case O_GGML: o->ggml_dir = optarg; break;
		case O_NO_GGML: o->use_ggml = 0; break;
		case O_NO_DNNL: o->use_dnnl = 0; break;
		case O_NO_ATTN: o->attn = 0; break;
		case O_SHAPES:
			bad = parse_list(optarg, MAX_LIST, &o->nshapes,
					 parse_shape, o->shapes);
			break;
		case O_TYPES:
			bad = parse_list(optarg, BENCH_NWTYPES, &o->ntypes,
					 parse_type, o->types);
			break;
		case O_M:
			bad = parse_list(optarg, MAX_LIST, &o->nm, parse_int,
					 o->ms);
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
		fprintf(stderr, "syshax-bench kernels: bad arguments (at most "
			"%d threads here)\n", ncpus);
		usage(stderr);
		return -1;
	}
	return 0;
}

/* ---- derived figures ---- */

static const struct limits *limits_for(const struct run *r, int nthr)
{
	for (int i = 0; i < r->o.nthr; i++)
		if (r->lim[i].nthr == nthr)
			return &r->lim[i];
	return NULL;
}

static double flops(const struct gemm_row *g)
{
	return 2.0 * g->m * g->s.k * g->s.n;
}

static double wbytes(const struct gemm_row *g)
{
	return (double)bench_wtype_row_bytes(g->t, (size_t)g->s.k) * g->s.n;
}

static double pct_bw(const struct run *r, const struct gemm_row *g)
{
	const struct limits *l = limits_for(r, g->nthr);

	return l && !l->bw_err ? wbytes(g) / g->ours * 1e-9 / l->bw * 100 : 0;
}

static double pct_peak(const struct run *r, const struct gemm_row *g)
{
	const struct limits *l = limits_for(r, g->nthr);

	return l && !l->dot_err ? flops(g) / g->ours * 1e-9 / l->dot * 100 : 0;
}

static double ratio(double peer, double ours)
{
	return peer > 0 && ours > 0 ? peer / ours : 0;
}

/* ---- output ---- */

static void print_header(const struct run *r)
{
	const struct opts *o = &r->o;

	printf("syshax-bench kernels: isa %s, %d CPUs, q4_0/q8_0 layout %s, "
	       "weights %s\n", r->isa, bench_ncpus(), o->x8 ? "x8" : "rows",
	       o->warm ? "rotated (>= 512 MiB), warm = one copy" :
			 "rotated (>= 512 MiB)");
	printf("ggml:   %s\n", r->ggml_variant ? r->ggml_variant : r->ggml_note);
	printf("oneDNN: %s\n", r->dnnl_version ? r->dnnl_version : r->dnnl_note);
	for (int i = 0; i < o->nthr; i++) {
		const struct limits *l = &r->lim[i];

		printf("limits %d thr: read %.1f GB/s (first %.1f), dot peak ",
		       l->nthr, l->bw_err ? 0 : l->bw, l->bw_first);
		if (l->dot_err)
			printf("n/a (%s)\n", strerror(-l->dot_err));
		else
			printf("%.0f GOPS (first %.0f, %s)\n", l->dot,
			       l->dot_first, l->dot_isa);
	}
	printf("\n%-11s %-4s %3s %3s %9s %7s %6s %4s %5s%s | %9s %6s | %4s %9s %6s\n",
	       "KxN", "type", "M", "thr", "us/call", "GFLOPS", "GB/s", "%BW",
	       "%peak", o->warm ? "  warmGB/s" : "", "ggml us", "x ggml",
	       "dnnl", "us", "x dnnl");
}

static void print_opt(double v, const char *fmt, int width)
{
	if (v > 0)
		printf(fmt, width, v);
	else
		printf("%*s", width, "-");
}

static void print_row(const struct run *r, const struct gemm_row *g)
{
	char shape[32];

	snprintf(shape, sizeof(shape), "%dx%d", g->s.k, g->s.n);
	printf("%-11s %-4s %3d %3d ", shape, bench_wtype_name(g->t), g->m,
	       g->nthr);
	if (g->err) {
		printf("error: %s\n", strerror(-g->err));
			return;
	}
	printf("%9.1f %7.1f %6.1f %4.0f %5.1f", g->ours * 1e6,
	       flops(g) / g->ours * 1e-9, wbytes(g) / g->ours * 1e-9,
	       pct_bw(r, g), pct_peak(r, g));
	if (r->o.warm)
		print_opt(g->warm > 0 ? wbytes(g) / g->warm * 1e-9 : 0,
			  " %*.1f", 10);
	printf(" | ");
	print_opt(g->ggml * 1e6, "%*.1f", 9);
	print_opt(ratio(g->ggml, g->ours), " %*.2f", 6);
	printf(" | %4s ", dnnl_kind_name(g->kind));
	print_opt(g->dnnl * 1e6, "%*.1f", 9);
	print_opt(ratio(g->dnnl, g->ours), " %*.2f", 6);
	printf("\n");
}

static void print_attn(const struct run *r, const struct attn_row *a)
{
	const struct limits *l = limits_for(r, a->nthr);

	if (a->err) {
		printf("attn %d seq %d thr: error: %s\n", a->nseq, a->nthr,
		       strerror(-a->err));
		return;
	}
	printf("attn ctx %d, %d/%d heads, d %d, f16 KV: %d seq %d thr: "
	       "%8.1f us, %6.1f GB/s KV, %3.0f%% of read BW",
	       BENCH_ATTN_CTX, BENCH_ATTN_Q_HEADS, BENCH_ATTN_KV_HEADS,
	       BENCH_ATTN_HEAD_DIM, a->nseq, a->nthr, a->sec * 1e6,
	       a->bytes / a->sec * 1e-9,
	       l && !l->bw_err ? a->bytes / a->sec * 1e-9 / l->bw * 100 : 0);
	if (a->warm > 0)
		printf(", warm %.1f GB/s", a->bytes / a->warm * 1e-9);
	printf("\n");
}

/* A number or null: JSON has no NaN, and 0 means "not measured" here. */
static void jnum(const char *key, double v, int last)
{
	if (v > 0)
		printf("\"%s\": %.6g%s", key, v, last ? "" : ", ");
	else
		printf("\"%s\": null%s", key, last ? "" : ", ");
}

static void jstr(const char *key, const char *v, int last)
{
	/* Our strings are library names and versions: no escaping needed. */
	if (v)
		printf("\"%s\": \"%s\"%s", key, v, last ? "" : ", ");
	else
		printf("\"%s\": null%s", key, last ? "" : ", ");
}

/* ---- targets (docs/benchmarks.md) ---- */

enum metric { M_PCT_BW, M_X_GGML, M_X_DNNL };

struct target {
	const char *name;
	unsigned types;		/* bit per enum bench_wtype; 0: all */
	int ms[3];		/* M values, 0-terminated; {0}: all */
	enum metric metric;
	double min;
};

#define T(x) (1u << (x))
static const struct target g_targets[] = {
	{ "M=1 weight GB/s >= 85% of read BW (q4_0 q8_0 bf16 f16)",
	  T(BENCH_Q4_0) | T(BENCH_Q8_0) | T(BENCH_BF16) | T(BENCH_F16),
	  { 1 }, M_PCT_BW, 85 },
	{ "x ggml >= 1.0 on every shape and type", 0, { 0 }, M_X_GGML, 1.0 },
	{ "q4_0 M=1 x ggml >= 2.5", T(BENCH_Q4_0), { 1 }, M_X_GGML, 2.5 },
	{ "q8_0 M=1 x ggml >= 1.8", T(BENCH_Q8_0), { 1 }, M_X_GGML, 1.8 },
	{ "q4_0/q8_0 M=8,32 x ggml >= 2.5", T(BENCH_Q4_0) | T(BENCH_Q8_0),
	  { 8, 32 }, M_X_GGML, 2.5 },
	{ "q8_0 M=32 >= 0.5x oneDNN s8s8 GFLOPS", T(BENCH_Q8_0), { 32 },
	  M_X_DNNL, 0.5 },
};

static int m_matches(const int *ms, int m)
{
	if (!ms[0])
		return 1;
	for (int i = 0; i < 3 && ms[i]; i++)
		if (ms[i] == m)
			return 1;
	return 0;
}

static double metric(const struct run *r, const struct gemm_row *g,
		     enum metric m)
{
	switch (m) {
	case M_PCT_BW:
		return pct_bw(r, g);
	case M_X_GGML:
		return ratio(g->ggml, g->ours);
	default:
		return ratio(g->dnnl, g->ours);
	}
}

/*
 * The worst value of a target over the rows it covers at the run's largest
 * thread count (the targets are stated for 2 threads); *where names the
 * row. Returns 0 when no row with the peer measured is covered.
 */
static double target_worst(const struct run *r, const struct target *t,
			   int nthr, char *where, size_t len)
{
	double worst = 0;

	for (size_t i = 0; i < r->nrows; i++) {
		const struct gemm_row *g = &r->rows[i];
		double v;

		if (g->err || g->nthr != nthr || !m_matches(t->ms, g->m) ||
		    (t->types && !(t->types & T(g->t))))
			continue;
		v = metric(r, g, t->metric);
		if (v > 0 && (worst == 0 || v < worst)) {
			worst = v;
			snprintf(where, len, "%dx%d %s M=%d", g->s.k, g->s.n,
				 bench_wtype_name(g->t), g->m);
		}
	}
	return worst;
}

static double attn_worst(const struct run *r, int nthr)
{
	const struct limits *l = limits_for(r, nthr);
	double worst = 0;

	for (size_t i = 0; l && !l->bw_err && i < r->nattn; i++) {
		const struct attn_row *a = &r->attn[i];
		double v;

		if (a->err || a->nthr != nthr)
			continue;
		v = a->bytes / a->sec * 1e-9 / l->bw * 100;
		if (worst == 0 || v < worst)
			worst = v;
	}
	return worst;
}

static int max_threads(const struct opts *o)
{
	int m = 1;

	for (int i = 0; i < o->nthr; i++)
		if (o->thr[i] > m)
			m = o->thr[i];
	return m;
}

static void print_targets(const struct run *r)
{
	int nthr = max_threads(&r->o);
	char where[64];
	double a;

	printf("\ntargets at %d threads (worst case):\n", nthr);
	for (size_t i = 0; i < sizeof(g_targets) / sizeof(g_targets[0]); i++) {
		const struct target *t = &g_targets[i];
		double w;

		where[0] = 0;
		w = target_worst(r, t, nthr, where, sizeof(where));
		if (w == 0)
			printf("  %-56s not measured\n", t->name);
		else
			printf("  %-56s %7.2f%s %-6s (%s)\n", t->name, w,
			       t->metric == M_PCT_BW ? "%" : "x",
			       w >= t->min ? "MET" : "MISSED", where);
	}
	a = attn_worst(r, nthr);
	if (a == 0)
		printf("  %-56s not measured\n", "decode attention >= 80% of read BW");
	else
		printf("  %-56s %7.2f%% %-6s\n",
		       "decode attention >= 80% of read BW", a,
		       a >= 80 ? "MET" : "MISSED");
}

static void print_table(const struct run *r)
{
	size_t i;

	print_header(r);
	for (i = 0; i < r->nrows; i++)
		print_row(r, &r->rows[i]);
	if (r->nattn)
		printf("\n");
	for (i = 0; i < r->nattn; i++)
		print_attn(r, &r->attn[i]);
	print_targets(r);
}

static void print_json(const struct run *r)
{
	int nthr = max_threads(&r->o);
	size_t i;

	printf("{\"machine\": {");
	jstr("isa", r->isa, 0);
	printf("\"cpus\": %d, \"rotate_bytes\": %llu, ", bench_ncpus(),
	       BENCH_ROTATE_BYTES);
	jstr("layout", r->o.x8 ? "x8" : "rows", 1);
	printf("},\n \"peers\": {");
	jstr("ggml", r->ggml_variant, 0);
	jstr("ggml_note", r->ggml_variant ? NULL : r->ggml_note, 0);
	jstr("onednn", r->dnnl_version, 0);
	jstr("onednn_note", r->dnnl_version ? NULL : r->dnnl_note, 1);
	printf("},\n \"limits\": [");
	for (i = 0; i < (size_t)r->o.nthr; i++) {
		const struct limits *l = &r->lim[i];

		printf("%s\n  {\"threads\": %d, ", i ? "," : "", l->nthr);
		jnum("read_gbps", l->bw_err ? 0 : l->bw, 0);
		jnum("read_gbps_first", l->bw_err ? 0 : l->bw_first, 0);
		jnum("dot_gops", l->dot_err ? 0 : l->dot, 0);
		jnum("dot_gops_first", l->dot_err ? 0 : l->dot_first, 0);
		jstr("dot_isa", l->dot_err ? NULL : l->dot_isa, 1);
		printf("}");
	}
	printf("],\n \"gemm\": [");
	for (i = 0; i < r->nrows; i++) {
		const struct gemm_row *g = &r->rows[i];
		int ok = !g->err;

		printf("%s\n  {\"k\": %d, \"n\": %d, \"type\": \"%s\", "
		       "\"m\": %d, \"threads\": %d, \"error\": %d, ",
		       i ? "," : "", g->s.k, g->s.n, bench_wtype_name(g->t),
		       g->m, g->nthr, g->err);
		jnum("us", ok ? g->ours * 1e6 : 0, 0);
		jnum("gflops", ok ? flops(g) / g->ours * 1e-9 : 0, 0);
		jnum("gbps", ok ? wbytes(g) / g->ours * 1e-9 : 0, 0);
		jnum("pct_bw", ok ? pct_bw(r, g) : 0, 0);
		jnum("pct_peak", ok ? pct_peak(r, g) : 0, 0);
		jnum("warm_us", g->warm * 1e6, 0);
		jnum("ggml_us", g->ggml * 1e6, 0);
		jnum("x_ggml", ok ? ratio(g->ggml, g->ours) : 0, 0);
		jstr("dnnl_kind", dnnl_kind_name(g->kind), 0);
		jnum("dnnl_us", g->dnnl * 1e6, 0);
		jnum("x_dnnl", ok ? ratio(g->dnnl, g->ours) : 0, 1);
		printf("}");
	}
	printf("],\n \"attn\": [");
	for (i = 0; i < r->nattn; i++) {
		const struct attn_row *a = &r->attn[i];
		const struct limits *l = limits_for(r, a->nthr);
		double gbps = a->err ? 0 : a->bytes / a->sec * 1e-9;

		printf("%s\n  {\"ctx\": %d, \"q_heads\": %d, \"kv_heads\": %d, "
		       "\"head_dim\": %d, \"seqs\": %d, \"threads\": %d, "
		       "\"error\": %d, ", i ? "," : "", BENCH_ATTN_CTX,
		       BENCH_ATTN_Q_HEADS, BENCH_ATTN_KV_HEADS,
		       BENCH_ATTN_HEAD_DIM, a->nseq, a->nthr, a->err);
		jnum("us", a->err ? 0 : a->sec * 1e6, 0);
		jnum("gbps", gbps, 0);
		jnum("pct_bw", l && !l->bw_err ? gbps / l->bw * 100 : 0, 0);
		jnum("warm_us", a->warm * 1e6, 1);
		printf("}");
	}
	printf("],\n \"targets\": {\"threads\": %d, \"list\": [", nthr);
	for (i = 0; i < sizeof(g_targets) / sizeof(g_targets[0]); i++) {
		const struct target *t = &g_targets[i];
		char where[64] = "";
		double w = target_worst(r, t, nthr, where, sizeof(where));

		printf("%s\n  {", i ? "," : "");
		jstr("name", t->name, 0);
		jnum("min", t->min, 0);
		jnum("worst", w, 0);
		jstr("where", w > 0 ? where : NULL, 0);
		printf("\"met\": %s}", w == 0 ? "null" :
					     w >= t->min ? "true" : "false");
	}
	printf(",\n  {");
	jstr("name", "decode attention >= 80% of read BW", 0);
	jnum("min", 80, 0);
	jnum("worst", attn_worst(r, nthr), 0);
	printf("\"met\": %s}]}}\n", attn_worst(r, nthr) == 0 ? "null" :
				     attn_worst(r, nthr) >= 80 ? "true" : "false");
}

/* ---- measuring ---- */

/*
 * Run before and after the kernels: other load on the machine lowers a
 * limit, and a limit measured too low would flatter every "%" column.
 */
static void measure_limits(struct run *r, int again)
{
	for (int i = 0; i < r->o.nthr; i++) {
		struct limits *l = &r->lim[i];
		double bw = 0, dot = 0;

		l->nthr = r->o.thr[i];
		if (!l->bw_err)
			l->bw_err = bench_read_bw(l->nthr, &bw);
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
	struct gemm_row *rows = &r->rows[r->nrows];
	struct ours_case *oc = NULL;
	struct ggml_case *gc = NULL;
	int err = ours_case_new(&oc, t, s->k, s->n, w, o->x8);

	if (gp && ggml_case_new(gp, &gc, t, s->k, s->n, w))
		gc = NULL;
	for (int mi = 0; mi < o->nm; mi++)
		for (int ti = 0; ti < o->nthr; ti++)
			rows[mi * o->nthr + ti] = (struct gemm_row){
				.s = *s, .t = t, .m = o->ms[mi],
				.nthr = o->thr[ti], .kind = kind_of(t),
				.dnnl = dt[kind_of(t)][mi][ti], .err = err };
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
		}
	}
	ggml_case_free(gc);
	ours_case_free(oc);
}

static void measure_attn(struct run *r)
{
	static const int seqs[] = { 1, 8 };
	double budget = r->o.budget / BENCH_ROUNDS, sec;

	fprintf(stderr, "kernels: decode attention\n");
	for (int si = 0; si < 2; si++)
		for (int ti = 0; ti < r->o.nthr; ti++)
			r->attn[r->nattn++] = (struct attn_row){
				.nseq = seqs[si], .nthr = r->o.thr[ti] };
	for (int round = 0; round < BENCH_ROUNDS; round++) {
		for (size_t i = 0; i < r->nattn; i++) {
			struct attn_row *a = &r->attn[i];

			if (!a->err)
				a->err = ours_attn_time(a->nseq, a->nthr, 0,
							budget, &sec,
							&a->bytes);
			if (!a->err)
				a->sec = lower(a->sec, sec);
			if (!a->err && r->o.warm &&
			    !ours_attn_time(a->nseq, a->nthr, 1, budget, &sec,
					    &a->bytes))
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
	measure_limits(&r, 0);
	open_peers(&r, &gp, &dp);
	for (int si = 0; si < r.o.nshapes; si++) {
		const struct shape *s = &r.o.shapes[si];
		float *w = make_weights(s);
		dnnl_times dt;

		if (!w) {
			fprintf(stderr, "syshax-bench kernels: out of memory\n");
			failed = 1;
			break;
		}
		measure_dnnl(&r, dp, s, dt);
		for (int ti = 0; ti < r.o.ntypes; ti++)
			measure_type(&r, gp, s, r.o.types[ti], w, dt);
		free(w);
	}
	if (r.o.attn)
		measure_attn(&r);
	measure_limits(&r, 1);
	if (r.o.json)
		print_json(&r);
	else
		print_table(&r);
	for (i = 0; i < r.nrows; i++)
		failed |= r.rows[i].err != 0;
	for (i = 0; i < r.nattn; i++)
		failed |= r.attn[i].err != 0;
	ggml_peer_close(gp);
	dnnl_peer_close(dp);
	free(r.rows);
	return failed;
}
