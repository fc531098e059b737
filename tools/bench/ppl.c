// SPDX-License-Identifier: MIT
/*
 * syshax-bench ppl: perplexity of a model over a text, through the
 * engine's PREFILL jobs (every row's logits, SYSHAX_STEP_ALL_ROWS) and
 * through llama.cpp's libllama on the same token ids, in one run.
 *
 * The text is tokenized once with the model's own tokenizer (libshxtext;
 * or --ids gives the ids) and cut into chunks of --ctx tokens, each run
 * alone from position 0 with its first token BOS where the vocabulary
 * adds one, and scored on its second half (tools/lib/ppl.h): the way
 * llama.cpp's perplexity tool does it. Ours: a private syshaxd on the
 * model's folder (tools/lib/backend.h), f16 KV in syshax buffers; theirs:
 * one context of --ctx, f16 KV.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bench.h"
#include "llama_peer.h"
#include "ppl.h"
#include "stepjob.h"
#include "tokenizer.h"

#define PROG	"syshax-bench ppl"
#define BLOCK	16	/* KV positions per block */

struct pp_conf {
	const char *model, *text, *ids, *llama;
	unsigned int ctx, chunks, threads;
};

struct pp_side {
	struct ppl p;
	double secs;
	int ran;
};

/* The text's ids (BOS as the vocabulary asks) or --ids', and the BOS
 * every chunk starts with (-1: none). */
static int32_t *tokens(const struct pp_conf *c, size_t *n, int32_t *bos)
{
	struct shx_tok *tok;
	char err[256], *buf = NULL;
	int32_t *ids = NULL, one[2];
	size_t len = 0;
	ssize_t r;
	FILE *f;

	if (shx_tok_open(c->model, &tok, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", c->model, err);
		return NULL;
	}
	/* The vocabulary adds BOS when an empty text encodes to it. */
	r = shx_tok_encode(tok, "", 0, SHX_TOK_ADD_SPECIAL, one, 2);
	*bos = r == 1 && one[0] == shx_tok_bos(tok) ? one[0] : -1;
	if (c->ids) {
		ids = ppl_read_ids(c->ids, shx_tok_n_vocab(tok) - 1, n);
		if (!ids)
			fprintf(stderr, PROG ": %s: %s\n", c->ids,
				strerror(errno));
		shx_tok_free(tok);
		return ids;
	}
	f = fopen(c->text, "r");
	if (!f || getdelim(&buf, &len, '\0', f) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", c->text,
			f ? "empty or unreadable" : strerror(errno));
	} else {
		len = strlen(buf);
		r = shx_tok_encode(tok, buf, len, SHX_TOK_ADD_SPECIAL, NULL, 0);
		ids = r > 0 ? malloc((size_t)r * sizeof(*ids)) : NULL;
		if (ids && shx_tok_encode(tok, buf, len, SHX_TOK_ADD_SPECIAL,
					  ids, (size_t)r) == r) {
			*n = (size_t)r;
		} else {
			fprintf(stderr, PROG ": %s: cannot tokenize\n", c->text);
			free(ids);
			ids = NULL;
		}
	}
	if (f)
		fclose(f);
	free(buf);
	shx_tok_free(tok);
	return ids;
}

/* Chunk i's tokens, its first BOS where the vocabulary has one. */
static void chunk(const struct pp_conf *c, const int32_t *ids, int32_t bos,
		  unsigned int i, int32_t *out)
{
	memcpy(out, ids + (size_t)i * c->ctx, c->ctx * sizeof(*out));
	if (bos >= 0)
		out[0] = bos;
}

static void free_buf(struct backend *be, struct syshax_buffer *b)
{
	if (b->addr)
		syshax_buf_free(be->sh, b);
}

static int ours(const struct pp_conf *c, const int32_t *ids, int32_t bos,
		unsigned int n_chunks, struct pp_side *s)
{
	struct be_opts bo = { .prog = PROG, .model = c->model,
			      .threads = c->threads, .private = true };
	struct syshax_buffer info_io = { 0 }, io = { 0 }, k = { 0 }, v = { 0 };
	unsigned int nb = (c->ctx + BLOCK - 1) / BLOCK;
	struct syshax_model_info mi;
	struct backend be = { 0 };
	uint64_t t0, out_bytes, kv_bytes, off_bt, off_out;
	int ret = be_open(&be, &bo);

	if (!ret)
		ret = be_buf(&be, 4096, &info_io, "info");
	if (!ret)
		ret = be_model_load(&be, &info_io, &mi);
	if (ret)
		goto out;
	off_bt = (uint64_t)c->ctx * 4;
	off_out = (off_bt + nb * 4 + 63) / 64 * 64;
	out_bytes = (uint64_t)c->ctx * mi.n_vocab * sizeof(float);
	kv_bytes = nb * sj_kv_block_bytes(&mi, BLOCK, SYSHAX_DT_F16);
	ret = be_buf(&be, off_out + out_bytes, &io, "io");
	if (!ret)
		ret = be_buf(&be, kv_bytes, &k, "K cache");
	if (!ret)
		ret = be_buf(&be, kv_bytes, &v, "V cache");
	for (unsigned int j = 0; !ret && j < nb; j++)
		((int32_t *)((uint8_t *)io.addr + off_bt))[j] = (int32_t)j;
	t0 = bench_now_ns();
	for (unsigned int i = 0; !ret && i < n_chunks; i++) {
		struct sj_step st = {
			.p = { .model = mi.model, .n = c->ctx,
			       .block_size = BLOCK, .num_blocks = nb,
			       .max_blocks = nb, .kv_type = SYSHAX_DT_F16,
			       .out = SYSHAX_STEP_OUT_LOGITS,
			       .flags = SYSHAX_STEP_ALL_ROWS },
			.tok = { &io, 0 }, .bt = { &io, off_bt },
			.k = { &k, 0 }, .v = { &v, 0 }, .kv_bytes = kv_bytes,
			.out = { &io, off_out }, .out_bytes = out_bytes,
		};
		struct syshax_completion cpl;
		struct syshax_job job;

		chunk(c, ids, bos, i, io.addr);
		ret = sj_step(&job, SYSHAX_OP_PREFILL, i, &st);
		if (!ret)
			ret = be_job(be.sh, &job, &cpl);
		if (ret)
			fprintf(stderr, PROG ": PREFILL of chunk %u: %s\n", i,
				syshax_strerror(ret));
		else
			ppl_chunk(&s->p, (const float *)((uint8_t *)io.addr +
							 off_out),
				  io.addr, c->ctx, mi.n_vocab);
	}
	s->secs = (double)(bench_now_ns() - t0) * 1e-9;
	s->ran = !ret;
	if (mi.model)
		be_model_free(&be, mi.model);
out:
	free_buf(&be, &v);
	free_buf(&be, &k);
	free_buf(&be, &io);
	free_buf(&be, &info_io);
	be_close(&be);
	return ret;
}

static int theirs(const struct pp_conf *c, const int32_t *ids, int32_t bos,
		  unsigned int n_chunks, struct pp_side *s)
{
	struct llp_ctx_opts o = { .n_ctx = c->ctx, .n_batch = c->ctx,
				  .n_seq_max = 1, .threads = c->threads };
	int32_t *tok = malloc(c->ctx * sizeof(*tok));
	int32_t *pos = malloc(c->ctx * sizeof(*pos));
	int32_t *seq = calloc(c->ctx, sizeof(*seq));
	uint8_t *want = malloc(c->ctx);
	float *rows = NULL;
	struct llp *l = NULL;
	char err[256];
	uint64_t t0;
	int ret = tok && pos && seq && want ? 0 : -ENOMEM, nv = 0;

	if (!ret)
		ret = llp_start(&l, c->llama, c->model, &o, err, sizeof(err));
	if (ret) {
		fprintf(stderr, PROG ": *** llama.cpp not measured: %s ***\n",
			ret == -ENOMEM ? strerror(ENOMEM) : err);
		goto out;
	}
	nv = llp_n_vocab(l);
	rows = malloc((size_t)c->ctx * (size_t)nv * sizeof(*rows));
	ret = rows ? 0 : -ENOMEM;
	for (unsigned int j = 0; j < c->ctx; j++) {
		pos[j] = (int32_t)j;
		want[j] = 1;
	}
	t0 = bench_now_ns();
	for (unsigned int i = 0; !ret && i < n_chunks; i++) {
		llp_clear(l);
		chunk(c, ids, bos, i, tok);
		ret = llp_decode(l, tok, pos, seq, want, c->ctx, err,
				 sizeof(err));
		for (unsigned int j = 0; !ret && j < c->ctx; j++) {
			const float *r = llp_logits(l, (int)j);

			if (!r)
				ret = -EIO;
			else
				memcpy(rows + (size_t)j * nv, r,
				       (size_t)nv * sizeof(*r));
		}
		if (ret)
			fprintf(stderr, PROG ": llama.cpp, chunk %u: %s\n", i,
				ret == -EIO ? "no logits" : err);
		else
			ppl_chunk(&s->p, rows, tok, c->ctx, (unsigned int)nv);
	}
	s->secs = (double)(bench_now_ns() - t0) * 1e-9;
	s->ran = !ret;
out:
	llp_close(l);
	free(rows);
	free(want);
	free(seq);
	free(pos);
	free(tok);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: syshax-bench ppl --model GGUF (--text FILE | --ids FILE) [--ctx N]\n"
"                        [--chunks N] [--threads N] [--llama DIR]\n"
"Perplexity of a model over a text as llama.cpp's perplexity tool computes\n"
"it (chunks of --ctx tokens from position 0, the second half of each\n"
"scored), through syshaxd's PREFILL jobs and through llama.cpp's libllama\n"
"on the same token ids, in one run.\n"
"  --model GGUF   the model, both sides\n"
"  --text FILE    the text, tokenized with the model's own tokenizer\n"
"  --ids FILE     or its token ids, decimal, white-space separated\n"
"  --ctx N        tokens per chunk, 16..4096 (default 128)\n"
"  --chunks N     at most N chunks (default: all the text gives)\n"
"  --threads N    both sides' threads (default: every CPU)\n"
"  --llama DIR    libllama's folder (default build/ggml)\n");
}

static int parse(int argc, char **argv, struct pp_conf *c)
{
	static const struct option opts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "text", required_argument, NULL, 'x' },
		{ "ids", required_argument, NULL, 'i' },
		{ "ctx", required_argument, NULL, 'c' },
		{ "chunks", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "llama", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'm': c->model = optarg; break;
		case 'x': c->text = optarg; break;
		case 'i': c->ids = optarg; break;
		case 'c': c->ctx = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'n': c->chunks = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 't': c->threads = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'l': c->llama = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!c->model || !c->text == !c->ids || optind < argc ||
	    c->ctx < 16 || c->ctx > 4096 || !c->threads || c->threads > 256) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* evaluated: the tokens run through the model (every chunk's). */
static void print_side(const char *who, const struct pp_side *s,
		       unsigned int evaluated)
{
	if (!s->ran) {
		printf("%-10s not measured\n", who);
		return;
	}
	printf("%-10s ppl %10.4f  %6zu tokens scored  %7.2f s  %8.1f tokens/s\n",
	       who, ppl_value(&s->p), s->p.n, s->secs, evaluated / s->secs);
}

int bench_ppl_main(int argc, char **argv)
{
	struct pp_conf c = { .llama = "build/ggml", .ctx = 128,
			     .threads = (unsigned int)bench_ncpus() };
	struct pp_side o = { 0 }, l = { 0 };
	unsigned int n_chunks;
	int32_t *ids, bos;
	size_t n = 0;
	int ret = parse(argc, argv, &c);

	if (ret >= 0)
		return ret;
	ids = tokens(&c, &n, &bos);
	if (!ids)
		return 1;
	n_chunks = (unsigned int)(n / c.ctx);
	if (c.chunks && c.chunks < n_chunks)
		n_chunks = c.chunks;
	if (!n_chunks) {
		fprintf(stderr, PROG ": %zu tokens: not one chunk of %u\n", n,
			c.ctx);
		free(ids);
		return 1;
	}
	printf("syshax-bench ppl: %s, %zu tokens, %u chunks of %u, %u threads "
	       "both sides\ncpu: %s\n", c.model, n, n_chunks, c.ctx, c.threads,
	       bench_cpu());
	ret = ours(&c, ids, bos, n_chunks, &o);
	theirs(&c, ids, bos, n_chunks, &l);
	print_side("ours", &o, n_chunks * c.ctx);
	print_side("llama.cpp", &l, n_chunks * c.ctx);
	if (o.ran && l.ran)
		printf("difference %.4f %% (ours / llama.cpp - 1)\n",
		       (ppl_value(&o.p) / ppl_value(&l.p) - 1) * 100);
	free(ids);
	return ret ? 1 : 0;
}
