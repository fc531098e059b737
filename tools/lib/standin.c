// SPDX-License-Identifier: MIT
/*
 * The stand-in xPU of --xpu-standin (standin.h): an in-process instance
 * of syshaxd's own CPU engine (one worker). It runs the steps it is given
 * on this process's mappings of the very syshax buffers syshaxd uses: the
 * KV blocks either side wrote are read by the other, nothing is copied.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu.h"
#include "backend.h"
#include "log.h"
#include "standin.h"

#define STANDIN_CTX	1	/* the context its jobs come from */
#define RATE_WINDOW	8	/* steps its tokens/s is measured over */

struct standin {
	struct shxd_cpu *cpu;
	uint64_t model;
	/* Its last RATE_WINDOW steps: sequences run and time taken. */
	uint32_t win_tok[RATE_WINDOW];
	uint64_t win_ns[RATE_WINDOW];
	unsigned int nwin;
};

/* Runs one job on the stand-in's engine; maps[i] backs job->refs[i]. */
static int exec_one(struct standin *s, const struct syshax_job *job,
		    const struct shxd_mapping *maps, uint64_t *result)
{
	struct shxd_xjob xj = { .job = job, .ctx = STANDIN_CTX };
	struct syshax_engine_cpl cpl = { 0 };

	for (unsigned int i = 0; i < job->nr_refs; i++)
		xj.maps[i] = &maps[i];
	shxd_cpu_exec(s->cpu, &xj, 1, &cpl);
	*result = cpl.result;
	return cpl.status;
}

/* The last CPU this process may run on: its one worker's, away from the
 * first CPUs a daemon's pool takes. */
static int last_cpu(void)
{
	cpu_set_t set;
	int cpu = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpu = c;
	return cpu;
}

static int load(struct standin *s, const char *file)
{
	struct syshax_model_load_params p = { .quantize = SYSHAX_QUANT_NONE };
	struct syshax_model_info info;
	struct shxd_mapping map = { .addr = &info, .size = sizeof(info) };
	struct syshax_job job;

	snprintf(p.path, sizeof(p.path), "%s", file);
	syshax_job_init(&job, SYSHAX_OP_MODEL_LOAD, 0);
	syshax_job_params(&job, &p, sizeof(p));
	job.nr_refs = 1;
	job.refs[0] = (struct syshax_buf_ref){
		.access = SYSHAX_ACCESS_WRITE, .length = sizeof(info),
	};
	return exec_one(s, &job, &map, &s->model);
}

int standin_open(struct standin **out, const char *prog, const char *dir,
		 const char *file)
{
	struct shxd_cpu_conf conf = {
		.pool = { .nthreads = 1 },
		.model_dir = dir,
		.quantize = SHXK_F32,
		.max_batch = SHXD_DEF_MAX_BATCH,
		.max_wsets = 1,
	};
	struct standin *s = calloc(1, sizeof(*s));
	static char name[64];	/* the log keeps the pointer */
	char cpus[16], err[256];
	int ret;

	if (!s)
		return -ENOMEM;
	/* One named CPU: a single thread need not divide over the nodes. */
	snprintf(cpus, sizeof(cpus), "%d", last_cpu());
	conf.pool.affinity = cpus;
	/* Its engine's lines must not read as the daemon's. */
	snprintf(name, sizeof(name), "%s: xpu stand-in", prog);
	shxd_log_init(name, true);
	ret = shxd_cpu_create(&conf, &s->cpu, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: stand-in xPU: %s\n", prog, err);
		free(s);
		return ret;
	}
	ret = load(s, file);
	if (ret) {
		fprintf(stderr, "%s: stand-in xPU: MODEL_LOAD %s: %s\n",
			prog, file, syshax_strerror(ret));
		standin_close(s);
		return ret;
	}
	*out = s;
	return 0;
}

void standin_close(struct standin *s)
{
	struct syshax_weights_free_params p = { .wset = s->model };
	struct syshax_job job;
	uint64_t res;

	if (s->model) {
		syshax_job_init(&job, SYSHAX_OP_WEIGHTS_FREE, 0);
		syshax_job_params(&job, &p, sizeof(p));
		exec_one(s, &job, NULL, &res);
	}
	shxd_cpu_destroy(s->cpu);
	free(s);
}

int standin_step(struct standin *s, const struct syshax_job *job,
		 const struct syshax_buffer *const *bufs)
{
	struct shxd_mapping maps[SYSHAX_JOB_MAX_REFS];
	struct syshax_step_params p;
	struct syshax_job mine = *job;
	uint64_t t0 = shxd_now_ns(), res;
	int ret;

	/* The same step on its own copy of the model; it does not defer. */
	memcpy(&p, job->params, sizeof(p));
	p.model = s->model;
	syshax_job_params(&mine, &p, sizeof(p));
	mine.flags = 0;
	for (unsigned int i = 0; i < job->nr_refs; i++) {
		maps[i] = (struct shxd_mapping){ bufs[i]->id, bufs[i]->addr,
						 bufs[i]->size };
		mine.refs[i].buf = bufs[i]->id;
	}
	ret = exec_one(s, &mine, maps, &res);
	if (ret || job->op != SYSHAX_OP_DECODE)
		return ret;
	s->win_tok[s->nwin % RATE_WINDOW] = p.n;
	s->win_ns[s->nwin % RATE_WINDOW] = shxd_now_ns() - t0;
	s->nwin++;
	return 0;
}

/* Its decode tokens/s over its last steps (0 before the first). */
static float rate(const struct standin *s)
{
	unsigned int n = s->nwin < RATE_WINDOW ? s->nwin : RATE_WINDOW;
	uint64_t tok = 0, ns = 0;

	for (unsigned int i = 0; i < n; i++) {
		tok += s->win_tok[i];
		ns += s->win_ns[i];
	}
	return ns ? (float)((double)tok * 1e9 / (double)ns) : 0.0f;
}

int standin_report(struct standin *s, struct syshax *sh, unsigned int ran)
{
	struct syshax_report_xpu_params p = {
		.running = ran,
		.tokens_per_s = syshax_f32_bits(rate(s)),
	};
	struct syshax_completion c;
	struct syshax_job job;

	syshax_job_init(&job, SYSHAX_OP_REPORT_XPU, 0);
	syshax_job_params(&job, &p, sizeof(p));
	return be_job(sh, &job, &c);
}
