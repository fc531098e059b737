// SPDX-License-Identifier: MIT
/*
 * Chat templates (chat.h): the families' layouts as llama.cpp's
 * llm_chat_apply_template() writes them, byte for byte (checked against
 * libllama by tests/text/chat_ut).
 */
#include "chat.h"

#include <errno.h>
#include <string.h>

static const char *const names[SHX_CHAT_N] = {
	[SHX_CHAT_CHATML] = "chatml",
	[SHX_CHAT_LLAMA3] = "llama3",
	[SHX_CHAT_LLAMA2] = "llama2",
	[SHX_CHAT_LLAMA2_SYS] = "llama2-sys",
	[SHX_CHAT_LLAMA2_SYS_BOS] = "llama2-sys-bos",
	[SHX_CHAT_LLAMA2_SYS_STRIP] = "llama2-sys-strip",
	[SHX_CHAT_MISTRAL_V1] = "mistral-v1",
	[SHX_CHAT_MISTRAL_V3] = "mistral-v3",
	[SHX_CHAT_MISTRAL_V3_TEKKEN] = "mistral-v3-tekken",
	[SHX_CHAT_MISTRAL_V7] = "mistral-v7",
	[SHX_CHAT_MISTRAL_V7_TEKKEN] = "mistral-v7-tekken",
	[SHX_CHAT_DEEPSEEK3] = "deepseek3",
};

const char *shx_chat_name(enum shx_chat_tmpl t)
{
	return (unsigned int)t < SHX_CHAT_N ? names[t] : NULL;
}

int shx_chat_by_name(const char *name, enum shx_chat_tmpl *t)
{
	for (int i = 0; name && i < SHX_CHAT_N; i++) {
		if (!strcmp(name, names[i])) {
			*t = (enum shx_chat_tmpl)i;
			return 0;
		}
	}
	return -ENOENT;
}

#define HAS(s) (strstr(tmpl, (s)) != NULL)

/* llama.cpp's [INST] branch: Mistral's official templates, else Llama 2's. */
static enum shx_chat_tmpl detect_inst(const char *tmpl)
{
	if (HAS("[SYSTEM_PROMPT]"))
		return SHX_CHAT_MISTRAL_V7;
	if (HAS("' [INST] ' + system_message") || HAS("[AVAILABLE_TOOLS]")) {
		if (HAS(" [INST]"))
			return SHX_CHAT_MISTRAL_V1;
		if (HAS("\"[INST]\""))
			return SHX_CHAT_MISTRAL_V3_TEKKEN;
		return SHX_CHAT_MISTRAL_V3;
	}
	if (HAS("content.strip()"))
		return SHX_CHAT_LLAMA2_SYS_STRIP;
	if (HAS("bos_token + '[INST]"))
		return SHX_CHAT_LLAMA2_SYS_BOS;
	if (HAS("<<SYS>>"))
		return SHX_CHAT_LLAMA2_SYS;
	return SHX_CHAT_LLAMA2;
}

/*
 * llm_chat_detect_template()'s tests in its order, up to the last family
 * we apply: a template another family claims first is none of ours.
 */
int shx_chat_detect(const char *tmpl, enum shx_chat_tmpl *t)
{
	static const char *const others_before_llama3[][2] = {
		{ "<|assistant|>", "<|end|>" },			/* phi3 */
		{ "[gMASK]<sop>", "" },				/* chatglm4 */
		{ "<|assistant|>", "<|user|>" },		/* falcon3, glmedge */
		{ "<|{{ item['role'] }}|>", "<|begin_of_image|>" }, /* glmedge */
		{ "<|user|>", "<|endoftext|>" },		/* zephyr */
		{ "bos_token + message['role']", "" },		/* monarch */
		{ "<start_of_turn>", "" },			/* gemma */
		{ "'\\n\\nAssistant: ' + eos_token", "" },	/* orion */
		{ "GPT4 Correct ", "" },			/* openchat */
		{ "USER: ", "ASSISTANT: " },			/* vicuna */
		{ "### Instruction:", "<|EOT|>" },		/* deepseek */
		{ "<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>" },/* command-r */
	};
	static const char *const others_before_deepseek3[] = {
		"[gMASK]sop",					/* chatglm3 */
		"<用户>",					/* minicpm */
		"'Assistant: ' + message['content'] + eos_token", /* deepseek2 */
	};

	if (!tmpl)
		return -ENOENT;
	if (!shx_chat_by_name(tmpl, t))
		return 0;
	if (HAS("<|im_start|>")) {
		/* phi4, and SmolVLM's <|im_start|> as BOS, are not ChatML */
		if (HAS("<|im_sep|>") || HAS("<end_of_utterance>"))
			return -ENOENT;
		*t = SHX_CHAT_CHATML;
		return 0;
	}
	if (!strncmp(tmpl, "mistral", 7) || HAS("[INST]")) {
		*t = detect_inst(tmpl);
		return 0;
	}
	for (size_t i = 0; i < sizeof(others_before_llama3) /
			       sizeof(others_before_llama3[0]); i++)
		if (HAS(others_before_llama3[i][0]) &&
		    HAS(others_before_llama3[i][1]))
			return -ENOENT;
	if (HAS("<|start_header_id|>") && HAS("<|end_header_id|>")) {
		*t = SHX_CHAT_LLAMA3;
		return 0;
	}
	for (size_t i = 0; i < sizeof(others_before_deepseek3) /
			       sizeof(others_before_deepseek3[0]); i++)
		if (HAS(others_before_deepseek3[i]))
			return -ENOENT;
	if (HAS("<｜Assistant｜>") && HAS("<｜User｜>") &&
	    HAS("<｜end▁of▁sentence｜>")) {
		*t = SHX_CHAT_DEEPSEEK3;
		return 0;
	}
	return -ENOENT;
}

#undef HAS

/* The prompt as it grows: snprintf's count, bytes past len dropped. */
struct out {
	char *buf;
	size_t len, n;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->n < o->len) {
		size_t room = o->len - o->n;

		memcpy(o->buf + o->n, s, n < room ? n : room);
	}
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static bool space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* llama.cpp's trim(): ASCII white space at both ends. */
static void put_trim(struct out *o, const char *s)
{
	size_t b = 0, e = strlen(s);

	while (b < e && space(s[b]))
		b++;
	while (e > b && space(s[e - 1]))
		e--;
	put(o, s + b, e - b);
}

static bool is(const char *role, const char *name)
{
	return !strcmp(role, name);
}

static void chatml(struct out *o, const struct shx_chat_msg *m, size_t n,
		   bool add)
{
	for (size_t i = 0; i < n; i++) {
		puts_(o, "<|im_start|>");
		puts_(o, m[i].role);
		puts_(o, "\n");
		puts_(o, m[i].content);
		puts_(o, "<|im_end|>\n");
	}
	if (add)
		puts_(o, "<|im_start|>assistant\n");
}

static void llama3(struct out *o, const struct shx_chat_msg *m, size_t n,
		   bool add)
{
	for (size_t i = 0; i < n; i++) {
		puts_(o, "<|start_header_id|>");
		puts_(o, m[i].role);
		puts_(o, "<|end_header_id|>\n\n");
		put_trim(o, m[i].content);
		puts_(o, "<|eot_id|>");
	}
	if (add)
		puts_(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Llama 2 and its variants; no assistant prompt to add. */
static void llama2(struct out *o, enum shx_chat_tmpl t,
		   const struct shx_chat_msg *m, size_t n)
{
	bool sys = t != SHX_CHAT_LLAMA2, strip = t == SHX_CHAT_LLAMA2_SYS_STRIP;
	bool in_turn = true;	/* the first [INST] goes without BOS */

	puts_(o, "[INST] ");
	for (size_t i = 0; i < n; i++) {
		void (*content)(struct out *, const char *) =
			strip ? put_trim : puts_;

		if (!in_turn) {
			in_turn = true;
			puts_(o, t == SHX_CHAT_LLAMA2_SYS_BOS ? "<s>[INST] "
							       : "[INST] ");
		}
		if (is(m[i].role, "system")) {
			/* no <<SYS>>: the system prompt leads the first turn */
			puts_(o, sys ? "<<SYS>>\n" : "");
			content(o, m[i].content);
			puts_(o, sys ? "\n<</SYS>>\n\n" : "\n");
		} else if (is(m[i].role, "user")) {
			content(o, m[i].content);
			puts_(o, " [/INST]");
		} else {
			content(o, m[i].content);
			puts_(o, "</s>");
			in_turn = false;
		}
	}
}

/* Mistral's v1, v3 and v3-tekken (their cookbook's chat_templates.md). */
static void mistral(struct out *o, enum shx_chat_tmpl t,
		    const struct shx_chat_msg *m, size_t n)
{
	const char *lead = t == SHX_CHAT_MISTRAL_V1 ? " " : "";
	const char *trail = t == SHX_CHAT_MISTRAL_V3_TEKKEN ? "" : " ";
	bool in_turn = false;

	for (size_t i = 0; i < n; i++) {
		if (!in_turn) {
			puts_(o, lead);
			puts_(o, "[INST]");
			puts_(o, trail);
			in_turn = true;
		}
		if (is(m[i].role, "system")) {
			puts_(o, m[i].content);
			puts_(o, "\n\n");
		} else if (is(m[i].role, "user")) {
			puts_(o, m[i].content);
			puts_(o, lead);
			puts_(o, "[/INST]");
		} else {
			puts_(o, trail);
			if (t == SHX_CHAT_MISTRAL_V3)
				put_trim(o, m[i].content);
			else
				puts_(o, m[i].content);
			puts_(o, "</s>");
			in_turn = false;
		}
	}
}

static void mistral_v7(struct out *o, enum shx_chat_tmpl t,
		       const struct shx_chat_msg *m, size_t n)
{
	const char *sp = t == SHX_CHAT_MISTRAL_V7 ? " " : "";

	for (size_t i = 0; i < n; i++) {
		const char *pre = "", *post = "</s>";

		if (is(m[i].role, "system")) {
			pre = "[SYSTEM_PROMPT]";
			post = "[/SYSTEM_PROMPT]";
		} else if (is(m[i].role, "user")) {
			pre = "[INST]";
			post = "[/INST]";
		}
		puts_(o, pre);
		puts_(o, sp);
		puts_(o, m[i].content);
		puts_(o, post);
	}
}

static void deepseek3(struct out *o, const struct shx_chat_msg *m, size_t n,
		      bool add)
{
	for (size_t i = 0; i < n; i++) {
		if (is(m[i].role, "system")) {
			puts_(o, m[i].content);
			puts_(o, "\n\n");
		} else if (is(m[i].role, "user")) {
			puts_(o, "<｜User｜>");
			puts_(o, m[i].content);
		} else {
			puts_(o, "<｜Assistant｜>");
			puts_(o, m[i].content);
			puts_(o, "<｜end▁of▁sentence｜>");
		}
	}
	if (add)
		puts_(o, "<｜Assistant｜>");
}

static bool any_role(enum shx_chat_tmpl t)
{
	return t == SHX_CHAT_CHATML || t == SHX_CHAT_LLAMA3;
}

ssize_t shx_chat_apply(enum shx_chat_tmpl t, const struct shx_chat_msg *msgs,
		       size_t n, bool add_assistant, char *buf, size_t len)
{
	struct out o = { buf, len ? len - 1 : 0, 0 };

	if ((unsigned int)t >= SHX_CHAT_N || (n && !msgs))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		const char *r = msgs[i].role;

		if (!r || !msgs[i].content)
			return -EINVAL;
		if (!any_role(t) && !is(r, "system") && !is(r, "user") &&
		    !is(r, "assistant"))
			return -EINVAL;
	}
	switch (t) {
	case SHX_CHAT_CHATML:
		chatml(&o, msgs, n, add_assistant);
		break;
	case SHX_CHAT_LLAMA3:
		llama3(&o, msgs, n, add_assistant);
		break;
	case SHX_CHAT_LLAMA2:
	case SHX_CHAT_LLAMA2_SYS:
	case SHX_CHAT_LLAMA2_SYS_BOS:
	case SHX_CHAT_LLAMA2_SYS_STRIP:
		llama2(&o, t, msgs, n);
		break;
	case SHX_CHAT_MISTRAL_V1:
	case SHX_CHAT_MISTRAL_V3:
	case SHX_CHAT_MISTRAL_V3_TEKKEN:
		mistral(&o, t, msgs, n);
		break;
	case SHX_CHAT_MISTRAL_V7:
	case SHX_CHAT_MISTRAL_V7_TEKKEN:
		mistral_v7(&o, t, msgs, n);
		break;
	case SHX_CHAT_DEEPSEEK3:
		deepseek3(&o, msgs, n, add_assistant);
		break;
	case SHX_CHAT_N:
		break;
	}
	if (len)
		buf[o.n < o.len ? o.n : o.len] = 0;
	return (ssize_t)o.n;
}
