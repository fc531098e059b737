// SPDX-License-Identifier: MIT
/* The job engine loop over libsyshax-rt's engine calls. */
#include "engine.h"

#include <errno.h>
#include <numa.h>
#include <string.h>
#include <time.h>

#include "cpu.h"
#include "exec.h"
#include "log.h"

#define FETCH_TIMEOUT_NS	100000000LL	/* how often *stop is checked */
#define CONNECT_RETRY_NS	20000000L

/* The buffers one batch references, each mapped once. */
struct batch_maps {
	struct shxd_mapping m[SHXD_ENGINE_BATCH * SYSHAX_JOB_MAX_REFS];
	unsigned int nr;
};

static int batch_map(struct syshax *sh, struct batch_maps *bm, uint64_t id,
		     const struct shxd_mapping **out)
{
	struct shxd_mapping *m;
	unsigned int i;
	int ret;

	for (i = 0; i < bm->nr; i++) {
		if (bm->m[i].id == id) {
			*out = &bm->m[i];
			return 0;
		}
	}
	m = &bm->m[bm->nr];
	ret = syshax_engine_map(sh, id, &m->addr, &m->size);
	if (ret)
		return ret;
	m->id = id;
	bm->nr++;
	*out = m;
	return 0;
}

/* Unmapping before completing: once a client sees its completion, nothing
 * of the engine's holds the buffer's memory any more. */
static void batch_unmap(struct syshax *sh, struct batch_maps *bm)
{
	unsigned int i;

	for (i = 0; i < bm->nr; i++) {
		int ret = syshax_engine_unmap(sh, bm->m[i].addr, bm->m[i].size);

		if (ret)
			shxd_log(LOG_WARNING, "engine: unmap of buffer %llu: %s",
				 (unsigned long long)bm->m[i].id,
				 syshax_strerror(ret));
	}
	bm->nr = 0;
}

/* Maps every job's refs; a job whose mapping fails completes with it. */
static void map_jobs(struct syshax *sh, struct batch_maps *bm,
		     const struct syshax_engine_job *ej, struct shxd_xjob *xj,
		     struct syshax_engine_cpl *cpls, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct syshax_job *job = &ej[i].job;

		memset(&xj[i], 0, sizeof(xj[i]));
		memset(&cpls[i], 0, sizeof(cpls[i]));
		cpls[i].token = ej[i].token;
		xj[i].job = job;
		xj[i].ctx = ej[i].ctx_id;
		if (job->nr_refs > SYSHAX_JOB_MAX_REFS)
			xj[i].status = -EINVAL;
		for (unsigned int r = 0; !xj[i].status && r < job->nr_refs; r++)
			xj[i].status = batch_map(sh, bm, job->refs[r].buf,
						 &xj[i].maps[r]);
	}
}

static int open_backend(const struct shxd_engine_conf *conf,
			volatile sig_atomic_t *stop, struct syshax **sh)
{
	struct syshax_open_opts opts = {
		.backend = conf->backend,
		.path = conf->path,
	};
	uint64_t deadline = shxd_now_ns() + conf->connect_ms * 1000000ULL;
	const struct timespec pause = { 0, CONNECT_RETRY_NS };
	int ret;

	for (;;) {
		ret = syshax_open(sh, &opts);
		/* The broker may still be starting: its socket is missing or
		 * not listening yet. */
		if ((ret != -ENOENT && ret != -ECONNREFUSED) || *stop ||
		    shxd_now_ns() >= deadline)
			return ret;
		nanosleep(&pause, NULL);
	}
}

static int serve(struct syshax *sh, struct shxd_cpu *cpu,
		 volatile sig_atomic_t *stop, unsigned long long *served)
{
	static _Thread_local struct shxd_xjob xj[SHXD_ENGINE_BATCH];
	static _Thread_local struct syshax_engine_job jobs[SHXD_ENGINE_BATCH];
	static _Thread_local struct syshax_engine_cpl cpls[SHXD_ENGINE_BATCH];
	static _Thread_local struct batch_maps bm;

	while (!*stop) {
		int n, done;

		n = syshax_engine_fetch(sh, jobs, SHXD_ENGINE_BATCH,
					FETCH_TIMEOUT_NS);
		if (n == -ETIMEDOUT || n == -EINTR)
			continue;
		if (n < 0)	/* a broker going away as we stop is no error */
			return *stop ? 0 : n;
		map_jobs(sh, &bm, jobs, xj, cpls, (unsigned int)n);
		shxd_cpu_exec(cpu, xj, (unsigned int)n, cpls);
		batch_unmap(sh, &bm);
		for (done = 0; done < n;) {
			int ret = syshax_engine_complete(sh, cpls + done,
							 (unsigned int)(n - done));

			if (ret <= 0)
				return *stop ? 0 : ret < 0 ? ret : -EIO;
			done += ret;
		}
		*served += (unsigned long long)n;
	}
	return 0;
}

int shxd_engine_run(const struct shxd_engine_conf *conf,
		    volatile sig_atomic_t *stop)
{
	unsigned long long served = 0;
	struct syshax *sh;
	int ret;

	if (conf->node >= 0 && numa_available() >= 0 &&
	    numa_run_on_node(conf->node))
		shxd_log(LOG_WARNING, "engine: cannot run on node %d",
			 conf->node);
	ret = open_backend(conf, stop, &sh);
	if (ret && *stop)
		return 0;	/* stopped before the backend was up */
	if (ret) {
		shxd_log(LOG_ERR, "engine: open %s: %s",
			 conf->path ? conf->path : "(auto)",
			 syshax_strerror(ret));
		return ret;
	}
	syshax_set_spin(sh, conf->poll_us);
	ret = syshax_engine_attach(sh, conf->node);
	if (ret) {
		shxd_log(LOG_ERR, "engine: attach: %s", syshax_strerror(ret));
		syshax_close(sh);
		return ret;
	}
	shxd_log(LOG_INFO, "engine: attached to the %s backend%s%s",
		 syshax_backend(sh) == SYSHAX_BACKEND_KERNEL ? "kernel" :
		 "userspace", conf->path ? " at " : "",
		 conf->path ? conf->path : "");
	if (conf->attached)
		conf->attached();
	ret = serve(sh, conf->cpu, stop, &served);
	if (ret)
		shxd_log(LOG_ERR, "engine: %s after %llu jobs",
			 syshax_strerror(ret), served);
	else
		shxd_log(LOG_INFO, "engine: stopped after %llu jobs", served);
	syshax_close(sh);
	return ret;
}
