// SPDX-License-Identifier: MIT
/* The OpenAI API's JSON (api.h). */
#include "api.h"

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

/* prompt: an array of token ids, or an array holding one such array. */
static int parse_ids(const cJSON *v, const struct api_limits *lim,
		     struct api_req *q, struct api_err *e)
{
	const cJSON *it;
	int n;

	if (cJSON_IsString(v))
		return bad(e, "prompt", "text prompts need the tokenizer, "
			   "which this build does not have yet: send the "
			   "prompt as an array of token ids");
	if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 &&
	    cJSON_IsArray(v->child))
		v = v->child;
	if (!cJSON_IsArray(v))
		return bad(e, "prompt", "'prompt' must be an array of token "
			   "ids (integers)");
	n = cJSON_GetArraySize(v);
	if (n == 0)
		return bad(e, "prompt", "'prompt' is empty");
	if ((uint32_t)n >= lim->max_ctx)
		return bad(e, "prompt", "the prompt has %d tokens; this "
			   "server's context is %u tokens (max_context), "
			   "prompt and max_tokens together", n, lim->max_ctx);
	q->ids = calloc((size_t)n, sizeof(*q->ids));
	if (!q->ids) {
		api_err_set(e, 500, "server_error", NULL, "out of memory");
		return -ENOMEM;
	}
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

/* messages: an array of {"role": string, "content": string}. */
static int check_messages(const cJSON *v, struct api_err *e)
{
	const cJSON *m;
	unsigned int i = 0;

	if (!cJSON_IsArray(v) || !cJSON_GetArraySize(v))
		return bad(e, "messages", "'messages' must be a non-empty "
			   "array of {\"role\", \"content\"} objects");
	cJSON_ArrayForEach(m, v) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m,
								"content");

		if (!cJSON_IsObject(m) || !cJSON_IsString(role) ||
		    !cJSON_IsString(content))
			return bad(e, "messages", "messages[%u] must have a "
				   "string 'role' and a string 'content'", i);
		i++;
	}
	return 0;
}

enum field {
	F_MODEL, F_PROMPT, F_MESSAGES, F_MAX_TOKENS, F_STREAM, F_STREAM_OPTS,
	F_RETURN_TOKENS, F_TEMPERATURE, F_TOP_P, F_N, F_USER, F_SEED, F_STOP,
	F_ECHO, F_LOGPROBS, F_PENALTY,
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
	{ "temperature", F_TEMPERATURE, 3 }, { "top_p", F_TOP_P, 3 },
	{ "n", F_N, 3 }, { "user", F_USER, 3 }, { "seed", F_SEED, 3 },
	{ "stop", F_STOP, 3 }, { "echo", F_ECHO, 1 },
	{ "logprobs", F_LOGPROBS, 3 },
	{ "presence_penalty", F_PENALTY, 3 },
	{ "frequency_penalty", F_PENALTY, 3 },
};

static int field(const cJSON *v, enum field f, const struct api_limits *lim,
		 struct api_req *q, struct api_err *e)
{
	const char *k = v->string;
	double d;

	switch (f) {
	case F_MODEL:
	case F_USER:
		return cJSON_IsString(v) ? 0 :
		       bad(e, k, "'%s' must be a string", k);
	case F_PROMPT:
		return parse_ids(v, lim, q, e);
	case F_MESSAGES:
		return check_messages(v, e);
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
	case F_RETURN_TOKENS:
	case F_ECHO:
		if (!cJSON_IsBool(v))
			return bad(e, k, "'%s' must be true or false", k);
		if (f == F_ECHO && cJSON_IsTrue(v))
			return bad(e, k, "'echo' is not supported");
		if (f == F_STREAM)
			q->stream = cJSON_IsTrue(v);
		else if (f == F_RETURN_TOKENS)
			q->return_tokens = cJSON_IsTrue(v);
		return 0;
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
		/* Greedy until the sampler (text/sample.h) is built in. */
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
		    v->valuedouble > 2)
			return bad(e, k, "'temperature' must be a number 0..2");
		return v->valuedouble == 0 ? 0 :
		       bad(e, k, "sampling is not built in yet: only greedy "
			   "decoding, 'temperature' 0");
	case F_TOP_P:
		if (!cJSON_IsNumber(v) || v->valuedouble <= 0 ||
		    v->valuedouble > 1)
			return bad(e, k, "'top_p' must be a number in (0, 1]");
		return 0;
	case F_N:
		return whole(v, 1, 1, &d) ? 0 :
		       bad(e, k, "'n' must be 1 (one choice per request)");
	case F_SEED:
		return cJSON_IsNull(v) || whole(v, -9.2e18, 9.2e18, &d) ? 0 :
		       bad(e, k, "'seed' must be an integer");
	case F_STOP:
		if (cJSON_IsNull(v) || (cJSON_IsArray(v) &&
					!cJSON_GetArraySize(v)))
			return 0;
		return bad(e, k, "stop strings need the tokenizer, which this "
			   "build does not have yet");
	case F_LOGPROBS:
		return cJSON_IsNull(v) || cJSON_IsFalse(v) ? 0 :
		       bad(e, k, "'logprobs' is not supported yet");
	case F_PENALTY:
		if (!cJSON_IsNumber(v) || v->valuedouble < -2 ||
		    v->valuedouble > 2)
			return bad(e, k, "'%s' must be a number -2..2", k);
		return v->valuedouble == 0 ? 0 :
		       bad(e, k, "'%s' needs the sampler, which this build "
			   "does not have yet", k);
	}
	return 0;
}

static int check(const cJSON *root, bool chat, const struct api_limits *lim,
		 struct api_req *q, struct api_err *e)
{
	unsigned int where = chat ? 2 : 1;
	const char *need = chat ? "messages" : "prompt";
	const cJSON *v;
	int ret;

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
		ret = field(v, fields[i].f, lim, q, e);
		if (ret)
			return ret;
	}
	if (!cJSON_GetObjectItemCaseSensitive(root, need))
		return bad(e, need, "'%s' is missing", need);
	if (chat) {
		api_err_set(e, 501, "not_implemented_error", "messages",
			    "chat completions need the tokenizer and chat "
			    "templates, which this build does not have yet: "
			    "use /v1/completions with token ids");
		return -EINVAL;
	}
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
	      const struct api_limits *lim, struct api_req *q,
	      struct api_err *e)
{
	cJSON *root = cJSON_ParseWithLength(body, len);
	int ret;

	memset(q, 0, sizeof(*q));
	q->chat = chat;
	q->max_tokens = DEF_MAX_TOKENS;
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

/* choices[0]: the text (none without the tokenizer), the ids if asked. */
static void add_choice(cJSON *o, const struct api_req *q, const int32_t *ids,
		       uint32_t n, const char *finish)
{
	cJSON *ch = cJSON_CreateObject();

	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), ch);
	cJSON_AddNumberToObject(ch, "index", 0);
	cJSON_AddStringToObject(ch, "text", "");
	if (q->return_tokens)
		cJSON_AddItemToObject(ch, "tokens",
				      cJSON_CreateIntArray(ids, (int)n));
	cJSON_AddNullToObject(ch, "logprobs");
	if (finish)
		cJSON_AddStringToObject(ch, "finish_reason", finish);
	else
		cJSON_AddNullToObject(ch, "finish_reason");
}

char *api_completion_json(const struct api_req *q, const struct api_meta *m,
			  const int32_t *ids, uint32_t n, const char *finish)
{
	cJSON *o = head(q, m, false);

	add_choice(o, q, ids, n, finish);
	add_usage(o, q->n_ids, n);
	return print(o);
}

char *api_chunk_json(const struct api_req *q, const struct api_meta *m,
		     const int32_t *ids, uint32_t n, const char *finish,
		     const uint32_t *usage_gen)
{
	cJSON *o = head(q, m, true);

	if (usage_gen) {
		cJSON_AddArrayToObject(o, "choices");
		add_usage(o, q->n_ids, *usage_gen);
	} else {
		add_choice(o, q, ids, n, finish);
	}
	return print(o);
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
