/* SPDX-License-Identifier: MIT */
/*
 * The CPU engine: worker pools, weight sets and the compute ops
 * (syshax_ops.h) on fetched jobs. Engine threads share one struct shxd_cpu;
 * batches run one at a time on its pools, while a WEIGHTS_LOAD (seconds
 * for a large file) keeps only its own engine thread busy.
 */
#ifndef SHXD_CPU_H
#define SHXD_CPU_H

#include <pthread.h>
#include <stdint.h>

#include "exec.h"
#include "pool.h"
#include "shxk.h"
#include "syshax_ops.h"

/* Default tokens per batched run (the sysHAX key cpu_max_batch_size). */
#define SHXD_DEF_MAX_BATCH	32
#define SHXD_DEF_MAX_WSETS	64

struct shxd_cpu_conf {
	struct shxd_pool_conf pool;
	const char *model_dir;		/* "" or NULL: no file loads */
	enum shxk_type quantize;	/* SHXK_F32: keep float weights */
	unsigned int max_batch;		/* tokens per batched run */
	unsigned int max_wsets;		/* weight sets loaded at once */
};

struct shxd_cpu;

/* Starts the pools (the kernels' shxk_init() first). err says why not. */
int shxd_cpu_create(const struct shxd_cpu_conf *conf, struct shxd_cpu **out,
		    char *err, size_t errlen);
void shxd_cpu_destroy(struct shxd_cpu *cpu);
const struct shxd_pool *shxd_cpu_pool(const struct shxd_cpu *cpu);

/* A job as fetched, its refs mapped (status < 0: mapping failed). */
struct shxd_xjob {
	const struct syshax_job *job;
	uint32_t ctx;			/* submitting context */
	const struct shxd_mapping *maps[SYSHAX_JOB_MAX_REFS];
	int status;
};

/*
 * Runs jobs[0..n) and fills cpls[i].status/result/exec_ns (token left to
 * the caller). Compatible FFN, MOE and GEMM jobs (same op, weight set,
 * layer or tensor, flags) run as one batch of up to max_batch tokens; a
 * job never waits for jobs that have not been fetched with it.
 */
void shxd_cpu_exec(struct shxd_cpu *cpu, struct shxd_xjob *jobs,
		   unsigned int n, struct syshax_engine_cpl *cpls);

/* CLOCK_MONOTONIC in ns. */
uint64_t shxd_now_ns(void);

/* Loads a weights file at start (config "preload"); returns the id. */
int shxd_cpu_preload(struct shxd_cpu *cpu, const char *path, uint64_t *id,
		     char *err, size_t errlen);

#endif /* SHXD_CPU_H */
