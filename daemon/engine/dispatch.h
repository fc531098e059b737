/* SPDX-License-Identifier: MIT */
/*
 * The CPU/xPU dispatch rule for DECODE jobs flagged SYSHAX_JOB_MAY_DEFER:
 * openEuler sysHAX's scheduler, per decode step (docs/dispatch.md). Pure
 * functions on counts and rates, so a unit test drives every branch.
 */
#ifndef SHXD_DISPATCH_H
#define SHXD_DISPATCH_H

#include <stdint.h>

/* Both sides below this many tokens/s per running request are "slow". */
#define SHXD_DISPATCH_SLOW_TPS	0.1f
/* The CPU's decode rate is measured over this window. */
#define SHXD_DISPATCH_WINDOW_NS	2000000000ULL
/* Batches the window keeps at most. */
#define SHXD_LOAD_SLOTS		64

enum shxd_side {
	SHXD_SIDE_CPU,
	SHXD_SIDE_XPU,		/* defer: the framework runs it on its xPU */
};

/* Why a side was chosen: the branch of the rule, in its order. */
enum shxd_why {
	SHXD_WHY_XPU_IDLE,	/* the xPU runs nothing: defer */
	SHXD_WHY_CPU_IDLE,	/* the CPU runs nothing: CPU */
	SHXD_WHY_CPU_FULL,	/* CPU at cpu_max_batch_size: defer */
	SHXD_WHY_BOTH_SLOW,	/* both below the slow rate: fewer running */
	SHXD_WHY_FASTER,	/* the faster per request; the xPU on ties */
};

struct shxd_dispatch_in {
	unsigned int xpu_running;	/* REPORT_XPU's (0 before any) */
	float xpu_tps;			/* its decode tokens/s, all requests */
	unsigned int cpu_running;	/* sequences decoding on the CPU */
	float cpu_tps;			/* CPU decode tokens/s, all requests */
	unsigned int max_batch;		/* cpu_max_batch_size */
};

enum shxd_side shxd_dispatch(const struct shxd_dispatch_in *in,
			     enum shxd_why *why);

/* The CPU's recent decode batches: a sliding window. */
struct shxd_load {
	struct {
		uint64_t t0, t1;	/* start and end, ns */
		unsigned int rows;
	} b[SHXD_LOAD_SLOTS];
	unsigned int next, count;
};

/* A decode batch of rows sequences ran from t0 to t1. */
void shxd_load_add(struct shxd_load *l, uint64_t t0, uint64_t t1,
		   unsigned int rows);
/*
 * At now: *running = the sequences of the latest batch when it ended
 * within the window, else 0; *tps = the tokens of the batches that ended
 * within the window over the time they ran: the CPU's decode rate while
 * it runs, which steps given to the xPU in between do not lower (a CPU
 * left idle drops out of the window and counts as idle).
 */
void shxd_load_get(const struct shxd_load *l, uint64_t now,
		   unsigned int *running, float *tps);

#endif /* SHXD_DISPATCH_H */
