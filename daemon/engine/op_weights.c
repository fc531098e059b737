// SPDX-License-Identifier: MIT
/* WEIGHTS_LOAD, WEIGHTS_FREE and ENGINE_STATS. */
#include <errno.h>
#include <string.h>

#include "cpu_int.h"
#include "log.h"
#include "wload.h"

int shxd_quant_type(const struct shxd_cpu *cpu, uint32_t q, enum shxk_type *t)
{
	switch (q) {
	case SYSHAX_QUANT_DEFAULT:
		*t = cpu->quantize;
		return 0;
	case SYSHAX_QUANT_NONE:
		*t = SHXK_F32;
		return 0;
	case SYSHAX_QUANT_Q8_0:
		*t = SHXK_Q8_0;
		return 0;
	case SYSHAX_QUANT_Q4_0:
		*t = SHXK_Q4_0;
		return 0;
	default:
		return -EINVAL;
	}
}

int shxd_wreg_publish(struct shxd_cpu *cpu, struct shxd_wset *ws, uint32_t ctx,
		      const char *what, __u64 *id)
{
	int ret;

	ws->owner = ctx;
	ret = shxd_wreg_add(ws, cpu->max_wsets);
	if (ret) {
		shxd_log(LOG_WARNING, "weights %s: %s (max_weight_sets %u)",
			 what, strerror(-ret), cpu->max_wsets);
		shxd_wset_put(ws);
		return ret;
	}
	*id = ws->id;
	shxd_log(LOG_INFO, "weights %s: set %llu, %zu tensors%s", what,
		 (unsigned long long)ws->id, ws->nt,
		 ws->base ? ", shared with a set of the same file" : "");
	return 0;
}

static int load(struct shxd_cpu *cpu, const struct shxd_xjob *xj,
		__u64 *id)
{
	struct syshax_weights_load_params a;
	struct shxd_wset *ws;
	enum shxk_type q;
	char err[512];
	int ret;

	if (shxd_params(xj, &a, sizeof(a)) || a.flags || a.pad ||
	    !shxd_zero(a.reserved, sizeof(a.reserved)) ||
	    shxd_quant_type(cpu, a.quantize, &q))
		return -EINVAL;
	if (a.source == SYSHAX_WLOAD_FILE) {
		if (xj->job->nr_refs || !memchr(a.path, '\0', sizeof(a.path)) ||
		    !a.path[0])
			return -EINVAL;
		ret = shxd_wload_file(cpu->model_dir, a.path, q, cpu->pool,
				      &ws, err, sizeof(err));
	} else if (a.source == SYSHAX_WLOAD_BUFFER) {
		void *img;

		if (xj->job->nr_refs != 1 || !shxd_zero(a.path, sizeof(a.path)))
			return -EINVAL;
		ret = shxd_ref_span(xj, 0, SYSHAX_ACCESS_READ, 0, &img);
		if (ret)
			return ret;
		snprintf(a.path, sizeof(a.path), "(buffer %llu)",
			 (unsigned long long)xj->job->refs[0].buf);
		ret = shxd_wload_buffer(img, xj->job->refs[0].length, q,
					cpu->pool, &ws, err, sizeof(err));
	} else {
		return -EINVAL;
	}
	if (ret) {
		shxd_log(LOG_WARNING, "weights %s: %s", a.path,
			 err[0] ? err : strerror(-ret));
		return ret;
	}
	return shxd_wreg_publish(cpu, ws, xj->ctx, a.path, id);
}

static void list_wset(const struct shxd_wset *ws, bool first, void *arg)
{
	struct syshax_engine_stats *st = arg;

	if (st->nr_wsets < SYSHAX_STATS_WSETS) {
		struct syshax_wset_stats *w = &st->wsets[st->nr_wsets];

		w->id = ws->id;
		/* Tensors an earlier set shares are counted there. */
		for (unsigned int p = 0; first && p < ws->npools; p++) {
			int node = ws->arena[p].node;

			w->node_bytes[node < SYSHAX_MAX_NODES ? node :
				      SYSHAX_MAX_NODES - 1] +=
				shxd_wset_pool_bytes(ws, p);
		}
	}
	st->nr_wsets++;
}

static int stats(struct shxd_cpu *cpu, const struct shxd_xjob *xj,
		 __u64 *result)
{
	struct syshax_engine_stats st;
	void *out;
	int ret;

	if (xj->job->nr_refs != 1 ||
	    !shxd_zero(xj->job->params, SYSHAX_JOB_PARAMS_SIZE))
		return -EINVAL;
	ret = shxd_ref_span(xj, 0, SYSHAX_ACCESS_WRITE, sizeof(st), &out);
	if (ret)
		return ret;
	pthread_mutex_lock(&cpu->stats_lock);
	st = cpu->stats;
	pthread_mutex_unlock(&cpu->stats_lock);
	st.nr_wsets = 0;
	memset(st.wsets, 0, sizeof(st.wsets));
	shxd_wreg_each(list_wset, &st);
	memcpy(out, &st, sizeof(st));
	*result = sizeof(st);
	return 0;
}

int shxd_op_weights(struct shxd_cpu *cpu, const struct shxd_xjob *xj,
		    __u64 *result)
{
	struct syshax_weights_free_params f;

	switch (xj->job->op) {
	case SYSHAX_OP_WEIGHTS_LOAD:
		return load(cpu, xj, result);
	case SYSHAX_OP_WEIGHTS_FREE:
		if (shxd_params(xj, &f, sizeof(f)) || xj->job->nr_refs ||
		    !f.wset || !shxd_zero(f.reserved, sizeof(f.reserved)))
			return -EINVAL;
		return shxd_wreg_remove(f.wset, xj->ctx);
	case SYSHAX_OP_ENGINE_STATS:
		return stats(cpu, xj, result);
	default:
		return -EINVAL;
	}
}
