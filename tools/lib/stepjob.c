// SPDX-License-Identifier: MIT
/* Whole-model jobs from buffer places (stepjob.h). */
#include "stepjob.h"

#include <stdbool.h>
#include <stdio.h>

static int add(struct syshax_job *job, const struct sj_ref *r, uint64_t len,
	       uint32_t access)
{
	return syshax_job_add_ref(job, r->buf, r->off, len, access);
}

int sj_step(struct syshax_job *job, uint32_t op, uint64_t user_data,
	    const struct sj_step *s)
{
	bool decode = op == SYSHAX_OP_DECODE;
	uint64_t n = s->p.n;
	int ret;

	syshax_job_init(job, op, user_data);
	ret = syshax_job_params(job, &s->p, sizeof(s->p));
	if (!ret)
		ret = add(job, &s->tok, n * 4, SYSHAX_ACCESS_READ);
	if (!ret && decode)
		ret = add(job, &s->pos, n * 4, SYSHAX_ACCESS_READ);
	if (!ret)
		ret = add(job, &s->bt, (decode ? n : 1) * s->p.max_blocks * 4,
			  SYSHAX_ACCESS_READ);
	if (!ret)
		ret = add(job, &s->k, s->kv_bytes, SYSHAX_ACCESS_RW);
	if (!ret)
		ret = add(job, &s->v, s->kv_bytes, SYSHAX_ACCESS_RW);
	if (!ret)
		ret = add(job, &s->out, s->out_bytes, SYSHAX_ACCESS_WRITE);
	return ret;
}

int sj_model_load(struct syshax_job *job, const char *path,
		  const struct sj_ref *info)
{
	struct syshax_model_load_params p = { .quantize = SYSHAX_QUANT_NONE };
	int ret;

	snprintf(p.path, sizeof(p.path), "%s", path);
	syshax_job_init(job, SYSHAX_OP_MODEL_LOAD, 0);
	ret = syshax_job_params(job, &p, sizeof(p));
	if (!ret && info)
		ret = add(job, info, sizeof(struct syshax_model_info),
			  SYSHAX_ACCESS_WRITE);
	return ret;
}

uint64_t sj_kv_block_bytes(const struct syshax_model_info *mi,
			   uint32_t block_size, uint32_t kv_type)
{
	return (uint64_t)block_size * mi->n_head_kv * mi->head_dim *
	       (kv_type == SYSHAX_DT_F32 ? 4 : 2) * mi->n_layer;
}

void sj_weights_free(struct syshax_job *job, uint64_t id)
{
	struct syshax_weights_free_params p = { .wset = id };

	syshax_job_init(job, SYSHAX_OP_WEIGHTS_FREE, 0);
	syshax_job_params(job, &p, sizeof(p));
}
