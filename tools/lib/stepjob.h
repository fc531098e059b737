/* SPDX-License-Identifier: MIT */
/*
 * Building the whole-model jobs of uapi/syshax_ops.h (MODEL_LOAD,
 * WEIGHTS_FREE, PREFILL, DECODE) from where their arrays and caches lie in
 * syshax buffers: the refs' order, lengths and access, and the size of a
 * cache block, in one place for syshax-run, syshax-serve, syshax-bench
 * and the llama.cpp comparison.
 */
#ifndef STEPJOB_H
#define STEPJOB_H

#include <stdint.h>

#include "syshax/rt.h"
#include "syshax_ops.h"

/* A place in a syshax buffer. */
struct sj_ref {
	const struct syshax_buffer *buf;
	uint64_t off;
};

/* A step's params and where its refs point. */
struct sj_step {
	struct syshax_step_params p;
	struct sj_ref tok, pos, bt;	/* pos: DECODE only */
	struct sj_ref k, v;		/* kv_bytes each, read-write */
	uint64_t kv_bytes;
	struct sj_ref out;		/* out_bytes, written */
	uint64_t out_bytes;
};

/* job = a DECODE or PREFILL (op) of s, with user_data; the lengths of the
 * token, position and block-table refs follow from s->p. 0 or -E2BIG. */
int sj_step(struct syshax_job *job, uint32_t op, uint64_t user_data,
	    const struct sj_step *s);
/* MODEL_LOAD of path, its files' float matrices kept (SYSHAX_QUANT_NONE);
 * the struct syshax_model_info into info unless NULL. 0 or -E2BIG. */
int sj_model_load(struct syshax_job *job, const char *path,
		  const struct sj_ref *info);
void sj_weights_free(struct syshax_job *job, uint64_t id);
/* Bytes of one KV-cache block of block_size positions of mi's model, all
 * its layers, K or V, in kv_type (SYSHAX_DT_F32, F16 or BF16). */
uint64_t sj_kv_block_bytes(const struct syshax_model_info *mi,
			   uint32_t block_size, uint32_t kv_type);

#endif /* STEPJOB_H */
