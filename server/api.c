// SPDX-License-Identifier: MIT
/* The OpenAI API's JSON (api.h). */
#include "api.h"

#include "chat.h"
#include "tokenizer.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEF_MAX_TOKENS	16	/* OpenAI's default for completions */

struct api_err *api_err_set(struct api_err *e, int status, const char *type,
			    const char *param, const char *fmt, ...)
{
	va_list ap;

	e->status = status;
	e->type = type;
	snprintf(e->param, sizeof(e->param), "%s", param ? param : "");
	e->code = NULL;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return e;
}

static int bad(struct api_err *e, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(struct api_err *e, const char *param, const char *fmt, ...)
{
	va_list ap;

	api_err_set(e, 400, "invalid_request_error", param, "%s", "");
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A whole number in [lo, hi] (JSON has only doubles). */
static bool whole(const cJSON *v, double lo, double hi, double *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return false;
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < lo || d > hi)
		return false;
	*out = d;
	return true;
}

static int oom(struct api_err *e)
{
	api_err_set(e, 500, "server_error", NULL, "out of memory");
	return -ENOMEM;
}

static int too_long(struct api_err *e, const char *param, size_t n,
		    const struct api_ctx *lim)
{
	return bad(e, param, "the prompt has %zu tokens; this server's "
		   "context is %u tokens (max_context), prompt and max_tokens "
		   "together", n, lim->max_ctx);
}

/* text into q->ids with the model's tokenizer: BOS as the vocabulary asks,
 * control tokens written in the text as their ids (llama-server's). */
static int encode(const char *text, size_t len, const char *param,
		  const struct api_ctx *lim, struct api_req *q,
		  struct api_err *e)
{
	const unsigned int fl = SHX_TOK_ADD_SPECIAL | SHX_TOK_PARSE_SPECIAL;
	ssize_t n;

	if (!lim->tok)
		return bad(e, param, "text needs the model's tokenizer, which "
			   "this server could not load: send token ids");
	q->ids = calloc(lim->max_ctx, sizeof(*q->ids));
	if (!q->ids)
		return oom(e);
	n = shx_tok_encode(lim->tok, text, len, fl, q->ids, lim->max_ctx);
	if (n < 0)
		return bad(e, param, "the text cannot be tokenized: %s",
			   strerror((int)-n));
	if ((size_t)n >= lim->max_ctx)
		return too_long(e, param, (size_t)n, lim);
	if (n == 0)
		return bad(e, param, "'%s' gives no tokens", param);
	q->n_ids = (uint32_t)n;
	return 0;
}

/* prompt: text, an array of token ids, or an array holding one of them. */
static int parse_ids(const cJSON *v, const struct api_ctx *lim,
		     struct api_req *q, struct api_err *e)
{
	const cJSON *it;
	int n;

	if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 &&
	    (cJSON_IsArray(v->child) || cJSON_IsString(v->child)))
		v = v->child;
	if (cJSON_IsString(v))
		return encode(v->valuestring, strlen(v->valuestring), "prompt",
			      lim, q, e);
	if (!cJSON_IsArray(v))
		return bad(e, "prompt", "'prompt' must be a string or an "
			   "array of token ids (integers)");
	n = cJSON_GetArraySize(v);
	if (n == 0)
		return bad(e, "prompt", "'prompt' is empty");
	if ((uint32_t)n >= lim->max_ctx)
		return too_long(e, "prompt", (size_t)n, lim);
	q->ids = calloc((size_t)n, sizeof(*q->ids));
	if (!q->ids)
		return oom(e);
	cJSON_ArrayForEach(it, v) {
		double d;

		if (!whole(it, 0, (double)lim->n_vocab - 1, &d))
			return bad(e, "prompt", "prompt[%u] is not a token id: "
				   "ids are integers 0..%u (the model's "
				   "n_vocab - 1)", q->n_ids, lim->n_vocab - 1);
		q->ids[q->n_ids++] = (int32_t)d;
	}
	return 0;
}

/* messages: an array of {"role": string, "content": string}, rendered
 * with the chat template and tokenized. */
static int parse_messages(const cJSON *v, const struct api_ctx *lim,
			  struct api_req *q, struct api_err *e)
{
	struct shx_chat_msg *msgs;
	const cJSON *m;
	size_t n = 0;
	ssize_t len;
	char *buf;
	int ret;

	if (!cJSON_IsArray(v) || !cJSON_GetArraySize(v))
		return bad(e, "messages", "'messages' must be a non-empty "
			   "array of {\"role\", \"content\"} objects");
	msgs = calloc((size_t)cJSON_GetArraySize(v), sizeof(*msgs));
	if (!msgs)
		return oom(e);
	cJSON_ArrayForEach(m, v) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m,
								"content");

		if (!cJSON_IsObject(m) || !cJSON_IsString(role) ||
		    !cJSON_IsString(content)) {
			free(msgs);
			return bad(e, "messages", "messages[%zu] must have a "
				   "string 'role' and a string 'content'", n);
		}
		msgs[n++] = (struct shx_chat_msg){ role->valuestring,
						   content->valuestring };
	}
	if (lim->tmpl < 0 || !lim->tok) {
		free(msgs);
		return bad(e, "messages", "chat completions need the model's "
			   "tokenizer and a chat template it names or the "
			   "chat_template key (--chat-template chatml, llama3, "
			   "...) gives; or use /v1/completions");
	}
	len = shx_chat_apply(lim->tmpl, msgs, n, true, NULL, 0);
	buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (buf)
		shx_chat_apply(lim->tmpl, msgs, n, true, buf, (size_t)len + 1);
	free(msgs);
	if (len < 0)
		return bad(e, "messages", "the chat template (%s) takes only "
			   "some roles: %s", shx_chat_name(lim->tmpl),
			   strerror((int)-len));
	if (!buf)
		return oom(e);
	ret = encode(buf, (size_t)len, "messages", lim, q, e);
	free(buf);
	return ret;
}

/* stop: a string or an array of up to SHX_STOP_MAX strings. */
static int parse_stop(const cJSON *v, const struct api_ctx *lim,
		      struct api_req *q, struct api_err *e)
{
	const cJSON *one = v, *it;

	if (cJSON_IsNull(v))
		return 0;
	if (!lim->tok)
		return bad(e, "stop", "stop strings need the model's "
			   "tokenizer, which this server could not load");
	if (cJSON_IsString(v))
		v = NULL;
	else if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > SHX_STOP_MAX)
		return bad(e, "stop", "'stop' must be a string or an array of "
			   "up to %d strings", SHX_STOP_MAX);
	for (it = v ? v->child : one; it; it = v ? it->next : NULL) {
		size_t n = cJSON_IsString(it) ? strlen(it->valuestring) : 0;

		if (!n || n > SHX_STOP_LEN_MAX)
			return bad(e, "stop", "each stop string must be text "
				   "of 1..%d bytes", SHX_STOP_LEN_MAX);
		q->stops[q->n_stops] = strdup(it->valuestring);
		if (!q->stops[q->n_stops++])
			return oom(e);
	}
	return 0;
}

enum field {
	F_MODEL, F_PROMPT, F_MESSAGES, F_MAX_TOKENS, F_STREAM, F_STREAM_OPTS,
	F_RETURN_TOKENS, F_IGNORE_EOS, F_TEMPERATURE, F_TOP_P, F_TOP_K,
	F_MIN_P, F_REPEAT, F_FREQ, F_PRES, F_N, F_USER, F_SEED, F_STOP,
	F_ECHO, F_LOGPROBS, F_TOP_LOGPROBS, F_CACHE_PROMPT,
};

static const struct {
	const char *name;
	enum field f;
	unsigned int where;	/* 1: completions, 2: chat, 3: both */
} fields[] = {
	{ "model", F_MODEL, 3 }, { "prompt", F_PROMPT, 1 },
	{ "messages", F_MESSAGES, 2 }, { "max_tokens", F_MAX_TOKENS, 3 },
	{ "max_completion_tokens", F_MAX_TOKENS, 2 },
	{ "stream", F_STREAM, 3 }, { "stream_options", F_STREAM_OPTS, 3 },
	{ "return_tokens", F_RETURN_TOKENS, 3 },
	{ "ignore_eos", F_IGNORE_EOS, 3 },
	{ "cache_prompt", F_CACHE_PROMPT, 3 },
	{ "temperature", F_TEMPERATURE, 3 }, { "top_p", F_TOP_P, 3 },
	{ "top_k", F_TOP_K, 3 }, { "min_p", F_MIN_P, 3 },
	{ "repeat_penalty", F_REPEAT, 3 },
	{ "frequency_penalty", F_FREQ, 3 },
	{ "presence_penalty", F_PRES, 3 },
	{ "n", F_N, 3 }, { "user", F_USER, 3 }, { "seed", F_SEED, 3 },
	{ "stop", F_STOP, 3 }, { "echo", F_ECHO, 1 },
	{ "logprobs", F_LOGPROBS, 3 }, { "top_logprobs", F_TOP_LOGPROBS, 2 },
};

static int number(const cJSON *v, float *out, struct api_err *e)
{
	if (!cJSON_IsNumber(v))
		return bad(e, v->string, "'%s' must be a number", v->string);
	*out = (float)v->valuedouble;
	return 0;
}

static int boolean(const cJSON *v, bool *out, struct api_err *e)
{
	if (!cJSON_IsBool(v))
		return bad(e, v->string, "'%s' must be true or false",
			   v->string);
	*out = cJSON_IsTrue(v);
	return 0;
}

static int field(const cJSON *v, enum field f, const struct api_ctx *lim,
		 struct api_req *q, struct api_err *e)
{
	const char *k = v->string;
	bool echo = false;
	double d;

	switch (f) {
	case F_MODEL:
	case F_USER:
		return cJSON_IsString(v) ? 0 :
		       bad(e, k, "'%s' must be a string", k);
	case F_PROMPT:
		return parse_ids(v, lim, q, e);
	case F_MESSAGES:
		return parse_messages(v, lim, q, e);
	case F_MAX_TOKENS:
		if (cJSON_IsNull(v))
			return 0;
		if (!whole(v, 1, 1e9, &d))
			return bad(e, k, "'%s' must be an integer >= 1", k);
		if (d >= lim->max_ctx)
			return bad(e, k, "'%s' is %.0f; this server's context "
				   "is %u tokens (max_context), prompt and "
				   "max_tokens together", k, d, lim->max_ctx);
		q->max_tokens = (uint32_t)d;
		return 0;
	case F_STREAM:
		return boolean(v, &q->stream, e);
	case F_RETURN_TOKENS:
		return boolean(v, &q->return_tokens, e);
	case F_IGNORE_EOS:
		return boolean(v, &q->ignore_eos, e);
	case F_CACHE_PROMPT: {
		bool cache = true;

		if (boolean(v, &cache, e))
			return -EINVAL;
		q->no_cache = !cache;
		return 0;
	}
	case F_ECHO:
		if (boolean(v, &echo, e))
			return -EINVAL;
		return echo ? bad(e, k, "'echo' is not supported") : 0;
	case F_STREAM_OPTS: {
		const cJSON *u;

		if (cJSON_IsNull(v))
			return 0;
		if (!cJSON_IsObject(v))
			return bad(e, k, "'stream_options' must be an object");
		cJSON_ArrayForEach(u, v) {
			if (strcmp(u->string, "include_usage") ||
			    !cJSON_IsBool(u))
				return bad(e, k, "'stream_options' takes only "
					   "\"include_usage\": true or false");
			q->include_usage = cJSON_IsTrue(u);
		}
		return 0;
	}
	case F_TEMPERATURE:
		return number(v, &q->sp.temperature, e);
	case F_TOP_P:
		return number(v, &q->sp.top_p, e);
	case F_MIN_P:
		return number(v, &q->sp.min_p, e);
	case F_REPEAT:
		return number(v, &q->sp.repeat_penalty, e);
	case F_FREQ:
		return number(v, &q->sp.frequency_penalty, e);
	case F_PRES:
		return number(v, &q->sp.presence_penalty, e);
	case F_TOP_K:
		if (!whole(v, -1, 1e9, &d))
			return bad(e, k, "'top_k' must be an integer");
		q->sp.top_k = (int32_t)d;
		return 0;
	case F_N:
		return whole(v, 1, 1, &d) ? 0 :
		       bad(e, k, "'n' must be 1 (one choice per request)");
	case F_SEED:
		if (cJSON_IsNull(v))
			return 0;
		if (!whole(v, 0, 1.8e19, &d))
			return bad(e, k, "'seed' must be an integer >= 0");
		q->sp.seed = (uint64_t)d;
		return 0;
	case F_STOP:
		return parse_stop(v, lim, q, e);
	case F_LOGPROBS:
		if (q->chat)
			return cJSON_IsNull(v) ? 0 : boolean(v, &q->logprobs, e);
		if (cJSON_IsNull(v))
			return 0;
		if (!whole(v, 0, SHX_SAMPLE_LOGPROBS_MAX, &d))
			return bad(e, k, "'logprobs' must be null or an integer "
				   "0..%d (the most likely tokens listed at "
				   "each position)", SHX_SAMPLE_LOGPROBS_MAX);
		q->logprobs = true;
		q->n_top = (uint32_t)d;
		return 0;
	case F_TOP_LOGPROBS:
		if (cJSON_IsNull(v))
			return 0;
		if (!whole(v, 0, SHX_SAMPLE_LOGPROBS_MAX, &d))
			return bad(e, k, "'top_logprobs' must be an integer "
				   "0..%d", SHX_SAMPLE_LOGPROBS_MAX);
		q->n_top = (uint32_t)d;
		return 0;
	}
	return 0;
}

static int check(const cJSON *root, bool chat, const struct api_ctx *lim,
		 struct api_req *q, struct api_err *e)
{
	unsigned int where = chat ? 2 : 1;
	const char *need = chat ? "messages" : "prompt";
	char msg[sizeof(e->msg)];
	uint32_t seen = 0;
	const cJSON *v;
	int ret;

	_Static_assert(sizeof(fields) / sizeof(fields[0]) <= 32, "seen");
	if (!cJSON_IsObject(root))
		return bad(e, NULL, "the body must be a JSON object");
	cJSON_ArrayForEach(v, root) {
		size_t i;

		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!strcmp(v->string, fields[i].name) &&
			    (fields[i].where & where))
				break;
		if (i == sizeof(fields) / sizeof(fields[0]))
			return bad(e, v->string, "unknown field '%s'",
				   v->string);
		/* each field fills q once (prompt's ids, stop's strings) */
		if (seen & 1u << i)
			return bad(e, v->string, "'%s' is given twice",
				   v->string);
		seen |= 1u << i;
		ret = field(v, fields[i].f, lim, q, e);
		if (ret)
			return ret;
	}
	if (!cJSON_GetObjectItemCaseSensitive(root, need))
		return bad(e, need, "'%s' is missing", need);
	v = cJSON_GetObjectItemCaseSensitive(root, "top_logprobs");
	if (chat && v && !cJSON_IsNull(v) && !q->logprobs)
		return bad(e, "top_logprobs", "'top_logprobs' needs "
			   "'logprobs': true");
	if (shx_sample_check(&q->sp, msg, sizeof(msg)))
		return bad(e, NULL, "%s", msg);
	/* logprobs sample full rows: with a sampler, greedy or not */
	q->greedy = q->sp.temperature == 0 && q->sp.repeat_penalty == 1 &&
		    q->sp.frequency_penalty == 0 &&
		    q->sp.presence_penalty == 0 && !q->logprobs;
	if ((uint64_t)q->n_ids + q->max_tokens > lim->max_ctx)
		return bad(e, "max_tokens", "the prompt's %u tokens and "
			   "max_tokens %u make %llu; this server's context is "
			   "%u tokens (max_context)", q->n_ids, q->max_tokens,
			   (unsigned long long)q->n_ids + q->max_tokens,
			   lim->max_ctx);
	if ((uint64_t)q->n_ids + q->max_tokens > lim->max_kv)
		return bad(e, "max_tokens", "the prompt and max_tokens need "
			   "%u positions; the whole KV cache holds %u "
			   "(kv_blocks x block_size)", q->n_ids + q->max_tokens,
			   lim->max_kv);
	return 0;
}

int api_parse(const char *body, size_t len, bool chat,
	      const struct api_ctx *lim, struct api_req *q,
	      struct api_err *e)
{
	cJSON *root = cJSON_ParseWithLength(body, len);
	int ret;

	memset(q, 0, sizeof(*q));
	q->chat = chat;
	q->max_tokens = DEF_MAX_TOKENS;
	shx_sample_defaults(&q->sp);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();

		return bad(e, NULL, "the body is not valid JSON (at byte %td)",
			   at && at >= body && at <= body + len ? at - body :
			   (ptrdiff_t)0);
	}
	ret = check(root, chat, lim, q, e);
	cJSON_Delete(root);
	if (ret)
		api_req_free(q);
	return ret;
}

void api_req_free(struct api_req *q)
{
	free(q->ids);
	q->ids = NULL;
	q->n_ids = 0;
	for (size_t i = 0; i < q->n_stops; i++)
		free(q->stops[i]);
	q->n_stops = 0;
}

static char *print(cJSON *o)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	return s;
}

char *api_error_json(const struct api_err *e)
{
	cJSON *o = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(o,
								       "error");

	cJSON_AddStringToObject(err, "message", e->msg);
	cJSON_AddStringToObject(err, "type", e->type);
	if (e->param[0])
		cJSON_AddStringToObject(err, "param", e->param);
	else
		cJSON_AddNullToObject(err, "param");
	if (e->code)
		cJSON_AddStringToObject(err, "code", e->code);
	else
		cJSON_AddNullToObject(err, "code");
	return print(o);
}

static cJSON *head(const struct api_req *q, const struct api_meta *m,
		   bool chunk)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", m->id);
	cJSON_AddStringToObject(o, "object", q->chat ?
		(chunk ? "chat.completion.chunk" : "chat.completion") :
		"text_completion");
	cJSON_AddNumberToObject(o, "created", (double)m->created);
	cJSON_AddStringToObject(o, "model", m->model);
	return o;
}

static void add_usage(cJSON *o, uint32_t prompt, uint32_t gen)
{
	cJSON *u = cJSON_AddObjectToObject(o, "usage");

	cJSON_AddNumberToObject(u, "prompt_tokens", prompt);
	cJSON_AddNumberToObject(u, "completion_tokens", gen);
	cJSON_AddNumberToObject(u, "total_tokens", (double)prompt + gen);
}

/* A token's text (control tokens' too), malloc'ed: its bytes when they
 * are whole UTF-8 characters, else "bytes:\\xNN..." (OpenAI's), so that
 * tokens stay apart; without a tokenizer "token_id:N" (vLLM's). *raw
 * (malloc'ed) and *n get its bytes, NULL and -1 without. NULL: out of
 * memory. */
static char *token_text(const struct api_meta *m, int32_t id, uint8_t **raw,
			ssize_t *n)
{
	ssize_t len = m->tok ? shx_tok_piece(m->tok, id, SHX_TOK_RENDER_SPECIAL,
					     NULL, 0) : -1;
	uint8_t *b;
	size_t k;
	char *s;

	*raw = NULL;
	*n = len;
	if (len < 0) {
		s = malloc(24);
		if (s)
			snprintf(s, 24, "token_id:%d", id);
		return s;
	}
	b = malloc((size_t)len + 1);
	s = malloc(sizeof("bytes:") + 4 * (size_t)len);
	if (!b || !s) {
		free(b);
		free(s);
		return NULL;
	}
	shx_tok_piece(m->tok, id, SHX_TOK_RENDER_SPECIAL, (char *)b,
		      (size_t)len);
	*raw = b;
	for (k = 0; k < (size_t)len;) {
		int c = shx_utf8_check(b + k, (size_t)len - k);

		if (c <= 0)
			break;
		k += (size_t)c;
	}
	if (k == (size_t)len) {
		memcpy(s, b, k);
		s[k] = '\0';
		return s;
	}
	k = (size_t)sprintf(s, "bytes:");
	for (ssize_t i = 0; i < len; i++)
		k += (size_t)sprintf(s + k, "\\x%02x", b[i]);
	return s;
}

/* Chat's {"token", "logprob", "bytes"} of one id. */
static cJSON *chat_lp(const struct api_meta *m, const struct shx_logprob *lp)
{
	cJSON *o = cJSON_CreateObject(), *bytes;
	uint8_t *raw;
	ssize_t n;
	char *text = token_text(m, lp->id, &raw, &n);

	cJSON_AddStringToObject(o, "token", text);
	cJSON_AddNumberToObject(o, "logprob", lp->logprob);
	if (n < 0) {
		cJSON_AddNullToObject(o, "bytes");
	} else {
		bytes = cJSON_AddArrayToObject(o, "bytes");
		for (ssize_t i = 0; raw && i < n; i++)
			cJSON_AddItemToArray(bytes, cJSON_CreateNumber(raw[i]));
	}
	free(text);
	free(raw);
	return o;
}

/* choices[0].logprobs: chat's {"content": [...]}, or completions' tokens,
 * token_logprobs, top_logprobs and text_offset (bytes into the text). */
static cJSON *logprobs_json(const struct api_req *q, const struct api_meta *m,
			    const struct api_toks *t)
{
	cJSON *o = cJSON_CreateObject(), *a, *toks, *lps, *tops, *offs;
	uint32_t stride = 1 + q->n_top;

	if (q->chat) {
		a = cJSON_AddArrayToObject(o, "content");
		for (uint32_t i = 0; i < t->n; i++) {
			const struct shx_logprob *lp = t->lp + i * stride;
			cJSON *one = chat_lp(m, lp), *top;

			top = cJSON_AddArrayToObject(one, "top_logprobs");
			for (uint32_t j = 1; j < stride; j++)
				cJSON_AddItemToArray(top, chat_lp(m, lp + j));
			cJSON_AddItemToArray(a, one);
		}
		cJSON_AddNullToObject(o, "refusal");
		return o;
	}
	toks = cJSON_AddArrayToObject(o, "tokens");
	lps = cJSON_AddArrayToObject(o, "token_logprobs");
	tops = cJSON_AddArrayToObject(o, "top_logprobs");
	offs = cJSON_AddArrayToObject(o, "text_offset");
	for (uint32_t i = 0; i < t->n; i++) {
		const struct shx_logprob *lp = t->lp + i * stride;
		cJSON *top = cJSON_CreateObject();
		ssize_t len;

		for (uint32_t j = 0; j < stride; j++) {
			uint8_t *raw;
			char *text = token_text(m, lp[j].id, &raw, &len);

			if (!j)
				cJSON_AddItemToArray(toks,
						     cJSON_CreateString(text));
			else if (text)
				cJSON_AddNumberToObject(top, text,
							lp[j].logprob);
			free(text);
			free(raw);
		}
		cJSON_AddItemToArray(lps, cJSON_CreateNumber(lp->logprob));
		cJSON_AddItemToArray(tops, top);
		cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)*t->off));
		/* the offset moves by the token's share of the text */
		len = m->tok ? shx_tok_piece(m->tok, lp->id, 0, NULL, 0) : 0;
		*t->off += len > 0 ? (size_t)len : 0;
	}
	return o;
}

/* choices[0]: the text (a chat's message or delta), the ids if asked. */
static void add_choice(cJSON *o, const struct api_req *q,
		       const struct api_meta *m, const struct api_toks *t,
		       const char *text, bool chunk, bool first,
		       const char *finish)
{
	static const struct api_toks none = { 0 };
	cJSON *ch = cJSON_CreateObject();

	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), ch);
	cJSON_AddNumberToObject(ch, "index", 0);
	if (q->chat) {
		cJSON *msg = cJSON_AddObjectToObject(ch, chunk ? "delta" :
						     "message");

		if (!chunk || first)
			cJSON_AddStringToObject(msg, "role", "assistant");
		if (!chunk || text[0] || !finish)
			cJSON_AddStringToObject(msg, "content", text);
	} else {
		cJSON_AddStringToObject(ch, "text", text);
	}
	t = t ? t : &none;
	if (q->return_tokens)
		cJSON_AddItemToObject(ch, "tokens",
				      cJSON_CreateIntArray(t->ids, (int)t->n));
	if (q->logprobs && t->n)
		cJSON_AddItemToObject(ch, "logprobs", logprobs_json(q, m, t));
	else
		cJSON_AddNullToObject(ch, "logprobs");
	if (finish)
		cJSON_AddStringToObject(ch, "finish_reason", finish);
	else
		cJSON_AddNullToObject(ch, "finish_reason");
}

char *api_completion_json(const struct api_req *q, const struct api_meta *m,
			  const struct api_toks *t, const char *text,
			  const char *finish)
{
	cJSON *o = head(q, m, false);

	add_choice(o, q, m, t, text, false, false, finish);
	add_usage(o, q->n_ids, t->n);
	return print(o);
}

char *api_chunk_json(const struct api_req *q, const struct api_meta *m,
		     const struct api_toks *t, const char *text, bool first,
		     const char *finish, const uint32_t *usage_gen)
{
	cJSON *o = head(q, m, true);

	if (usage_gen) {
		cJSON_AddArrayToObject(o, "choices");
		add_usage(o, q->n_ids, *usage_gen);
	} else {
		add_choice(o, q, m, t, text, true, first, finish);
	}
	return print(o);
}

char *api_tokenize(const char *body, size_t len, const struct api_ctx *c,
		   bool detok, struct api_err *e)
{
	cJSON *root = cJSON_ParseWithLength(body, len), *v, *o = NULL;
	struct api_req q = { 0 };

	v = cJSON_GetObjectItemCaseSensitive(root, detok ? "tokens" :
					     "content");
	if (!c->tok)
		api_err_set(e, 400, "invalid_request_error", NULL, "this "
			    "server could not load the model's tokenizer");
	else if (!v || (detok ? !cJSON_IsArray(v) : !cJSON_IsString(v)))
		bad(e, detok ? "tokens" : "content", detok ? "the body must "
		    "be {\"tokens\": [ids]}" : "the body must be "
		    "{\"content\": text}");
	else if (!detok && !encode(v->valuestring, strlen(v->valuestring),
				   "content", c, &q, e))
		cJSON_AddItemToObject(o = cJSON_CreateObject(), "tokens",
				      cJSON_CreateIntArray(q.ids, (int)q.n_ids));
	else if (detok && !parse_ids(v, c, &q, e)) {
		size_t n;
		char *text = shx_tok_decode(c->tok, q.ids, q.n_ids, 0, &n);

		if (text) {
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "content", text);
			free(text);
		}
	}
	cJSON_Delete(root);
	api_req_free(&q);
	return o ? print(o) : NULL;
}

char *api_models_json(const char *model, long created, uint32_t n_vocab,
		      uint32_t max_ctx)
{
	cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject(), *meta;

	cJSON_AddStringToObject(o, "object", "list");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "data"), m);
	cJSON_AddStringToObject(m, "id", model);
	cJSON_AddStringToObject(m, "object", "model");
	cJSON_AddNumberToObject(m, "created", (double)created);
	cJSON_AddStringToObject(m, "owned_by", "syshax");
	meta = cJSON_AddObjectToObject(m, "meta");
	cJSON_AddNumberToObject(meta, "n_vocab", n_vocab);
	cJSON_AddNumberToObject(meta, "n_ctx", max_ctx);
	return print(o);
}
