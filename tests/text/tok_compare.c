// SPDX-License-Identifier: MIT
/*
 * The tokenizer (text/tokenizer.h) against llama.cpp's on real
 * vocabularies: each one tools/fetch-vocab.sh fetched is written as a
 * vocab-only GGUF (vocab_src.h) that both sides load. Checked on every
 * vocabulary:
 *   - encode: the ids of ~600 kB of text in ~1500 documents (this tree's
 *     docs and C sources; generated text of many scripts, CJK, emoji with
 *     ZWJ and skin tones, combining marks, whitespace runs of every kind,
 *     digit runs, contractions, special-token text, invalid UTF-8, 16 kB
 *     runs of one character class), each with one of the
 *     four add_special/parse_special combinations;
 *   - every token's piece, with and without special rendering, and the
 *     BOS/EOS/EOT ids and end-of-generation set;
 *   - decode(encode(x)) == x for every document;
 *   - streamed decode of random id runs (byte tokens that split or break
 *     UTF-8 among them): valid UTF-8 always, llama.cpp's bytes wherever
 *     those are valid;
 *   - speed: the whole corpus as one text, both sides, MB/s.
 * Zero differences is the bar.
 *
 *	tok_compare [VOCAB_DIR [LLAMA_DIR [OUT_DIR]]]
 * (defaults build/vocab, build/ggml, VOCAB_DIR; the GGUFs go to OUT_DIR)
 * Exit: 0 all equal, 1 not, 77 (SKIP) without the peer or any vocabulary.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <glob.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama_peer.h"
#include "tokenizer.h"
#include "utf8.h"
#include "vocab_src.h"

#define MAXIDS		(1 << 20)
#define NRAND		300	/* random id runs for the streamed decode */

struct buf {
	char *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			perror("realloc");
			exit(1);
		}
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void put_cp(struct buf *b, uint32_t cp)
{
	char u[4];

	put(b, u, shx_utf8_put(cp, u));
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(uint32_t n)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng % n);
}

/* Code point ranges of Unicode 12 and older (what PCRE2 and llama.cpp's
 * tables agree on). */
static const uint32_t g_scripts[][2] = {
	{ 0xC0, 0xD6 }, { 0xD8, 0xF6 }, { 0x391, 0x3A9 }, { 0x3B1, 0x3C9 },
	{ 0x410, 0x44F }, { 0x5D0, 0x5EA }, { 0x627, 0x64A }, { 0x905, 0x939 },
	{ 0xE01, 0xE2E }, { 0x3041, 0x3096 }, { 0x30A1, 0x30FA },
	{ 0x4E00, 0x9FA5 }, { 0xAC00, 0xD7A3 }, { 0xFF10, 0xFF19 },
	{ 0x2160, 0x2188 }, { 0xB2, 0xB3 }, { 0xBC, 0xBE }, { 0x2200, 0x22FF },
	{ 0x20A0, 0x20BF }, { 0x1F600, 0x1F64F }, { 0x1F300, 0x1F5FF },
	{ 0x2190, 0x21FF }, { 0x3001, 0x3003 }, { 0xFF01, 0xFF0F },
};

static const char *const g_words[] = {
	"the", "The", "don't", "I'LL", "we've", "it's", "they'RE", "she'd",
	"x'm", "hello", "world", "tokenizer", "llama.cpp", "Qwen3", "GGUF",
	"_snake_case", "camelCase", "int32_t", "0x1F", "e.g.", "U.S.A.",
	"naïve", "café", "Zürich", "—", "...", "?!", "''", "\"quoted\"",
	"(paren)", "[1]", "{a:b}", "a+b=c", "#include", "->", "::", "&&",
};

static const char *const g_special[] = {
	"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
	"<tool_call>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>",
	"<s>", "</s>", "<unk>", "<|fim_prefix|>", "<|im_", "|>", "<|",
	"<|reserved_special_token_7|>",
};

/* Invalid UTF-8 that llama.cpp reads as U+FFFD per byte (stray and
 * truncated sequences, bad leads) or decodes leniently (overlong C0 80). */
static const char *const g_bad[] = {
	"\x80", "\xbf", "\xc3", "\xe2\x82", "\xf0\x9f\x98", "\xff", "\xfe",
	"\xf8\x88", "\xc0\x80", "\xe2\x28\xa1",
};

static const char *const g_space[] = {
	" ", "  ", "   ", "        ", "\t", "\t\t", "\n", "\n\n", "\r\n",
	" \n", "\n ", "\xc2\xa0", "\xe3\x80\x80", "\xe2\x80\x83",
	"\xc2\x85", "\xe2\x80\xa8", " \t \n", "\x0b", "\x0c",
};

/* One generated document. */
static void gen_doc(struct buf *b, size_t want)
{
	size_t start = b->n;

	while (b->n - start < want) {
		uint32_t k = rnd(100), n;

		if (k < 25) {
			const char *w = g_words[rnd(sizeof(g_words) /
						    sizeof(g_words[0]))];
			put(b, w, strlen(w));
		} else if (k < 45) {
			const uint32_t *r = g_scripts[rnd(sizeof(g_scripts) /
							  sizeof(g_scripts[0]))];
			for (n = 1 + rnd(8); n; n--)
				put_cp(b, r[0] + rnd(r[1] - r[0] + 1));
		} else if (k < 52) {	/* combining marks */
			put_cp(b, "aeoAOnc"[rnd(7)]);
			for (n = 1 + rnd(3); n; n--)
				put_cp(b, 0x300 + rnd(0x70));
		} else if (k < 58) {	/* emoji: ZWJ, skin tone, VS16, flags */
			put_cp(b, 0x1F466 + rnd(4));
			if (rnd(2))
				put_cp(b, 0x1F3FB + rnd(5));
			if (rnd(2)) {
				put_cp(b, 0x200D);
				put_cp(b, 0x2764);
				put_cp(b, 0xFE0F);
			}
			if (rnd(3) == 0) {
				put_cp(b, 0x1F1E6 + rnd(26));
				put_cp(b, 0x1F1E6 + rnd(26));
			}
		} else if (k < 66) {	/* digit runs */
			for (n = 1 + rnd(12); n; n--)
				put_cp(b, '0' + rnd(10));
		} else if (k < 72) {
			const char *s = g_special[rnd(sizeof(g_special) /
						      sizeof(g_special[0]))];
			put(b, s, strlen(s));
		} else if (k < 78) {
			put_cp(b, "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"[rnd(32)]);
		} else if (k < 80) {
			const char *s = g_bad[rnd(sizeof(g_bad) /
						  sizeof(g_bad[0]))];
			put(b, s, strlen(s));
		} else {
			const char *s = g_space[rnd(sizeof(g_space) /
						    sizeof(g_space[0]))];
			put(b, s, strlen(s));
		}
	}
}

struct doc {
	size_t off, len;
	unsigned int flags;
};

struct corpus {
	struct buf text;
	struct doc *d;
	size_t n, cap, files;
};

static void add_doc(struct corpus *c, size_t off, size_t len)
{
	if (!len)
		return;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->d = realloc(c->d, c->cap * sizeof(*c->d));
		if (!c->d) {
			perror("realloc");
			exit(1);
		}
	}
	c->d[c->n++] = (struct doc){ off, len, rnd(4) };
}

/* This tree's docs and C sources, cut at random line counts. */
static void add_files(struct corpus *c, const char *pattern, size_t limit)
{
	glob_t g;
	size_t got = 0;

	if (glob(pattern, 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc && got < limit; i++) {
		FILE *f = fopen(g.gl_pathv[i], "rb");
		char line[4096];
		size_t start = c->text.n, lines = 0, cut = 1 + rnd(40);

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			put(&c->text, line, strlen(line));
			if (++lines == cut) {
				add_doc(c, start, c->text.n - start);
				start = c->text.n;
				lines = 0;
				cut = 1 + rnd(40);
			}
		}
		add_doc(c, start, c->text.n - start);
		got += c->text.n - start;
		c->files++;
		fclose(f);
	}
	globfree(&g);
}

/* Long runs of one class: the regexes' backtracking and the merges'
 * heap at their deepest; a lead byte before a space (SPM: three symbols
 * of two bytes). */
static void add_runs(struct corpus *c)
{
	static const char *const unit[] = { " ", "a", "7", "\n", "\xe4\xb8\x80",
					     " \t", "ab ", "\xdf " };

	for (size_t i = 0; i < sizeof(unit) / sizeof(unit[0]); i++) {
		size_t start = c->text.n;

		while (c->text.n - start < 16384)
			put(&c->text, unit[i], strlen(unit[i]));
		add_doc(c, start, c->text.n - start);
	}
}

static void make_corpus(struct corpus *c)
{
	add_runs(c);
	add_files(c, "README.md", 1 << 20);
	add_files(c, "docs/*.md", 300 << 10);
	add_files(c, "text/*.[ch]", 100 << 10);
	add_files(c, "tools/lib/*.c", 100 << 10);
	for (int i = 0; i < 600; i++) {
		size_t start = c->text.n;

		gen_doc(&c->text, 1 + rnd(i % 10 ? 300 : 2000));
		add_doc(c, start, c->text.n - start);
	}
}

static bool valid_utf8(const char *s, size_t n)
{
	static pcre2_code *re;
	pcre2_match_data *md;
	int code, rc;
	PCRE2_SIZE off;

	if (!re)
		re = pcre2_compile((PCRE2_SPTR) "", 0, PCRE2_UTF, &code, &off,
				   NULL);
	md = pcre2_match_data_create(1, NULL);
	rc = pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return rc >= 0;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void show(const char *what, const char *s, size_t n)
{
	fprintf(stderr, "    %s \"", what);
	for (size_t i = 0; i < n && i < 160; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x20 || ch == '"' || ch == '\\')
			fprintf(stderr, "\\x%02x", ch);
		else
			fputc(ch, stderr);
	}
	fprintf(stderr, "\"%s\n", n > 160 ? "..." : "");
}

static void show_ids(const char *who, const int32_t *ids, size_t n, size_t at)
{
	size_t from = at > 4 ? at - 4 : 0;

	fprintf(stderr, "    %s [%zu..]:", who, from);
	for (size_t i = from; i < n && i < from + 12; i++)
		fprintf(stderr, " %d", ids[i]);
	fprintf(stderr, "%s\n", from + 12 < n ? " ..." : "");
}

struct tally {
	size_t docs, diff_docs, ids, pieces, diff_pieces, eog_diff;
	size_t rt, rt_fail, rand_runs, rand_diff, rand_invalid;
};

static int32_t *g_a, *g_b;

/* Both sides on each document. */
static void cmp_encode(struct shx_tok *tok, struct llp *l,
		       const struct corpus *c, struct tally *t)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct doc *d = &c->d[i];
		const char *s = c->text.p + d->off;
		ssize_t na = shx_tok_encode(tok, s, d->len, d->flags, g_a,
					    MAXIDS);
		int32_t nb = llp_tokenize(l, s, (int32_t)d->len, g_b, MAXIDS,
					  d->flags & SHX_TOK_ADD_SPECIAL,
					  d->flags & SHX_TOK_PARSE_SPECIAL);
		size_t k = 0;

		t->docs++;
		t->ids += nb > 0 ? (size_t)nb : 0;
		while (na >= 0 && k < (size_t)na && (int32_t)k < nb &&
		       g_a[k] == g_b[k])
			k++;
		if (na == nb && (int32_t)k == nb)
			continue;
		if (t->diff_docs++ < 5) {
			fprintf(stderr, "  doc %zu (%zu bytes, flags %u): %zd ids, llama.cpp %d, first difference at %zu\n",
				i, d->len, d->flags, na, nb, k);
			show("text", s, d->len);
			if (na > 0)
				show_ids("ours", g_a, (size_t)na, k);
			if (nb > 0)
				show_ids("llama.cpp", g_b, (size_t)nb, k);
		}
	}
}

static void cmp_pieces(struct shx_tok *tok, struct llp *l, struct tally *t)
{
	static char a[1 << 16], b[1 << 16];
	int32_t n = shx_tok_n_vocab(tok);

	for (int32_t id = 0; id < n; id++) {
		for (int sp = 0; sp < 2; sp++) {
			ssize_t na = shx_tok_piece(tok, id,
						   sp ? SHX_TOK_RENDER_SPECIAL : 0,
						   a, sizeof(a));
			int32_t nb = llp_piece(l, id, b, sizeof(b), 0, sp);

			t->pieces++;
			if (na == nb && (nb <= 0 || !memcmp(a, b, (size_t)nb)))
				continue;
			if (t->diff_pieces++ < 5) {
				fprintf(stderr, "  piece %d (special %d): %zd bytes, llama.cpp %d\n",
					id, sp, na, nb);
				if (na > 0)
					show("ours", a, (size_t)na);
				if (nb > 0)
					show("llama.cpp", b, (size_t)nb);
			}
		}
		if (shx_tok_is_eog(tok, id) != !!llp_vocab_is_eog(l, id) &&
		    t->eog_diff++ < 5)
			fprintf(stderr, "  id %d: end of generation %d, llama.cpp %d\n",
				id, shx_tok_is_eog(tok, id),
				llp_vocab_is_eog(l, id));
	}
}

static size_t decode_all(struct shx_tok *tok, const int32_t *ids, size_t n,
			 unsigned int flags, struct buf *out)
{
	struct shx_detok d;
	char piece[1 << 16];
	ssize_t r;

	out->n = 0;
	shx_detok_init(&d, tok, flags);
	for (size_t i = 0; i < n; i++) {
		r = shx_detok_push(&d, ids[i], piece, sizeof(piece));
		if (r < 0)
			return (size_t)-1;
		put(out, piece, (size_t)r);
	}
	r = shx_detok_flush(&d, piece, sizeof(piece));
	if (r < 0)
		return (size_t)-1;
	put(out, piece, (size_t)r);
	return out->n;
}

/* The text decode(encode(x)) must give: x, where SPM's U+2581 is a space
 * (llama.cpp's too). */
static void expected(const char *s, size_t n, int spm, struct buf *b)
{
	b->n = 0;
	for (size_t i = 0; i < n; i++) {
		if (spm && i + 3 <= n && !memcmp(s + i, "\xe2\x96\x81", 3)) {
			put(b, " ", 1);
			i += 2;
		} else {
			put(b, s + i, 1);
		}
	}
}

static void round_trip(struct shx_tok *tok, const struct corpus *c, int spm,
		       struct tally *t)
{
	struct buf out = { 0 }, want = { 0 };

	for (size_t i = 0; i < c->n; i++) {
		const struct doc *d = &c->d[i];
		ssize_t n = shx_tok_encode(tok, c->text.p + d->off, d->len, 0,
					   g_a, MAXIDS);

		/* invalid UTF-8 comes back as U+FFFD: encode checks it */
		if (!valid_utf8(c->text.p + d->off, d->len))
			continue;
		t->rt++;
		expected(c->text.p + d->off, d->len, spm, &want);
		if (n >= 0 && decode_all(tok, g_a, (size_t)n, 0, &out) ==
			      want.n && !memcmp(out.p, want.p, want.n))
			continue;
		if (t->rt_fail++ < 3) {
			size_t k = 0;

			while (k < d->len && k < out.n &&
			       out.p[k] == c->text.p[d->off + k])
				k++;
			fprintf(stderr, "  round trip of doc %zu failed at byte %zu (%zu bytes back)\n",
				i, k, out.n);
			k = k > 20 ? k - 20 : 0;
			show("text at", c->text.p + d->off + k, d->len - k);
			show("back at", out.p + k, out.n - k);
			show("text", c->text.p + d->off, d->len);
			show("back", out.p ? out.p : "", out.n);
		}
	}
	free(out.p);
	free(want.p);
}

/* Random runs of ids, half of them from the first 512 (byte tokens). */
static void random_decode(struct shx_tok *tok, struct llp *l, struct tally *t)
{
	struct buf ours = { 0 }, ref = { 0 };
	int32_t nv = shx_tok_n_vocab(tok), ids[64];
	char piece[1 << 16];

	for (int r = 0; r < NRAND; r++) {
		size_t n = 1 + rnd(64);
		unsigned int sp = rnd(2) ? SHX_TOK_RENDER_SPECIAL : 0;

		ref.n = 0;
		for (size_t i = 0; i < n; i++) {
			int32_t k;

			ids[i] = (int32_t)rnd(rnd(2) ? 512 : (uint32_t)nv);
			k = llp_piece(l, ids[i], piece, sizeof(piece), 0, sp);
			if (k > 0)
				put(&ref, piece, (size_t)k);
		}
		t->rand_runs++;
		if (decode_all(tok, ids, n, sp | SHX_DETOK_CONTINUE, &ours) ==
		    (size_t)-1 || !valid_utf8(ours.p, ours.n)) {
			t->rand_invalid++;
			continue;
		}
		if (valid_utf8(ref.p ? ref.p : "", ref.n) &&
		    (ours.n != ref.n || memcmp(ours.p, ref.p, ref.n)) &&
		    t->rand_diff++ < 3) {
			show("ours", ours.p, ours.n);
			show("llama.cpp", ref.p, ref.n);
		}
	}
	free(ours.p);
	free(ref.p);
}

static void speed(struct shx_tok *tok, struct llp *l, const struct corpus *c)
{
	double ta = 1e9, tb = 1e9, t0;
	ssize_t na = 0;
	int32_t nb = 0;

	for (int r = 0; r < 3; r++) {
		t0 = now();
		na = shx_tok_encode(tok, c->text.p, c->text.n, 0, g_a, MAXIDS);
		t0 = now() - t0;
		ta = t0 < ta ? t0 : ta;
		t0 = now();
		nb = llp_tokenize(l, c->text.p, (int32_t)c->text.n, g_b, MAXIDS,
				  0, 0);
		t0 = now() - t0;
		tb = t0 < tb ? t0 : tb;
	}
	printf("  speed: %.2f MB in one text: ours %.1f MB/s (%zd ids), llama.cpp %.1f MB/s (%d ids), ratio %.2f\n",
	       c->text.n / 1e6, c->text.n / 1e6 / ta, na, c->text.n / 1e6 / tb,
	       nb, tb / ta);
}

static int run_one(const struct vocab_src *v, const char *vdir,
		   const char *ldir, const char *odir, const struct corpus *c,
		   int *ran)
{
	char src[4096], gguf[4096], err[512];
	struct shx_tok *tok = NULL;
	struct llp *l = NULL;
	struct tally t = { 0 };
	int e;

	snprintf(src, sizeof(src), "%s/%s", vdir, v->name);
	snprintf(gguf, sizeof(gguf), "%s/%s.gguf", odir, v->gguf);
	e = v->write(src, gguf, err, sizeof(err));
	if (e == -ENOENT) {
		printf("%s: SKIP: %s not fetched (tools/fetch-vocab.sh)\n",
		       v->what, src);
		return 0;
	}
	if (e) {
		printf("%s: FAIL: writing %s: %s\n", v->what, gguf, err);
		return 1;
	}
	e = shx_tok_open(gguf, &tok, err, sizeof(err));
	if (e) {
		printf("%s: FAIL: shx_tok_open: %s\n", v->what, err);
		return 1;
	}
	e = llp_open(&l, ldir, err, sizeof(err));
	if (!e)
		e = llp_load_vocab(l, gguf, err, sizeof(err));
	if (e) {
		printf("%s: FAIL: llama.cpp: %s\n", v->what, err);
		shx_tok_free(tok);
		llp_close(l);
		return 1;
	}
	(*ran)++;
	cmp_encode(tok, l, c, &t);
	cmp_pieces(tok, l, &t);
	round_trip(tok, c, v->spm, &t);
	random_decode(tok, l, &t);
	printf("%s: %d tokens; encode: %zu documents, %zu ids, %zu differ; pieces: %zu, %zu differ; end-of-generation ids differ: %zu; bos/eos/eot %d/%d/%d, llama.cpp %d/%d/%d; round trips failed: %zu of %zu (valid UTF-8); random decodes: %zu, %zu invalid UTF-8, %zu differ\n",
	       v->what, shx_tok_n_vocab(tok), t.docs, t.ids, t.diff_docs,
	       t.pieces, t.diff_pieces, t.eog_diff, shx_tok_bos(tok),
	       shx_tok_eos(tok), shx_tok_eot(tok), llp_vocab_bos(l),
	       llp_vocab_eos(l), llp_vocab_eot(l), t.rt_fail, t.rt,
	       t.rand_runs, t.rand_invalid, t.rand_diff);
	speed(tok, l, c);
	e = t.diff_docs || t.diff_pieces || t.eog_diff || t.rt_fail ||
	    t.rand_invalid || t.rand_diff ||
	    shx_tok_bos(tok) != llp_vocab_bos(l) ||
	    shx_tok_eos(tok) != llp_vocab_eos(l) ||
	    shx_tok_eot(tok) != llp_vocab_eot(l);
	shx_tok_free(tok);
	llp_close(l);
	return e;
}

int main(int argc, char **argv)
{
	const char *vdir = argc > 1 ? argv[1] : "build/vocab";
	const char *ldir = argc > 2 ? argv[2] : "build/ggml";
	const char *odir = argc > 3 ? argv[3] : vdir;
	struct corpus c = { 0 };
	char err[512];
	struct llp *l;
	int bad = 0, ran = 0;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: tok_compare [VOCAB_DIR [LLAMA_DIR [OUT_DIR]]]\n"
		       "The tokenizer against llama.cpp's on the vocabularies tools/fetch-vocab.sh\n"
		       "put in VOCAB_DIR (build/vocab), each written as OUT_DIR/<name>.gguf;\n"
		       "llama.cpp's libraries from LLAMA_DIR (build/ggml).\n"
		       "Exit: 0 no difference, 1 differences, 77 SKIP (no peer or vocabulary).\n");
		return 0;
	}
	if (llp_open(&l, ldir, err, sizeof(err))) {
		printf("SKIP: no llama.cpp peer: %s\n", err);
		return 77;
	}
	llp_close(l);
	g_a = malloc(MAXIDS * sizeof(*g_a));
	g_b = malloc(MAXIDS * sizeof(*g_b));
	if (!g_a || !g_b)
		return 1;
	make_corpus(&c);
	printf("corpus: %zu documents, %.0f kB (%zu files of this tree, the rest generated)\n",
	       c.n, c.text.n / 1e3, c.files);
	for (size_t i = 0; i < g_n_vocab_src; i++)
		bad |= run_one(&g_vocab_src[i], vdir, ldir, odir, &c, &ran);
	free(c.text.p);
	free(c.d);
	free(g_a);
	free(g_b);
	if (!ran && !bad) {
		printf("SKIP: no vocabulary in %s (tools/fetch-vocab.sh fetches them)\n",
		       vdir);
		return 77;
	}
	return bad;
}
