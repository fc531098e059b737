// SPDX-License-Identifier: MIT
/*
 * One run: the backend (a running one, else a private syshaxd), the model,
 * the KV caches and the steps. Buffers are syshax buffers, mapped here: the
 * K and V caches hold every layer's blocks, the io buffer the prompts, the
 * step's token ids and positions, the block tables and the output rows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run.h"
#include "stepjob.h"
#include "xpu.h"

#define PROG	"syshax-run"
#define ROW	8	/* an output row: one (s32 id, f32 logit) pair */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int run_open(struct run *r, const struct run_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->o = o;
	r->beo = (struct be_opts){
		.prog = PROG, .model = o->model, .syshaxd = o->syshaxd,
		.threads = o->threads, .private = o->private,
	};
	return be_open(&r->be, &r->beo);
}

/* io layout: info, prompts, step tokens, positions, block tables, output. */
static uint64_t io_layout(struct run *r)
{
	const struct run_opts *o = r->o;
	uint64_t off = 0;

#define IO_REGION(field, bytes) \
	do { r->field = off; off += ((uint64_t)(bytes) + 63) & ~63ULL; } while (0)
	off = (sizeof(struct syshax_model_info) + 63) & ~63ULL;
	IO_REGION(off_prompt, (uint64_t)o->seqs * o->plen * 4);
	IO_REGION(off_tok, o->seqs * 4);
	IO_REGION(off_pos, o->seqs * 4);
	IO_REGION(off_bt, (uint64_t)o->seqs * r->bps * 4);
	IO_REGION(off_out, o->seqs * ROW);
#undef IO_REGION
	return off;
}

static int check_prompt(const struct run *r)
{
	for (unsigned int i = 0; i < r->o->plen; i++) {
		if ((uint32_t)r->o->prompt[i] >= r->info.n_vocab) {
			fprintf(stderr, PROG ": token %d is not below the "
				"model's n_vocab %u\n", r->o->prompt[i],
				r->info.n_vocab);
			return -EINVAL;
		}
	}
	return 0;
}

int run_load(struct run *r)
{
	const struct run_opts *o = r->o;
	int ret;

	/* Every sequence holds its prompt and n tokens (the last one is
	 * never fed back: one spare position). */
	r->bps = (o->plen + o->n + o->block_size - 1) / o->block_size;
	r->num_blocks = r->bps * o->seqs;
	ret = be_buf(&r->be, io_layout(r), &r->io, "io");
	if (!ret)
		ret = be_model_load(&r->be, &r->io, &r->info);
	if (!ret)
		ret = check_prompt(r);
	if (ret)
		return ret;
	/* K and V in one buffer, V after K, as syshax-serve's. */
	r->kv_bytes = r->num_blocks * sj_kv_block_bytes(&r->info,
							o->block_size,
							o->kv_type);
	ret = be_buf(&r->be, 2 * r->kv_bytes, &r->kv, "KV cache");
	if (ret || (!o->standin && !o->worker))
		return ret;
	/* A worker imports the buffers into its own context: syshaxd's. */
	if (o->worker && r->be.d.pid) {
		fprintf(stderr, PROG ": --xpu-worker needs a running syshaxd "
			"($SYSHAX_DEVICE) that the worker uses too, not a "
			"private one\n");
		return -EINVAL;
	}
	/* With a running daemon the path was passed as given: the xPU side
	 * reads the file from here. */
	if (!r->be.real[0])
		ret = be_locate(&r->be);
	return ret ? ret : xpu_open(&r->xpu, PROG, o->worker, r->be.dir,
				    r->be.real);
}

static int32_t *io_s32(const struct run *r, uint64_t off)
{
	return (int32_t *)((uint8_t *)r->io.addr + off);
}

/* Prompts and block tables. Sequence i's prompt is the given one with its
 * first token (first + i) % n_vocab; its j-th block is j * seqs + i, so the
 * sequences' blocks interleave in the caches. */
static void fill_io(struct run *r)
{
	const struct run_opts *o = r->o;
	int32_t *pr = io_s32(r, r->off_prompt), *bt = io_s32(r, r->off_bt);

	for (unsigned int i = 0; i < o->seqs; i++) {
		memcpy(pr + i * o->plen, o->prompt, o->plen * 4);
		pr[i * o->plen] = (int32_t)(((uint32_t)o->prompt[0] + i) %
					    r->info.n_vocab);
		for (unsigned int j = 0; j < r->bps; j++)
			bt[i * r->bps + j] = (int32_t)(j * o->seqs + i);
	}
}

/* The params DECODE and PREFILL share. */
/* A step of n rows: the params, the caches, the output rows. */
static void step_of(const struct run *r, uint32_t n, struct sj_step *st)
{
	*st = (struct sj_step){
		.p = {
			.model = r->info.model, .n = n,
			.block_size = r->o->block_size,
			.num_blocks = r->num_blocks, .max_blocks = r->bps,
			.kv_type = r->o->kv_type,
			.out = SYSHAX_STEP_OUT_TOPK, .topk = 1,
		},
		.k = { &r->kv, 0 }, .v = { &r->kv, r->kv_bytes },
		.kv_bytes = r->kv_bytes,
		.out = { &r->io, r->off_out }, .out_bytes = (uint64_t)n * ROW,
	};
}

/* Output row i's token id, checked against the vocabulary. */
static int out_id(const struct run *r, unsigned int i, int32_t *id)
{
	int32_t v;

	memcpy(&v, (uint8_t *)r->io.addr + r->off_out + (uint64_t)i * ROW,
	       sizeof(v));
	if ((uint32_t)v >= r->info.n_vocab) {
		fprintf(stderr, PROG ": the engine returned token %d, not "
			"below n_vocab %u\n", v, r->info.n_vocab);
		return -EIO;
	}
	*id = v;
	return 0;
}

/* A step job on the xPU. When its worker is gone, the step runs on the
 * CPU instead and so do the later ones (*side 'C'). */
static int xpu_run(struct run *r, struct syshax_job *job,
		   const struct syshax_buffer *const *bufs, char *side)
{
	struct syshax_completion c;
	int ret = xpu_step(r->xpu, r->be.sh, job, bufs);

	*side = 'X';
	if (ret != -EPIPE)
		return ret;
	xpu_drop(&r->xpu);
	*side = 'C';
	job->flags = 0;
	return be_job(r->be.sh, job, &c);
}

/* The xPU's load to syshaxd; a gone worker is dropped. */
static int report(struct run *r, unsigned int ran)
{
	int ret = xpu_report(r->xpu, r->be.sh, ran);

	if (ret == -EPIPE) {
		xpu_drop(&r->xpu);
		ret = 0;
	}
	return ret;
}

/* The prefill of each sequence: on the xPU when there is one; *side as
 * the last one's ran. */
static int prefill(struct run *r, int32_t *tokens, char *side)
{
	const struct syshax_buffer *bufs[] = { &r->io, &r->io, &r->kv, &r->kv,
					       &r->io };
	const struct run_opts *o = r->o;
	struct syshax_completion c;
	struct syshax_job job;
	struct sj_step st;
	int ret = 0;

	*side = 'C';
	step_of(r, o->plen, &st);
	st.out_bytes = ROW;
	for (unsigned int i = 0; !ret && i < o->seqs; i++) {
		st.tok = (struct sj_ref){ &r->io, r->off_prompt +
					  (uint64_t)i * o->plen * 4 };
		st.bt = (struct sj_ref){ &r->io, r->off_bt +
					 (uint64_t)i * r->bps * 4 };
		st.out.off = r->off_out + (uint64_t)i * ROW;
		sj_step(&job, SYSHAX_OP_PREFILL, i, &st);
		if (r->xpu)
			ret = xpu_run(r, &job, bufs, side);
		else
			ret = be_job(r->be.sh, &job, &c);
		if (ret)
			fprintf(stderr, PROG ": PREFILL of sequence %u: %s\n", i,
				syshax_strerror(ret));
		else
			ret = out_id(r, i, &tokens[(uint64_t)i * o->n]);
	}
	return ret;
}

/* DECODE step s of every sequence; *side 'C' (syshaxd ran it) or 'X'
 * (deferred: the xPU ran it on the same buffers). */
static int decode_step(struct run *r, unsigned int s, int32_t *tokens,
		       char *side)
{
	const struct run_opts *o = r->o;
	const struct syshax_buffer *bufs[] = { &r->io, &r->io, &r->io, &r->kv,
					       &r->kv, &r->io };
	int32_t *tok = io_s32(r, r->off_tok), *pos = io_s32(r, r->off_pos);
	struct syshax_completion c;
	struct syshax_job job;
	struct sj_step st;
	int ret;

	for (unsigned int i = 0; i < o->seqs; i++) {
		tok[i] = tokens[(uint64_t)i * o->n + s];
		pos[i] = (int32_t)(o->plen + s);
	}
	step_of(r, o->seqs, &st);
	st.tok = (struct sj_ref){ &r->io, r->off_tok };
	st.pos = (struct sj_ref){ &r->io, r->off_pos };
	st.bt = (struct sj_ref){ &r->io, r->off_bt };
	sj_step(&job, SYSHAX_OP_DECODE, s, &st);
	if (r->xpu)
		job.flags = SYSHAX_JOB_MAY_DEFER;
	ret = be_job(r->be.sh, &job, &c);
	*side = 'C';
	if (!ret && (c.flags & SYSHAX_CPL_DEFERRED))
		ret = xpu_run(r, &job, bufs, side);
	if (!ret && r->xpu)
		ret = report(r, *side == 'X' ? o->seqs : 0);
	if (ret) {
		fprintf(stderr, PROG ": DECODE step %u (%s): %s\n", s,
			*side == 'X' ? "xPU" : "syshaxd",
			syshax_strerror(ret));
		return ret;
	}
	for (unsigned int i = 0; !ret && i < o->seqs; i++)
		ret = out_id(r, i, &tokens[(uint64_t)i * o->n + s + 1]);
	return ret;
}

int run_generate(struct run *r, struct run_result *res)
{
	const struct run_opts *o = r->o;
	double t0;
	int ret;

	memset(res, 0, sizeof(*res));
	res->tokens = calloc((size_t)o->seqs * o->n, sizeof(*res->tokens));
	res->sides = calloc(o->n, 1);
	if (!res->tokens || !res->sides) {
		fprintf(stderr, PROG ": out of memory\n");
		return -ENOMEM;
	}
	fill_io(r);
	t0 = now_s();
	ret = prefill(r, res->tokens, &res->prefill_side);
	res->prefill_s = now_s() - t0;
	if (!ret && o->on_step)
		o->on_step(o->step_arg, res->tokens, 0);
	/* An idle xPU announces itself before the first step. */
	if (!ret && r->xpu)
		ret = report(r, 0);
	t0 = now_s();
	for (unsigned int s = 0; !ret && s + 1 < o->n; s++) {
		ret = decode_step(r, s, res->tokens, &res->sides[s]);
		if (!ret && o->on_step)
			o->on_step(o->step_arg, res->tokens, s + 1);
		res->steps++;
		if (res->sides[s] == 'X')
			res->steps_xpu++;
		else
			res->steps_cpu++;
	}
	res->decode_s = now_s() - t0;
	return ret;
}

void run_close(struct run *r)
{
	if (r->xpu)
		xpu_close(r->xpu);
	if (r->info.model)
		be_model_free(&r->be, r->info.model);
	if (r->kv.addr)
		syshax_buf_free(r->be.sh, &r->kv);
	if (r->io.addr)
		syshax_buf_free(r->be.sh, &r->io);
	be_close(&r->be);
}
