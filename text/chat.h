/* SPDX-License-Identifier: MIT */
/*
 * Chat templates: a conversation as the prompt text a model was trained
 * on, for the families of tokenizer.chat_template users run, rendered as
 * llama.cpp's llama_chat_apply_template() renders them (not a Jinja
 * interpreter: the family is recognised from the template's text, as
 * llama.cpp's llm_chat_detect_template() does). docs/text.md, "Chat
 * templates".
 */
#ifndef SHX_CHAT_H
#define SHX_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum shx_chat_tmpl {
	SHX_CHAT_CHATML,		/* Qwen2/2.5, Qwen3 */
	SHX_CHAT_LLAMA3,
	SHX_CHAT_LLAMA2,		/* [INST], no system prompt */
	SHX_CHAT_MISTRAL_V1,
	SHX_CHAT_LLAMA2_SYS,		/* [INST] <<SYS>> */
	SHX_CHAT_LLAMA2_SYS_BOS,	/* <s> before each later [INST] */
	SHX_CHAT_LLAMA2_SYS_STRIP,	/* contents trimmed (Llama-2-chat) */
	SHX_CHAT_MISTRAL_V3,
	SHX_CHAT_MISTRAL_V3_TEKKEN,
	SHX_CHAT_MISTRAL_V7,
	SHX_CHAT_MISTRAL_V7_TEKKEN,
	SHX_CHAT_DEEPSEEK3,		/* DeepSeek-V3, R1 and R1-Distill */
	SHX_CHAT_N,
};

/* From the template's text (or a name, as llama.cpp accepts); -ENOENT:
 * none we apply, including families llama.cpp knows and we do not. */
int shx_chat_detect(const char *tmpl_text, enum shx_chat_tmpl *t);

/* llama.cpp's names: "chatml", "llama3", "llama2", "llama2-sys",
 * "mistral-v1", "deepseek3", ...; -ENOENT. */
int shx_chat_by_name(const char *name, enum shx_chat_tmpl *t);

/* The name, or NULL for a value outside the enum. */
const char *shx_chat_name(enum shx_chat_tmpl t);

struct shx_chat_msg {
	const char *role;
	const char *content;
};

/*
 * snprintf semantics: the bytes the prompt takes (the NUL not counted),
 * at most len - 1 of them written and NUL-terminated when len > 0.
 * -EINVAL: a NULL role or content, a role the template cannot take
 * (roles other than system/user/assistant, but in chatml and llama3), or
 * t outside the enum.
 */
ssize_t shx_chat_apply(enum shx_chat_tmpl t, const struct shx_chat_msg *msgs,
		       size_t n, bool add_assistant, char *buf, size_t len);

#endif
