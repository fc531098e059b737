// SPDX-License-Identifier: MIT
#include "long_vocab.h"

#include <stdint.h>
#include <string.h>

#include "wfile.h"

void *long_vocab_image(size_t *len)
{
	/* U+0122 is byte 0x80 in GPT-2's byte-to-character table */
	static char long_a[LONG_A_LEN + 1], bad[2 * BAD_LEN + 1];
	static const char *tok[LV_N] = {
		"a", "aa", long_a, bad, "<|endoftext|>",
	};
	static const int32_t type[LV_N] = { 1, 1, 1, 1, 3 };
	static const char *const merges[] = { "a a" };
	static const struct wf_wkv kv[] = {
		WF_KV_STR("general.architecture", "gpt2"),
		WF_KV_STR("tokenizer.ggml.model", "gpt2"),
		WF_KV_STR("tokenizer.ggml.pre", "gpt-2"),
		WF_KV_STRS("tokenizer.ggml.tokens", tok, LV_N),
		WF_KV_ARR("tokenizer.ggml.token_type", WF_GGUF_I32, type,
			  LV_N),
		WF_KV_STRS("tokenizer.ggml.merges", merges, 1),
		WF_KV_U32("tokenizer.ggml.eos_token_id", LV_EOT),
	};

	memset(long_a, 'a', LONG_A_LEN);
	for (size_t i = 0; i < BAD_LEN; i++)
		memcpy(bad + 2 * i, "\xc4\xa2", 2);
	return wf_gguf_image(kv, sizeof(kv) / sizeof(kv[0]), NULL, 0, len);
}
