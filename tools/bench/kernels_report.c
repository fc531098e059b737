// SPDX-License-Identifier: MIT
/*
 * The report of syshax-bench kernels: the table, the JSON object and the
 * check of the project's targets (docs/benchmarks.md), all from the
 * figures of one run.
 */
#include <stdio.h>
#include <string.h>

#include "kernels.h"

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

/*
 * The bar for a call's bytes: the read probe on the same bytes per call,
 * or the sustained figure where that is higher (long probe calls can be
 * throttled below it: a bar must not be lower than what we know the
 * machine reads).
 */
static double bar_gbps(const struct run *r, int nthr, double bytes,
		       double read_s)
{
	const struct limits *l = limits_for(r, nthr);
	double probe = read_s > 0 ? bytes / read_s * 1e-9 : 0;
	double sustained = l && !l->bw_err ? l->bw : 0;

	return probe > sustained ? probe : sustained;
}

static double pct_bw(const struct run *r, const struct gemm_row *g)
{
	double bar = bar_gbps(r, g->nthr, wbytes(g), g->read);

	return bar > 0 && g->ours > 0 ? wbytes(g) / g->ours * 1e-9 / bar * 100
				      : 0;
}

static double attn_pct_bw(const struct run *r, const struct attn_row *a)
{
	double bar = bar_gbps(r, a->nthr, a->bytes, a->read);

	return bar > 0 && a->sec > 0 ? a->bytes / a->sec * 1e-9 / bar * 100
				     : 0;
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

	printf("syshax-bench kernels: %s, %d CPUs, load %.2f -> %.2f\n"
	       "cpu: %s\nkernels isa %s, q4_0/q8_0 layout %s, weights %s\n",
	       r->cpu_model, bench_ncpus(), r->load[0], r->load[1],
	       bench_cpu(), r->isa,
	       o->x8 ? "x8" : "rows",
	       o->warm ? "rotated (>= 512 MiB), warm = one copy" :
			 "rotated (>= 512 MiB)");
	printf("ggml:   %s\n", r->ggml_variant ? r->ggml_variant : r->ggml_note);
	if (r->ggml_variant)
		printf("ggml rp: %s\n", r->ggml_repack ?
		       "weights in ggml's repack buffer type (llama.cpp's "
		       "default), '-' where ggml has no repacked kernel for "
		       "the type" : o->use_repack ?
		       "not measured: this ggml has no repack buffer type" :
		       "disabled (--no-repack)");
	if (r->ggml_repack)
		printf("         (buffer type %s)\n", r->ggml_repack);
	printf("oneDNN: %s\n", r->dnnl_version ? r->dnnl_version : r->dnnl_note);
	for (int i = 0; i < o->nthr; i++) {
		const struct limits *l = &r->lim[i];

		printf("limits %d thr: sustained read %.1f GB/s (1 GiB passes; "
		       "first %.1f), dot peak ", l->nthr, l->bw_err ? 0 : l->bw,
		       l->bw_first);
		if (l->dot_err)
			printf("n/a (%s)\n", strerror(-l->dot_err));
		else
			printf("%.0f GOPS (first %.0f, %s)\n", l->dot,
			       l->dot_first, l->dot_isa);
	}
	printf("%%BW: GB/s over rdGB/s, a read-only loop reading the same "
	       "bytes per call (1 or 4 runs a thread, the faster),\n     same "
	       "rotation and timing, or the sustained figure where that is "
	       "higher\n");
	printf("\n%-11s %-4s %3s %3s %9s %7s %6s %6s %4s %5s%s | %9s %6s | %9s %6s | %4s %9s %6s\n",
	       "KxN", "type", "M", "thr", "us/call", "GFLOPS", "GB/s", "rdGB/s",
	       "%BW",
	       "%peak", o->warm ? "  warmGB/s" : "", "ggml us", "x ggml",
	       "ggml rp us", "x rp", "dnnl", "us", "x dnnl");
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
	printf("%9.1f %7.1f %6.1f ", g->ours * 1e6,
	       flops(g) / g->ours * 1e-9, wbytes(g) / g->ours * 1e-9);
	print_opt(bar_gbps(r, g->nthr, wbytes(g), g->read), "%*.1f", 6);
	printf(" %4.0f %5.1f", pct_bw(r, g), pct_peak(r, g));
	if (r->o.warm)
		print_opt(g->warm > 0 ? wbytes(g) / g->warm * 1e-9 : 0,
			  " %*.1f", 10);
	printf(" | ");
	print_opt(g->ggml * 1e6, "%*.1f", 9);
	print_opt(ratio(g->ggml, g->ours), " %*.2f", 6);
	printf(" | ");
	print_opt(g->rp_err ? 0 : g->ggml_rp * 1e6, "%*.1f", 9);
	print_opt(g->rp_err ? 0 : ratio(g->ggml_rp, g->ours), " %*.2f", 6);
	printf(" | %4s ", dnnl_kind_name(g->kind));
	print_opt(g->dnnl * 1e6, "%*.1f", 9);
	print_opt(ratio(g->dnnl, g->ours), " %*.2f", 6);
	printf("\n");
}

static void print_attn(const struct run *r, const struct attn_row *a)
{
	if (a->err) {
		printf("attn %d/%d heads, %d seq %d thr: error: %s\n",
		       a->h.q, a->h.kv, a->nseq, a->nthr, strerror(-a->err));
		return;
	}
	printf("attn ctx %d, %d/%d heads, d %d, f16 KV: %d seq %d thr: "
	       "%8.1f us, %6.1f GB/s KV, %3.0f%% of read BW (%.1f GB/s)",
	       BENCH_ATTN_CTX, a->h.q, a->h.kv,
	       BENCH_ATTN_HEAD_DIM, a->nseq, a->nthr, a->sec * 1e6,
	       a->bytes / a->sec * 1e-9, attn_pct_bw(r, a),
	       bar_gbps(r, a->nthr, a->bytes, a->read));
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

enum metric { M_PCT_BW, M_X_GGML, M_X_GGML_RP, M_X_DNNL };

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
	{ "x ggml repacked >= 1.0 where ggml repacks", 0, { 0 },
	  M_X_GGML_RP, 1.0 },
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
	case M_X_GGML_RP:
		return g->rp_err ? 0 : ratio(g->ggml_rp, g->ours);
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
	double worst = 0;

	for (size_t i = 0; i < r->nattn; i++) {
		const struct attn_row *a = &r->attn[i];
		double v;

		if (a->err || a->nthr != nthr)
			continue;
		v = attn_pct_bw(r, a);
		if (v > 0 && (worst == 0 || v < worst))
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
			printf("  %-56s %7.3f%s %-6s (%s)\n", t->name, w,
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

void kernels_print_table(const struct run *r)
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

void kernels_print_json(const struct run *r)
{
	int nthr = max_threads(&r->o);
	size_t i;

	printf("{\"machine\": {");
	jstr("cpu", r->cpu_model, 0);
	printf("\"load\": [%.2f, %.2f], ", r->load[0], r->load[1]);
	jstr("isa", r->isa, 0);
	printf("\"cpus\": %d, \"rotate_bytes\": %llu, ", bench_ncpus(),
	       BENCH_ROTATE_BYTES);
	jstr("layout", r->o.x8 ? "x8" : "rows", 1);
	printf("},\n \"peers\": {");
	jstr("ggml", r->ggml_variant, 0);
	jstr("ggml_note", r->ggml_variant ? NULL : r->ggml_note, 0);
	jstr("ggml_repack", r->ggml_repack, 0);
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
		jnum("read_us", g->read * 1e6, 0);
		jnum("read_gbps", bar_gbps(r, g->nthr, wbytes(g), g->read), 0);
		jnum("pct_bw", ok ? pct_bw(r, g) : 0, 0);
		jnum("pct_peak", ok ? pct_peak(r, g) : 0, 0);
		jnum("warm_us", g->warm * 1e6, 0);
		jnum("ggml_us", g->ggml * 1e6, 0);
		jnum("x_ggml", ok ? ratio(g->ggml, g->ours) : 0, 0);
		jnum("ggml_rp_us", g->rp_err ? 0 : g->ggml_rp * 1e6, 0);
		jnum("x_ggml_rp", ok && !g->rp_err ?
		     ratio(g->ggml_rp, g->ours) : 0, 0);
		jstr("dnnl_kind", dnnl_kind_name(g->kind), 0);
		jnum("dnnl_us", g->dnnl * 1e6, 0);
		jnum("x_dnnl", ok ? ratio(g->dnnl, g->ours) : 0, 1);
		printf("}");
	}
	printf("],\n \"attn\": [");
	for (i = 0; i < r->nattn; i++) {
		const struct attn_row *a = &r->attn[i];
		double gbps = a->err ? 0 : a->bytes / a->sec * 1e-9;

		printf("%s\n  {\"ctx\": %d, \"q_heads\": %d, \"kv_heads\": %d, "
		       "\"head_dim\": %d, \"seqs\": %d, \"threads\": %d, "
		       "\"error\": %d, ", i ? "," : "", BENCH_ATTN_CTX,
		       a->h.q, a->h.kv, BENCH_ATTN_HEAD_DIM, a->nseq,
		       a->nthr, a->err);
		jnum("us", a->err ? 0 : a->sec * 1e6, 0);
		jnum("gbps", gbps, 0);
		jnum("read_us", a->read * 1e6, 0);
		jnum("read_gbps", bar_gbps(r, a->nthr, a->bytes, a->read), 0);
		jnum("pct_bw", a->err ? 0 : attn_pct_bw(r, a), 0);
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
