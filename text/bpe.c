// SPDX-License-Identifier: MIT
/*
 * Byte-level BPE (tokenizer.ggml.model "gpt2") as llama.cpp's
 * llm_tokenizer_bpe_session: the pre-tokenizer's regexes split the text
 * into words (each regex splits the pieces the one before left; text
 * between matches is a piece too), each word's bytes become GPT-2's
 * printable characters, and the adjacent pair of lowest merge rank (the
 * leftmost of equals) merges until none is left.
 *
 * The regexes are llama.cpp's, run by PCRE2 in UTF mode; \s is written
 * out as llama.cpp's whitespace set (it counts U+0085, PCRE2's \s does
 * not), so the classes are the ones its own matchers use.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "tok_int.h"
#include "utf8.h"

#define WS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}" \
	   "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define CONTRACT "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS \
		"\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])"
/* ...|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+ ; qwen2's takes one digit at a time */
#define RE_LLAMA3(digits) CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" \
		digits "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|[" WS \
		"]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"

struct pre_def {
	const char *names;	/* NUL-separated, ends with an empty one */
	const char *re[SHX_PRE_MAX];
	bool ignore_merges, add_bos;
};

static const struct pre_def g_pre[] = {
	{ "default\0", { "[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+",
			 "[0-9][0-9][0-9]" }, false, false },
	{ "gpt-2\0phi-2\0jina-es\0jina-de\0gigachat\0a.x-4.0\0mellum\0"
	  "exaone4\0mpt\0olmo\0jais\0trillion\0granite-docling\0",
	  { RE_GPT2 }, false, false },
	{ "llama3\0llama-v3\0llama-bpe\0falcon3\0falcon-h1\0pixtral\0"
	  "midm-2.0\0lfm2\0jina-v5-nano\0",
	  { RE_LLAMA3("{1,3}") }, true, true },
	{ "dbrx\0smaug-bpe\0", { RE_LLAMA3("{1,3}") }, false, false },
	{ "qwen2\0deepseek-r1-qwen\0kormo\0f2llmv2\0megrez\0stablelm2\0"
	  "hunyuan\0", { RE_LLAMA3("") }, false, false },
};

static const struct pre_def *pre_find(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(g_pre) / sizeof(g_pre[0]); i++)
		for (const char *p = g_pre[i].names; *p; p += strlen(p) + 1)
			if (strlen(p) == n && !memcmp(p, s, n))
				return &g_pre[i];
	return NULL;
}

int shx_pre_init(struct shx_tok *tok, const char *name, size_t len,
		 char *err, size_t errlen)
{
	const struct pre_def *d = pre_find(name, len);

	if (!d) {
		snprintf(err, errlen,
			 "tokenizer.ggml.pre '%.*s' is not known (default, gpt-2, llama-bpe, qwen2 and their aliases are)",
			 (int)(len > 64 ? 64 : len), name);
		return -EOPNOTSUPP;
	}
	tok->ignore_merges = d->ignore_merges;
	tok->add_bos = d->add_bos;
	for (unsigned int i = 0; i < SHX_PRE_MAX && d->re[i]; i++) {
		PCRE2_SIZE off;
		int code;
		pcre2_code *re = pcre2_compile((PCRE2_SPTR)d->re[i],
					       PCRE2_ZERO_TERMINATED, PCRE2_UTF,
					       &code, &off, NULL);

		if (!re) {
			PCRE2_UCHAR msg[128];

			pcre2_get_error_message(code, msg, sizeof(msg));
			snprintf(err, errlen, "pre-tokenizer regex %u: %s at %zu",
				 i, (char *)msg, (size_t)off);
			return code == PCRE2_ERROR_NOMEMORY ? -ENOMEM : -EINVAL;
		}
		/* JIT where the CPU has it; the interpreter otherwise */
		pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
		tok->pre[tok->n_pre++] = re;
	}
	return 0;
}

void shx_pre_free(struct shx_tok *tok)
{
	for (unsigned int i = 0; i < tok->n_pre; i++)
		pcre2_code_free(tok->pre[i]);
	tok->n_pre = 0;
}

/* GPT-2's bytes_to_unicode: printable bytes stand for themselves, the
 * others for U+0100 on in byte order. */
static uint32_t byte_cp(uint8_t b)
{
	unsigned int n = 0;

	if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
		return b;
	for (unsigned int c = 0; c < b; c++)
		if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) ||
		      c >= 0xAE))
			n++;
	return 0x100 + n;
}

struct byte_map {
	char s[256][2];
	uint8_t n[256];
	int16_t rev[0x144];	/* code point -> byte, -1 */
};

static struct byte_map g_map;
static pthread_once_t g_map_once = PTHREAD_ONCE_INIT;

static void map_init(void)
{
	memset(g_map.rev, 0xff, sizeof(g_map.rev));
	for (unsigned int b = 0; b < 256; b++) {
		uint32_t cp = byte_cp((uint8_t)b);
		char tmp[4];

		g_map.n[b] = (uint8_t)shx_utf8_put(cp, tmp);
		memcpy(g_map.s[b], tmp, g_map.n[b]);
		g_map.rev[cp] = (int16_t)b;
	}
}

size_t shx_bpe_decode_size(size_t n)
{
	/* the worst: every byte its own unknown character with the marker */
	return n * (sizeof("[UNK_BYTE_0x") + 8 + n + 1);
}

size_t shx_bpe_decode_text(const char *s, size_t n, char *out)
{
	size_t i = 0, o = 0, adv;

	pthread_once(&g_map_once, map_init);
	while (i < n) {
		uint32_t cp = shx_utf8_next(s + i, n - i, &adv);
		char u[4];
		size_t k;

		i += adv;
		if (cp < 0x144 && g_map.rev[cp] >= 0) {
			out[o++] = (char)g_map.rev[cp];
			continue;
		}
		/* llama_decode_text's marker: the character's bytes, then
		 * the whole token text */
		k = shx_utf8_put(cp, u);
		o += (size_t)sprintf(out + o, "[UNK_BYTE_0x");
		for (size_t j = 0; j < k; j++)
			o += (size_t)sprintf(out + o, "%02x", (uint8_t)u[j]);
		memcpy(out + o, s, n);
		o += n;
		out[o++] = ']';
	}
	return o;
}

struct span {
	uint32_t off, len;
};

struct sym {
	int32_t prev, next;
	uint32_t off, n;
};

struct bigram {
	int32_t rank, left, right;
	uint32_t size;
};

/* What one fragment needs: its spans, and the merge state sized for its
 * longest word. */
struct bpe_work {
	char *clean, *word;
	struct span *a, *b;
	struct sym *sym;
	struct bigram *heap;
	size_t nheap;
	pcre2_match_data *md;
};

static bool before(const struct bigram *x, const struct bigram *y)
{
	return x->rank < y->rank || (x->rank == y->rank && x->left < y->left);
}

HEAP_DEFINE(bigram_heap, struct bigram, before)

static void add_bigram(const struct shx_tok *tok, struct bpe_work *w,
		       int32_t l, int32_t r)
{
	const struct sym *a, *b;
	struct bigram g;

	if (l < 0 || r < 0)
		return;
	a = &w->sym[l];
	b = &w->sym[r];
	g.rank = shx_bpe_rank(tok, w->word + a->off, a->n, w->word + b->off,
			      b->n);
	if (g.rank < 0)
		return;
	g.left = l;
	g.right = r;
	g.size = a->n + b->n;
	bigram_heap_push(w->heap, &w->nheap, g);
}

/* One pre-tokenized word of raw bytes. */
static void bpe_word(const struct shx_tok *tok, struct bpe_work *w,
		     const char *s, size_t n, struct tok_out *o)
{
	size_t len = 0;
	int32_t id;

	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)s[i];

		w->sym[i] = (struct sym){ (int32_t)i - 1,
					  i + 1 < n ? (int32_t)i + 1 : -1,
					  (uint32_t)len, g_map.n[c] };
		memcpy(w->word + len, g_map.s[c], g_map.n[c]);
		len += g_map.n[c];
	}
	if (tok->ignore_merges && (id = shx_tok_lookup(tok, w->word, len)) >= 0) {
		tok_emit(o, id);
		return;
	}
	w->nheap = 0;
	for (size_t i = 1; i < n; i++)
		add_bigram(tok, w, (int32_t)i - 1, (int32_t)i);
	while (w->nheap) {
		struct bigram g = bigram_heap_pop(w->heap, &w->nheap);
		struct sym *l = &w->sym[g.left], *r = &w->sym[g.right];

		/* stale: one side merged since (llama.cpp compares the text;
		 * both still there and adjacent, equal length is equal text) */
		if (!l->n || !r->n || l->n + r->n != g.size)
			continue;
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			w->sym[r->next].prev = g.left;
		add_bigram(tok, w, l->prev, g.left);
		add_bigram(tok, w, g.left, l->next);
	}
	for (int32_t i = 0; i >= 0; i = w->sym[i].next) {
		const struct sym *y = &w->sym[i];

		id = shx_tok_lookup(tok, w->word + y->off, y->n);
		if (id >= 0) {
			tok_emit(o, id);
			continue;
		}
		/* llama.cpp tries each byte of the text alone and drops
		 * those that are no token */
		for (uint32_t j = 0; j < y->n; j++) {
			id = shx_tok_lookup(tok, w->word + y->off + j, 1);
			if (id >= 0)
				tok_emit(o, id);
		}
	}
}

/* Splits each span of in by re into out: the matches and the text between
 * them. Returns the number of spans or a negative errno. */
static ssize_t split(const pcre2_code *re, struct bpe_work *w,
		     const struct span *in, size_t nin, struct span *out)
{
	size_t nout = 0;

	for (size_t i = 0; i < nin; i++) {
		PCRE2_SPTR subj = (PCRE2_SPTR)w->clean + in[i].off;
		PCRE2_SIZE len = in[i].len, pos = 0, last = 0, *ov;

		while (pos < len) {
			int rc = pcre2_match(re, subj, len, pos,
					     PCRE2_NO_UTF_CHECK, w->md, NULL);

			if (rc == PCRE2_ERROR_NOMATCH)
				break;
			if (rc < 0)
				return rc == PCRE2_ERROR_NOMEMORY ? -ENOMEM : -EIO;
			ov = pcre2_get_ovector_pointer(w->md);
			if (ov[1] == ov[0]) {	/* none of ours matches empty */
				pos = ov[0] + shx_utf8_len(subj[ov[0]]);
				continue;
			}
			if (ov[0] > last)
				out[nout++] = (struct span){
					in[i].off + (uint32_t)last,
					(uint32_t)(ov[0] - last) };
			out[nout++] = (struct span){ in[i].off + (uint32_t)ov[0],
						     (uint32_t)(ov[1] - ov[0]) };
			last = pos = ov[1];
		}
		if (last < len)
			out[nout++] = (struct span){ in[i].off + (uint32_t)last,
						     (uint32_t)(len - last) };
	}
	return (ssize_t)nout;
}

int shx_bpe_encode(const struct shx_tok *tok, const char *s, size_t n,
		   struct tok_out *o)
{
	struct bpe_work w = { 0 };
	size_t cn, nspan = 1, longest = 0;
	int e = -ENOMEM;

	pthread_once(&g_map_once, map_init);
	if (!n)
		return 0;
	if (n > UINT32_MAX / 4)
		return -E2BIG;
	w.clean = malloc(3 * n);
	if (!w.clean)
		return -ENOMEM;
	cn = shx_utf8_clean(s, n, w.clean);
	w.a = malloc(cn * sizeof(*w.a));
	w.b = malloc(cn * sizeof(*w.b));
	w.md = pcre2_match_data_create(1, NULL);
	if (!w.a || !w.b || !w.md)
		goto out;
	w.a[0] = (struct span){ 0, (uint32_t)cn };
	for (unsigned int i = 0; i < tok->n_pre; i++) {
		struct span *t;
		ssize_t r = split(tok->pre[i], &w, w.a, nspan, w.b);

		if (r < 0) {
			e = (int)r;
			goto out;
		}
		nspan = (size_t)r;
		t = w.a;
		w.a = w.b;
		w.b = t;
	}
	/* the merge state for the longest word, not the whole text */
	for (size_t i = 0; i < nspan; i++)
		longest = w.a[i].len > longest ? w.a[i].len : longest;
	w.word = malloc(2 * longest);
	w.sym = malloc(longest * sizeof(*w.sym));
	w.heap = malloc(3 * longest * sizeof(*w.heap));
	if (!w.word || !w.sym || !w.heap)
		goto out;
	for (size_t i = 0; i < nspan; i++)
		bpe_word(tok, &w, w.clean + w.a[i].off, w.a[i].len, o);
	e = 0;
out:
	pcre2_match_data_free(w.md);
	free(w.clean);
	free(w.word);
	free(w.a);
	free(w.b);
	free(w.sym);
	free(w.heap);
	return e;
}
