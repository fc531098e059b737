// SPDX-License-Identifier: MIT
/*
 * syshax-run: the first command a person runs. Token ids in, token ids
 * out, or text in, text out (-p: the model's own tokenizer, text.c, the
 * text streamed as it is generated): a GGUF model loaded into syshaxd
 * (MODEL_LOAD), each sequence's
 * prompt prefilled (PREFILL), then greedy decoding, one DECODE job per step
 * for all sequences at once (continuous batching). With --xpu-standin the
 * steps go to whichever side the daemon's dispatch rule picks (standin.c).
 * --gen-model writes a random-weight model to try it on.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "genmodel.h"
#include "run.h"
#include "xpu.h"

#define PROG		"syshax-run"
#define MAX_TOKENS	65536
#define MAX_SEQS	256

/* Element types by name, in the order of their numbers (the kernels'
 * and the UAPI's agree). */
static const struct {
	const char *name;
	enum shxk_type type;
} types[] = {
	{ "f32", SHXK_F32 }, { "f16", SHXK_F16 }, { "bf16", SHXK_BF16 },
	{ "q8_0", SHXK_Q8_0 }, { "q4_0", SHXK_Q4_0 },
};

static const char *const arch_names[] = {
	[SYSHAX_ARCH_LLAMA] = "llama", [SYSHAX_ARCH_QWEN2] = "qwen2",
	[SYSHAX_ARCH_QWEN3] = "qwen3", [SYSHAX_ARCH_QWEN3MOE] = "qwen3moe",
};

static const char *arch_name(uint32_t arch)
{
	return arch < sizeof(arch_names) / sizeof(arch_names[0]) &&
	       arch_names[arch] ? arch_names[arch] : "?";
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " -m MODEL.gguf {-t ID,ID,...|-p TEXT} [-n N] [--seqs N]\n"
"                  [--threads N]\n"
"                  [--kv-type f32|f16|bf16] [--block-size N]\n"
"                  [--xpu-standin|--xpu-worker SOCKET]\n"
"                  [--private] [--syshaxd PATH] [--json] [--quiet]\n"
"       " PROG " --gen-model OUT.gguf [--arch A] [--preset P] [--type T]\n"
"                  [--seed S] [--layers N]\n"
"Greedy decoding of token ids through syshaxd: a running one (the module or\n"
"the default socket, $SYSHAX_DEVICE first), else one started on a private\n"
"socket with the model's folder as model_dir, stopped at the end.\n"
"  -m, --model F      GGUF model; for a running daemon, a path under its\n"
"                     model_dir (relative to it, or absolute)\n"
"  -t, --tokens IDS   the prompt: comma-separated token ids < n_vocab\n"
"  -p, --prompt TEXT  the prompt as text, tokenized with the model's own\n"
"                     tokenizer (BOS as it asks, special tokens parsed);\n"
"                     the tokens come back as text, streamed with one\n"
"                     sequence (needs the model file here)\n"
"  -n N               tokens generated per sequence (default 16)\n"
"      --seqs N       sequences decoded together (default 1); sequence i's\n"
"                     prompt has (first + i) %% n_vocab as its first id\n"
"      --threads N    a private daemon's worker threads (default: its own)\n"
"      --kv-type T    KV cache type: f32, f16 or bf16 (default f16)\n"
"      --block-size N positions per KV block (default 16)\n"
"      --xpu-standin  a stand-in xPU in this process runs the prefills and\n"
"                     the steps the daemon defers, on the same KV buffers\n"
"      --xpu-worker S the xPU worker listening on socket S runs them\n"
"                     (python3 -m syshax.xpu; docs/dispatch.md); it and\n"
"                     this run use the same running syshaxd; when it is\n"
"                     gone, the rest runs on the CPU\n"
"      --private      start a private syshaxd even when one is running\n"
"      --syshaxd P    the daemon to start (default: beside this program)\n"
"      --json         one JSON object instead of lines\n"
"      --quiet        only the tokens (with -p: the text)\n"
"  --gen-model OUT    write a random-weight model and exit:\n"
"      --arch A       llama, qwen2, qwen3 or qwen3moe (default llama, or\n"
"                     the shape's own)\n"
"      --preset P     tiny, 1b or 7b (default tiny), or a real model's\n"
"                     shape: llama3-8b, llama3.2-1b (llama), qwen2.5-7b,\n"
"                     qwen2.5-0.5b, r1-qwen-32b (qwen2), qwen3-30b-a3b\n"
"                     (qwen3moe)\n"
"      --type T       matrices: f32, f16, bf16, q8_0 or q4_0 (default q4_0)\n"
"      --seed S       weights' seed (default 1)\n"
"      --layers N     layers instead of the preset's\n"
"  -h, --help         this text\n"
"Exit status: 0, 1 when a run fails, 2 for a usage error.\n");
}

static int bad(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, PROG ": bad %s '%s': %s\nTry '" PROG " --help'.\n",
		opt, val, want);
	return 2;
}

static bool parse_uint(const char *s, unsigned long lo, unsigned long hi,
		       unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		return false;
	*out = (unsigned int)v;
	return true;
}

static int parse_type(const char *s, bool kv, enum shxk_type *out)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (!strcmp(s, types[i].name) &&
		    (!kv || types[i].type <= SHXK_BF16)) {
			*out = types[i].type;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *type_name(enum shxk_type t)
{
	return types[t].name;
}

/* "1,2,3" into a malloc'ed array. */
static int parse_prompt(const char *s, struct run_opts *o)
{
	const char *p;
	unsigned int n = 1;

	for (p = s; *p; p++)
		n += *p == ',';
	if (n > MAX_TOKENS)
		return -E2BIG;
	o->prompt = calloc(n, sizeof(*o->prompt));
	if (!o->prompt)
		return -ENOMEM;
	for (p = s, o->plen = 0; o->plen < n; o->plen++) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v < 0 || v > INT32_MAX ||
		    (*end && *end != ','))
			return -EINVAL;
		o->prompt[o->plen] = (int32_t)v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

enum {
	OPT_SEQS = 256, OPT_THREADS, OPT_KV, OPT_BS, OPT_STANDIN, OPT_WORKER, OPT_PRIVATE,
	OPT_SYSHAXD, OPT_JSON, OPT_QUIET, OPT_GEN, OPT_ARCH, OPT_PRESET,
	OPT_TYPE, OPT_SEED, OPT_LAYERS,
};

/* The options of --gen-model. */
struct gen_opts {
	const char *out;
	struct gm_opts gm;
	bool given;		/* a generator option was given */
	bool arch_given;	/* --arch: else a shape's own arch */
};

static int parse_gen(int c, const char *arg, struct gen_opts *g)
{
	struct gm_hparams hp;
	unsigned int v;

	g->given = true;
	switch (c) {
	case OPT_GEN:
		g->out = arg;
		return 0;
	case OPT_ARCH:
		g->gm.arch = arg;
		g->arch_given = true;
		return gm_preset(arg, "tiny", &hp) ?
		       bad("--arch", arg, "llama, qwen2, qwen3 or qwen3moe") : 0;
	case OPT_PRESET:
		g->gm.preset = arg;
		return gm_preset("llama", arg, &hp) && !gm_shape_arch(arg) ?
		       bad("--preset", arg, "tiny, 1b, 7b or a shape "
			   "(see --help)") : 0;
	case OPT_TYPE:
		return parse_type(arg, false, &g->gm.type) ?
		       bad("--type", arg, "f32, f16, bf16, q8_0 or q4_0") : 0;
	case OPT_SEED: {
		char *end;

		errno = 0;
		g->gm.seed = strtoull(arg, &end, 10);
		return errno || end == arg || *end || *arg == '-' ?
		       bad("--seed", arg, "a whole number") : 0;
	}
	default:
		if (!parse_uint(arg, 1, 1024, &v))
			return bad("--layers", arg, "a whole number 1..1024");
		g->gm.n_layer = v;
		return 0;
	}
}

static int parse_run(int c, const char *arg, struct run_opts *o)
{
	enum shxk_type t;

	switch (c) {
	case 'm':
		o->model = arg;
		return 0;
	case 't':
		free(o->prompt);
		return parse_prompt(arg, o) ? bad("-t", arg,
			"comma-separated token ids, 0..2147483647") : 0;
	case 'p':
		o->text = arg;
		return 0;
	case 'n':
		return parse_uint(arg, 1, MAX_TOKENS, &o->n) ? 0 :
		       bad("-n", arg, "a whole number 1..65536");
	case OPT_SEQS:
		return parse_uint(arg, 1, MAX_SEQS, &o->seqs) ? 0 :
		       bad("--seqs", arg, "a whole number 1..256");
	case OPT_THREADS:
		return parse_uint(arg, 1, 4096, &o->threads) ? 0 :
		       bad("--threads", arg, "a whole number 1..4096");
	case OPT_BS:
		return parse_uint(arg, 1, 4096, &o->block_size) ? 0 :
		       bad("--block-size", arg, "a whole number 1..4096");
	case OPT_KV:
		if (parse_type(arg, true, &t))
			return bad("--kv-type", arg, "f32, f16 or bf16");
		o->kv_type = t;
		return 0;
	case OPT_SYSHAXD:
		o->syshaxd = arg;
		return 0;
	case OPT_WORKER:
		o->worker = arg;
		return 0;
	}
	o->standin |= c == OPT_STANDIN;
	o->private |= c == OPT_PRIVATE;
	o->json |= c == OPT_JSON;
	o->quiet |= c == OPT_QUIET;
	return 0;
}

static int parse(int argc, char **argv, struct run_opts *o,
		 struct gen_opts *g)
{
	static const struct option opts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "tokens", required_argument, NULL, 't' },
		{ "prompt", required_argument, NULL, 'p' },
		{ "seqs", required_argument, NULL, OPT_SEQS },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "kv-type", required_argument, NULL, OPT_KV },
		{ "block-size", required_argument, NULL, OPT_BS },
		{ "xpu-standin", no_argument, NULL, OPT_STANDIN },
		{ "xpu-worker", required_argument, NULL, OPT_WORKER },
		{ "private", no_argument, NULL, OPT_PRIVATE },
		{ "syshaxd", required_argument, NULL, OPT_SYSHAXD },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "gen-model", required_argument, NULL, OPT_GEN },
		{ "arch", required_argument, NULL, OPT_ARCH },
		{ "preset", required_argument, NULL, OPT_PRESET },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "layers", required_argument, NULL, OPT_LAYERS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool run_given = false;
	int c, ret;

	while ((c = getopt_long(argc, argv, "m:t:p:n:h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == '?') {
			usage(stderr);
			return 2;
		}
		if (c >= OPT_GEN) {
			ret = parse_gen(c, optarg, g);
		} else {
			run_given = true;
			ret = parse_run(c, optarg, o);
		}
		if (ret)
			return ret;
	}
	if (optind < argc)
		return bad("argument", argv[optind], "none expected");
	if (g->given && (!g->out || run_given)) {
		fprintf(stderr, PROG ": --arch, --preset, --type, --seed and "
			"--layers go with --gen-model only\n");
		return 2;
	}
	if (g->out) {
		const char *own = gm_shape_arch(g->gm.preset);
		struct gm_hparams hp;

		if (own && !g->arch_given)
			g->gm.arch = own;
		/* tiny, 1b and 7b exist in every arch: only a real model's
		 * shape under another arch gets here. */
		if (gm_preset(g->gm.arch, g->gm.preset, &hp)) {
			fprintf(stderr, PROG ": --preset %s is a %s shape, "
				"not %s\n", g->gm.preset, own, g->gm.arch);
			return 2;
		}
	}
	if (o->standin && o->worker) {
		fprintf(stderr, PROG ": --xpu-standin or --xpu-worker, not both\n");
		return 2;
	}
	if (!g->given && (!o->model || !o->prompt == !o->text)) {
		fprintf(stderr, PROG ": -m MODEL and one of -t TOKENS and -p TEXT are needed\n"
			"Try '" PROG " --help'.\n");
		return 2;
	}
	return 0;
}

static int gen_model(struct gen_opts *g)
{
	char err[256];
	int ret;

	fprintf(stderr, PROG ": writing %s: %s %s %s, %.1f MiB\n", g->out,
		g->gm.arch, g->gm.preset, type_name(g->gm.type),
		gm_size(&g->gm) / 1048576.0);
	/* The progress line rewrites itself: a terminal only. */
	ret = gm_write(g->out, &g->gm, isatty(STDERR_FILENO), err,
		       sizeof(err));
	if (ret) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	return 0;
}

/* s as a JSON string's contents (it is valid UTF-8: shx_detok's). */
static void json_str(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
}

/* Each sequence's text, for -p; NULL: out of memory. */
static char **texts(struct run_text *t, const struct run_opts *o,
		    const struct run_result *res)
{
	char **v = calloc(o->seqs, sizeof(*v));

	for (unsigned int i = 0; v && i < o->seqs; i++) {
		size_t len;

		/* the text continues the prompt: its first space stays */
		v[i] = shx_tok_decode(t->tok, res->tokens + (size_t)i * o->n,
				      o->n, SHX_DETOK_CONTINUE, &len);
		if (!v[i]) {
			while (i--)
				free(v[i]);
			free(v);
			v = NULL;
		}
	}
	return v;
}

static void texts_free(char **v, unsigned int n)
{
	for (unsigned int i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static void print_json(const struct run *r, const struct run_result *res,
		       struct run_text *t)
{
	const struct run_opts *o = r->o;
	char **v = t ? texts(t, o, res) : NULL;

	printf("{\"arch\": \"%s\", \"n_vocab\": %u, \"seqs\": %u, "
	       "\"prompt_tokens\": %u, \"n\": %u, \"tokens\": [",
	       arch_name(r->info.arch), r->info.n_vocab, o->seqs, o->plen,
	       o->n);
	for (unsigned int i = 0; i < o->seqs; i++) {
		printf("%s[", i ? ", " : "");
		for (unsigned int j = 0; j < o->n; j++)
			printf("%s%d", j ? ", " : "",
			       res->tokens[(size_t)i * o->n + j]);
		printf("]");
	}
	if (v) {	/* -p: the prompt's ids and the text generated */
		printf("], \"prompt\": [");
		for (unsigned int j = 0; j < o->plen; j++)
			printf("%s%d", j ? ", " : "", o->prompt[j]);
		printf("], \"text\": [");
		for (unsigned int i = 0; i < o->seqs; i++) {
			printf("%s\"", i ? ", " : "");
			json_str(v[i]);
			printf("\"");
		}
		texts_free(v, o->seqs);
	}
	printf("], \"prefill_tps\": %.1f, \"decode_tps\": %.1f, "
	       "\"steps_cpu\": %u, \"steps_xpu\": %u, \"sides\": \"%s\", "
	       "\"prefill_side\": \"%c\"}\n",
	       o->seqs * o->plen / res->prefill_s,
	       res->steps ? res->steps * o->seqs / res->decode_s : 0.0,
	       res->steps_cpu, res->steps_xpu, res->sides, res->prefill_side);
}

static void print_info(const struct run *r)
{
	const struct run_opts *o = r->o;
	const struct syshax_model_info *mi = &r->info;

	printf("model %s: %s, %u layers, hidden %u, %u/%u heads, vocab "
	       "%u, %.1f MiB; %s backend%s; KV %s, %u blocks of %u\n",
	       r->be.path, arch_name(mi->arch), mi->n_layer, mi->n_embd,
	       mi->n_head, mi->n_head_kv, mi->n_vocab,
	       mi->weight_bytes / 1048576.0,
	       syshax_backend(r->be.sh) == SYSHAX_BACKEND_KERNEL ?
	       "kernel" : "userspace", r->be.d.pid > 0 ?
	       " (private syshaxd)" : "", type_name(o->kv_type),
	       r->num_blocks, o->block_size);
}

/* The tokens (-t) or, for -p, the text of the sequences not streamed. */
static void print_seqs(const struct run *r, const struct run_result *res,
		       struct run_text *t)
{
	const struct run_opts *o = r->o;
	char **v;

	if (!t) {
		for (unsigned int i = 0; i < o->seqs; i++) {
			printf("seq %u:", i);
			for (unsigned int j = 0; j < o->n; j++)
				printf(" %d", res->tokens[(size_t)i * o->n + j]);
			printf("\n");
		}
		return;
	}
	if (t->stream) {	/* the rest of the last character, a newline */
		char end[8];
		ssize_t n = shx_detok_flush(&t->d, end, sizeof(end));

		printf("%.*s\n", (int)(n > 0 ? n : 0), end);
		return;
	}
	v = texts(t, o, res);
	for (unsigned int i = 0; v && i < o->seqs; i++)
		printf("seq %u: %s\n", i, v[i]);
	texts_free(v, o->seqs);
}

static void print_stats(const struct run *r, const struct run_result *res)
{
	const struct run_opts *o = r->o;

	printf("prefill: %u x %u tokens in %.1f ms, %.1f tokens/s\n",
	       o->seqs, o->plen, res->prefill_s * 1e3,
	       o->seqs * o->plen / res->prefill_s);
	printf("decode: %u x %u tokens in %.1f ms, %.1f tokens/s\n", o->seqs,
	       res->steps, res->decode_s * 1e3,
	       res->steps ? res->steps * o->seqs / res->decode_s : 0.0);
	printf("steps: cpu %u, xpu %u (C=cpu X=xpu: %s)\n", res->steps_cpu,
	       res->steps_xpu, res->sides);
	if (r->xpu)
		printf("xpu %s: ran %u steps on the KV buffer syshaxd "
		       "uses (id %llu), nothing copied\n",
		       xpu_kind(r->xpu), res->steps_xpu,
		       (unsigned long long)r->kv.id);
}

/* A run: 0, or 1 when it failed (each step says why). With -p (t) the
 * model line comes first and one sequence's text streams as it comes. */
static int run_main(const struct run_opts *o, struct run_text *t)
{
	struct run_result res = { 0 };
	struct run r;
	int ret = run_open(&r, o);

	if (!ret)
		ret = run_load(&r);
	if (!ret && t && !o->json) {
		if (!o->quiet)
			print_info(&r);
		if (t->stream)
			fputs(o->text, stdout);
		fflush(stdout);
	}
	if (!ret)
		ret = run_generate(&r, &res);
	if (t && t->stream && !o->json && (ret || !o->quiet))
		fflush(stdout);
	if (!ret && o->json) {
		print_json(&r, &res, t);
	} else if (!ret) {
		if (!o->quiet && !t)
			print_info(&r);
		print_seqs(&r, &res, t);
		if (!o->quiet)
			print_stats(&r, &res);
	}
	run_close(&r);
	free(res.tokens);
	free(res.sides);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct run_opts o = {
		.n = 16, .seqs = 1, .block_size = 16, .kv_type = SYSHAX_DT_F16,
	};
	struct gen_opts g = {
		.gm = { .arch = "llama", .preset = "tiny", .type = SHXK_Q4_0,
			.seed = 1 },
	};
	struct run_text t = { 0 };
	int ret = parse(argc, argv, &o, &g);

	if (!ret && !g.given && o.text) {
		if (text_open(&t, o.model) || text_prompt(&t, o.text, &o))
			ret = 1;	/* a run that failed: each said why */
		t.stream = o.seqs == 1 && !o.json;
		o.on_step = text_step;
		o.step_arg = &t;
	}
	if (!ret)
		ret = g.given ? gen_model(&g) : run_main(&o, o.text ? &t : NULL);
	text_close(&t);
	free(o.prompt);
	return ret;
}
