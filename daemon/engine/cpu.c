// SPDX-License-Identifier: MIT
/* The CPU engine: pools, scratch, batching of fetched jobs, stats. */
#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_int.h"
#include "engine.h"
#include "log.h"
#include "wload.h"

_Static_assert((int)SYSHAX_DT_F32 == SHXK_F32 && (int)SYSHAX_DT_F16 ==
	       SHXK_F16 && (int)SYSHAX_DT_BF16 == SHXK_BF16 &&
	       (int)SYSHAX_DT_Q8_0 == SHXK_Q8_0 && (int)SYSHAX_DT_Q4_0 ==
	       SHXK_Q4_0 && (int)SHXD_T_Q4_0 == SHXK_Q4_0,
	       "one numbering for element types");

uint64_t shxd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

bool shxd_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

int shxd_params(const struct shxd_xjob *xj, void *dst, size_t size)
{
	memcpy(dst, xj->job->params, size);
	return shxd_zero(xj->job->params + size,
			 SYSHAX_JOB_PARAMS_SIZE - size) ? 0 : -EINVAL;
}

int shxd_ref_span(const struct shxd_xjob *xj, unsigned int i, uint32_t access,
		  uint64_t bytes, void **ptr)
{
	const struct syshax_buf_ref *r = &xj->job->refs[i];
	const struct shxd_mapping *m = xj->maps[i];

	if (i >= xj->job->nr_refs || (r->access & access) != access)
		return -EINVAL;
	if (r->length < bytes)
		return -ERANGE;
	/* Never trust that the broker and the mapping agree. */
	if (!m || r->offset > m->size || r->length > m->size - r->offset)
		return -ERANGE;
	*ptr = (uint8_t *)m->addr + r->offset;
	return 0;
}

void *shxd_span(const struct shxd_xjob *xj, unsigned int i, uint32_t acc,
		uint64_t bytes, int *err)
{
	void *p = NULL;

	if (!*err)
		*err = shxd_ref_span(xj, i, acc, bytes, &p);
	return p;
}

void *shxd_scratch(struct scratch *s, size_t bytes)
{
	void *p;

	if (bytes <= s->size && s->p)
		return s->p;
	bytes = bytes < 4096 ? 4096 : bytes + bytes / 4;
	if (s->node >= 0 && numa_available() >= 0) {
		p = numa_alloc_onnode(bytes, s->node);
		if (!p)
			return NULL;
		if (s->p)
			numa_free(s->p, s->size);
	} else {
		p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
		if (!p)
			return NULL;
		free(s->p);
	}
	s->p = p;
	s->size = bytes;
	return p;
}

static void scratch_free(struct scratch *s)
{
	if (s->p && s->node >= 0 && numa_available() >= 0)
		numa_free(s->p, s->size);
	else
		free(s->p);
	s->p = NULL;
	s->size = 0;
}

size_t shxd_act_size(enum shxk_type t)
{
	return t == SHXK_F32 ? 4 : t == SHXK_F16 || t == SHXK_BF16 ? 2 : 0;
}

void shxd_to_f32(enum shxk_type t, const void *src, float *dst, size_t n)
{
	if (t == SHXK_F32)
		memcpy(dst, src, n * sizeof(float));
	else
		shxk_dequantize(t, src, dst, n, 0, 1);
}

void shxd_from_f32(enum shxk_type t, const float *src, void *dst, size_t n)
{
	if (t == SHXK_F32)
		memcpy(dst, src, n * sizeof(float));
	else
		shxk_quantize(t, src, dst, n, 0, 1);
}

void shxd_topk_add(struct shxd_topk *t, uint32_t k, int32_t id, float v)
{
	uint32_t at = t->have, move;

	if (t->have == k && !(v > t->val[k - 1]))
		return;
	while (at > 0 && v > t->val[at - 1])
		at--;
	if (t->have < k)
		t->have++;
	move = t->have - 1 - at;
	memmove(t->ids + at + 1, t->ids + at, move * sizeof(*t->ids));
	memmove(t->val + at + 1, t->val + at, move * sizeof(*t->val));
	t->ids[at] = id;
	t->val[at] = v;
}

void shxd_split(size_t n, size_t align, unsigned int part, unsigned int parts,
		size_t *a, size_t *b)
{
	size_t chunk = (n + parts - 1) / parts;

	chunk = (chunk + align - 1) / align * align;
	*a = chunk * part < n ? chunk * part : n;
	*b = chunk * (part + 1) < n ? chunk * (part + 1) : n;
}

int shxd_cpu_create(const struct shxd_cpu_conf *conf, struct shxd_cpu **out,
		    char *err, size_t errlen)
{
	struct shxd_cpu *cpu;
	int ret;

	*err = '\0';
	ret = shxk_init();
	if (ret) {
		snprintf(err, errlen, "SYSHAX_ISA: %s", strerror(-ret));
		return ret;
	}
	cpu = calloc(1, sizeof(*cpu));
	if (!cpu)
		return -ENOMEM;
	ret = shxd_pool_create(&conf->pool, &cpu->pool, err, errlen);
	if (ret) {
		free(cpu);
		return ret;
	}
	snprintf(cpu->model_dir, sizeof(cpu->model_dir), "%s",
		 conf->model_dir ? conf->model_dir : "");
	cpu->quantize = conf->quantize;
	cpu->max_batch = conf->max_batch ? conf->max_batch : SHXD_DEF_MAX_BATCH;
	cpu->max_wsets = conf->max_wsets ? conf->max_wsets : SHXD_DEF_MAX_WSETS;
	pthread_mutex_init(&cpu->exec_lock, NULL);
	pthread_mutex_init(&cpu->stats_lock, NULL);
	for (unsigned int i = 0; i < MS_SLOTS; i++)
		cpu->ms[i].node = -1;
	cpu->stats.nr_nodes = shxd_pool_count(cpu->pool);
	cpu->stats.cpu_max_batch_size = cpu->max_batch;
	for (unsigned int p = 0; p < SHXD_MAX_POOLS; p++) {
		for (unsigned int i = 0; i < SC_SLOTS; i++)
			cpu->sc[p][i].node = p < cpu->stats.nr_nodes ?
					     shxd_pool_node(cpu->pool, p) : -1;
		cpu->stats.node_id[p] = -1;
	}
	for (unsigned int p = 0; p < cpu->stats.nr_nodes; p++) {
		cpu->stats.node_id[p] = shxd_pool_node(cpu->pool, p);
		cpu->stats.node_threads[p] = shxd_pool_threads(cpu->pool, p);
		cpu->stats.nr_threads += cpu->stats.node_threads[p];
	}
	*out = cpu;
	return 0;
}

void shxd_cpu_destroy(struct shxd_cpu *cpu)
{
	if (!cpu)
		return;
	shxd_pool_destroy(cpu->pool);
	for (unsigned int p = 0; p < SHXD_MAX_POOLS; p++)
		for (unsigned int i = 0; i < SC_SLOTS; i++)
			scratch_free(&cpu->sc[p][i]);
	for (unsigned int i = 0; i < MS_SLOTS; i++)
		scratch_free(&cpu->ms[i]);
	pthread_mutex_destroy(&cpu->exec_lock);
	pthread_mutex_destroy(&cpu->stats_lock);
	free(cpu);
}

const struct shxd_pool *shxd_cpu_pool(const struct shxd_cpu *cpu)
{
	return cpu->pool;
}

int shxd_cpu_preload(struct shxd_cpu *cpu, const char *path, uint64_t *id,
		     char *err, size_t errlen)
{
	struct shxd_wset *ws;
	int ret = shxd_wload_file(cpu->model_dir, path, cpu->quantize,
				  cpu->pool, &ws, err, errlen);

	if (ret)
		return ret;
	ret = shxd_wreg_add(ws, cpu->max_wsets);
	if (ret) {
		shxd_wset_put(ws);
		return ret;
	}
	*id = ws->id;
	return 0;
}

static unsigned int bucket(uint64_t tokens)
{
	unsigned int b = 0;

	while (tokens > 1 && b < SYSHAX_STATS_BATCH_BUCKETS - 1) {
		tokens >>= 1;
		b++;
	}
	return b;
}

void shxd_account(struct shxd_cpu *cpu, uint32_t op, unsigned int n,
		  uint64_t tokens, int ret, bool batched)
{
	int i = syshax_stats_op_index(op);

	if (i < 0)
		return;
	pthread_mutex_lock(&cpu->stats_lock);
	for (unsigned int p = 0; p < cpu->stats.nr_nodes; p++) {
		struct syshax_op_stats *s = &cpu->stats.op[i][p];

		if (ret) {
			s->failed += n;
			continue;
		}
		s->jobs += n;
		s->tokens += tokens;
		s->run_ns += cpu->pool_ns[p];
		s->batches += batched;
		s->batch_hist[bucket(tokens)]++;
	}
	pthread_mutex_unlock(&cpu->stats_lock);
}

static void fail(struct shxd_cpu *cpu, uint32_t op, int ret)
{
	shxd_account(cpu, op, 1, 0, ret, false);
}

/* Checks job i and, when it can batch, the later jobs that fit with it;
 * runs them as one and completes them all. */
static void run_batch(struct shxd_cpu *cpu, struct shxd_xjob *jobs,
		      unsigned int i, unsigned int n,
		      struct syshax_engine_cpl *cpls, bool *done)
{
	struct shxd_pjob pj[SHXD_ENGINE_BATCH], *pp[SHXD_ENGINE_BATCH];
	unsigned int np = 0;
	uint64_t tokens, t0 = shxd_now_ns();
	int ret;

	ret = shxd_op_check(cpu, &jobs[i], &pj[0]);
	done[i] = true;
	if (ret) {
		cpls[i].status = ret;
		fail(cpu, jobs[i].job->op, ret);
		return;
	}
	pj[0].idx = i;
	pp[np++] = &pj[0];
	tokens = pj[0].m;
	for (unsigned int j = i + 1; j < n && tokens < cpu->max_batch; j++) {
		struct shxd_pjob *c = &pj[np];

		if (done[j] || jobs[j].status || jobs[j].job->op != pj[0].op)
			continue;
		ret = shxd_op_check(cpu, &jobs[j], c);
		if (ret) {
			done[j] = true;
			cpls[j].status = ret;
			fail(cpu, jobs[j].job->op, ret);
			continue;
		}
		if (!shxd_op_batchable(&pj[0], c) ||
		    tokens + c->m > cpu->max_batch) {
			shxd_pjob_release(c);
			continue;
		}
		c->idx = j;
		done[j] = true;
		tokens += c->m;
		pp[np++] = c;
	}
	ret = shxd_op_linear(cpu, pp, np);
	for (unsigned int k = 0; k < np; k++) {
		struct syshax_engine_cpl *c = &cpls[pp[k]->idx];

		c->status = ret;
		c->result = ret ? 0 : pp[k]->m;
		c->exec_ns = shxd_now_ns() - t0;
		shxd_pjob_release(pp[k]);
	}
	shxd_account(cpu, pj[0].op, np, tokens, ret, np > 1);
}

void shxd_cpu_exec(struct shxd_cpu *cpu, struct shxd_xjob *jobs,
		   unsigned int n, struct syshax_engine_cpl *cpls)
{
	bool done[SHXD_ENGINE_BATCH] = { false };

	for (unsigned int i = 0; i < n; i++) {
		const struct syshax_job *job = jobs[i].job;
		uint64_t t0 = shxd_now_ns();
		int ret;

		if (done[i])
			continue;
		if (jobs[i].status) {
			cpls[i].status = jobs[i].status;
			continue;
		}
		switch (job->op) {
		case SYSHAX_OP_GEMM:
		case SYSHAX_OP_FFN:
		case SYSHAX_OP_MOE:
			pthread_mutex_lock(&cpu->exec_lock);
			run_batch(cpu, jobs, i, n, cpls, done);
			pthread_mutex_unlock(&cpu->exec_lock);
			continue;
		case SYSHAX_OP_ATTN_DECODE:
			pthread_mutex_lock(&cpu->exec_lock);
			ret = shxd_op_attn(cpu, &jobs[i]);
			cpls[i].result = ret ? 0 : ((const struct
				syshax_attn_decode_params *)job->params)->num_seqs;
			shxd_account(cpu, job->op, 1, cpls[i].result, ret, false);
			pthread_mutex_unlock(&cpu->exec_lock);
			break;
		case SYSHAX_OP_DECODE:
		case SYSHAX_OP_PREFILL:
			pthread_mutex_lock(&cpu->exec_lock);
			shxd_op_steps(cpu, jobs, i, n, cpls, done);
			pthread_mutex_unlock(&cpu->exec_lock);
			continue;
		case SYSHAX_OP_MODEL_LOAD:
		case SYSHAX_OP_REPORT_XPU:
			ret = shxd_op_model(cpu, &jobs[i], &cpls[i].result);
			break;
		case SYSHAX_OP_WEIGHTS_LOAD:
		case SYSHAX_OP_WEIGHTS_FREE:
		case SYSHAX_OP_ENGINE_STATS:
			ret = shxd_op_weights(cpu, &jobs[i], &cpls[i].result);
			break;
		default:
			ret = shxd_exec(job, jobs[i].maps, &cpls[i].result);
			break;
		}
		cpls[i].status = ret;
		cpls[i].exec_ns = shxd_now_ns() - t0;
	}
}
