/* SPDX-License-Identifier: MIT */
/*
 * syshax-bench kernels: what one run measured, shared by the measuring
 * (kernels.c) and the report (kernels_report.c: table, JSON, targets).
 */
#ifndef SYSHAX_BENCH_KERNELS_H
#define SYSHAX_BENCH_KERNELS_H

#include "bench.h"

#define MAX_LIST 16

struct shape {
	int k, n;
};

/* Query and kv heads of a decode-attention row (GQA groups of q / kv). */
struct attn_heads {
	int q, kv;
};

struct opts {
	int json, warm, x8, attn, use_ggml, use_dnnl, use_repack, wide;
	const char *ggml_dir;
	double budget;
	int nshapes, ntypes, nm, nthr, nheads;
	struct shape shapes[MAX_LIST];
	struct attn_heads heads[MAX_LIST];
	enum bench_wtype types[BENCH_NWTYPES];
	int ms[MAX_LIST], thr[MAX_LIST];
};

/*
 * Measured several times in a run; the highest figure counts. bw is the
 * sustained figure (1 GiB passes); the "%BW" columns use the read probe
 * on each row's own bytes per call instead (see bench_reader_time()).
 */
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
	/* ggml with its repack buffer type; rp_err: why not measured */
	double ggml_rp;
	int rp_err;
	double read;	/* the read probe on the same bytes per call */
};

struct attn_row {
	struct attn_heads h;
	int nseq, nthr, err;
	double sec, warm, bytes, read;
};

/* Everything one run measured, for the table, JSON and target checks. */
struct run {
	struct opts o;
	const char *isa, *ggml_variant, *dnnl_version, *ggml_repack;
	char ggml_note[128], dnnl_note[128];
	char cpu_model[128];
	double load[2];		/* 1-minute load average at start and end */
	struct bench_reader *reader;
	struct limits lim[MAX_LIST];
	struct gemm_row *rows;
	size_t nrows;
	struct attn_row attn[2 * MAX_LIST * MAX_LIST];
	size_t nattn;
};

void kernels_print_table(const struct run *r);
void kernels_print_json(const struct run *r);

#endif
