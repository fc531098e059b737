// SPDX-License-Identifier: MIT
/*
 * tests/text/chat_ut: chat templates (text/chat.c) recognised from the
 * models' own template text and rendered byte for byte as llama.cpp's
 * llama_chat_apply_template() renders them (libllama from build/ggml or
 * argv[1], tools/lib/llama_peer.h). Without libllama the comparison says
 * SKIP and the program exits 77 once the rest has passed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "chat_templates.h"
#include "llama_peer.h"

#include "../t_cunit.h"

static struct llp *g_llp;
static char g_llp_err[512];

static const struct {
	const char *model, *tmpl;
	enum shx_chat_tmpl want;
} g_models[] = {
	{ "Qwen2.5-7B-Instruct", t_qwen25, SHX_CHAT_CHATML },
	{ "Qwen3-8B", t_qwen3, SHX_CHAT_CHATML },
	{ "DeepSeek-R1-Distill-Qwen-7B", t_r1_distill, SHX_CHAT_DEEPSEEK3 },
	{ "Meta-Llama-3-8B-Instruct", t_llama3, SHX_CHAT_LLAMA3 },
	{ "Llama-2-7b-chat", t_llama2, SHX_CHAT_LLAMA2_SYS_STRIP },
	{ "Mistral-7B-Instruct-v0.1", t_mistral_v1, SHX_CHAT_MISTRAL_V1 },
	{ "Mistral-7B-Instruct-v0.3", t_mistral_v3, SHX_CHAT_MISTRAL_V3 },
};

#define MSGS(...) { (const struct shx_chat_msg[]){ __VA_ARGS__ },	\
		    sizeof((const struct shx_chat_msg[]){ __VA_ARGS__ }) / \
		    sizeof(struct shx_chat_msg) }

static const struct {
	const struct shx_chat_msg *m;
	size_t n;
} g_convs[] = {
	MSGS({ "user", "Hello" }),
	MSGS({ "system", "You are a helpful assistant" }, { "user", "Hello" }),
	MSGS({ "system", "You are a helpful assistant" }, { "user", "Hello" },
	     { "assistant", "Hi there" }, { "user", "Who are you" },
	     { "assistant", "   I am an assistant   " },
	     { "user", "Another question" }),
	MSGS({ "user", "Hi" }, { "assistant", " \t\n" }, { "user", "" }),
	MSGS({ "system", "" }, { "user", "" }),
	MSGS({ "system", "Réponds en français. 日本語も。" },
	     { "user", "  Привет, мир! 🐢\n" }, { "assistant", "Ça va — 你好 😀" },
	     { "user", "\xc2\xa0nbsp\xc2\xa0" }),
	/* Qwen3 and R1: earlier thinking as the client sends it back */
	MSGS({ "user", "2+2?" },
	     { "assistant", "<think>\nadd them\n</think>\n\n4" },
	     { "user", "and 3+3?" }),
	MSGS({ "user", "one" }, { "assistant", "two" }),
};

/* Ours and llama.cpp's of one conversation under tmpl (a text or a name). */
static void t_same(const char *what, const char *tmpl, enum shx_chat_tmpl t,
		   size_t c, bool add)
{
	static char ours[8192], theirs[8192];
	ssize_t n = shx_chat_apply(t, g_convs[c].m, g_convs[c].n, add, ours,
				   sizeof(ours));
	int r = llp_chat_apply(g_llp, tmpl,
			       (const struct llp_chat_msg *)g_convs[c].m,
			       g_convs[c].n, add, theirs, sizeof(theirs));

	CU_ASSERT_FATAL(n >= 0 && (size_t)n < sizeof(ours));
	CU_ASSERT_FATAL(r >= 0 && (size_t)r < sizeof(theirs));
	CU_ASSERT_EQUAL(n, r);
	CU_ASSERT(!memcmp(ours, theirs, (size_t)n));
	if (n != r || memcmp(ours, theirs, (size_t)n))
		printf("\n  %s, conversation %zu, add %d:\n  ours   [%.*s]\n  llama  [%.*s]\n",
		       what, c, add, (int)n, ours, r, theirs);
}

_Static_assert(sizeof(struct llp_chat_msg) == sizeof(struct shx_chat_msg),
	       "messages passed to libllama as they are");

static void test_detect_models(void)
{
	for (size_t i = 0; i < sizeof(g_models) / sizeof(g_models[0]); i++) {
		enum shx_chat_tmpl t = SHX_CHAT_N;

		CU_ASSERT_EQUAL(shx_chat_detect(g_models[i].tmpl, &t), 0);
		CU_ASSERT_EQUAL(t, g_models[i].want);
		if (t != g_models[i].want)
			printf("\n  %s: %s\n", g_models[i].model,
			       shx_chat_name(t) ? shx_chat_name(t) : "none");
	}
}

static void test_unknown(void)
{
	static const char *const none[] = {
		t_gemma2, t_phi4, "", "hello {{ messages }}",
		/* zephyr: claimed before llama3's markers are looked at */
		"<|user|>{{ x }}<|endoftext|><|start_header_id|><|end_header_id|>",
	};
	enum shx_chat_tmpl t;

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		CU_ASSERT_EQUAL(shx_chat_detect(none[i], &t), -ENOENT);
	CU_ASSERT_EQUAL(shx_chat_detect(NULL, &t), -ENOENT);
	CU_ASSERT_EQUAL(shx_chat_by_name("gemma", &t), -ENOENT);
	CU_ASSERT_EQUAL(shx_chat_by_name(NULL, &t), -ENOENT);
	CU_ASSERT_PTR_NULL(shx_chat_name(SHX_CHAT_N));
}

static void test_names(void)
{
	for (int i = 0; i < SHX_CHAT_N; i++) {
		enum shx_chat_tmpl t = SHX_CHAT_N, d = SHX_CHAT_N;
		const char *name = shx_chat_name((enum shx_chat_tmpl)i);

		CU_ASSERT_PTR_NOT_NULL_FATAL(name);
		CU_ASSERT_EQUAL(shx_chat_by_name(name, &t), 0);
		CU_ASSERT_EQUAL(t, i);
		/* a name given as the template text, as llama.cpp takes it */
		CU_ASSERT_EQUAL(shx_chat_detect(name, &d), 0);
		CU_ASSERT_EQUAL(d, i);
	}
}

/* snprintf semantics, and the roles a template cannot take. */
static void test_apply_edges(void)
{
	const struct shx_chat_msg m[] = { { "user", "Hello" } };
	const struct shx_chat_msg tool[] = { { "tool", "42" } };
	const struct shx_chat_msg null[] = { { "user", NULL } };
	char full[64], small[8];
	ssize_t n = shx_chat_apply(SHX_CHAT_CHATML, m, 1, true, full,
				   sizeof(full));

	CU_ASSERT_EQUAL(n, (ssize_t)strlen(full));
	CU_ASSERT_EQUAL(shx_chat_apply(SHX_CHAT_CHATML, m, 1, true, NULL, 0), n);
	memset(small, 'x', sizeof(small));
	CU_ASSERT_EQUAL(shx_chat_apply(SHX_CHAT_CHATML, m, 1, true, small,
				       sizeof(small)), n);
	CU_ASSERT(!memcmp(small, full, 7) && !small[7]);
	CU_ASSERT_EQUAL(shx_chat_apply(SHX_CHAT_CHATML, m, 0, false, full,
				       sizeof(full)), 0);
	CU_ASSERT_EQUAL(full[0], 0);
	CU_ASSERT(shx_chat_apply(SHX_CHAT_CHATML, tool, 1, false, full,
				 sizeof(full)) > 0);
	CU_ASSERT(shx_chat_apply(SHX_CHAT_LLAMA3, tool, 1, false, full,
				 sizeof(full)) > 0);
	for (int t = SHX_CHAT_LLAMA2; t < SHX_CHAT_N; t++)
		CU_ASSERT_EQUAL(shx_chat_apply((enum shx_chat_tmpl)t, tool, 1,
					       false, full, sizeof(full)),
				-EINVAL);
	CU_ASSERT_EQUAL(shx_chat_apply(SHX_CHAT_CHATML, null, 1, false, full,
				       sizeof(full)), -EINVAL);
	CU_ASSERT_EQUAL(shx_chat_apply(SHX_CHAT_N, m, 1, false, full,
				       sizeof(full)), -EINVAL);
}

static bool t_peer(void)
{
	if (g_llp)
		return true;
	printf("\n  SKIP: %s ", g_llp_err);
	return false;
}

/* The models' template text: llama.cpp's family and rendering. */
static void test_llama_models(void)
{
	if (!t_peer())
		return;
	for (size_t i = 0; i < sizeof(g_models) / sizeof(g_models[0]); i++)
		for (size_t c = 0; c < sizeof(g_convs) / sizeof(g_convs[0]); c++)
			for (int add = 0; add < 2; add++)
				t_same(g_models[i].model, g_models[i].tmpl,
				       g_models[i].want, c, add);
}

/* Every family by name, the variants no model above ships too. */
static void test_llama_names(void)
{
	if (!t_peer())
		return;
	for (int t = 0; t < SHX_CHAT_N; t++)
		for (size_t c = 0; c < sizeof(g_convs) / sizeof(g_convs[0]); c++)
			for (int add = 0; add < 2; add++)
				t_same(shx_chat_name((enum shx_chat_tmpl)t),
				       shx_chat_name((enum shx_chat_tmpl)t),
				       (enum shx_chat_tmpl)t, c, add);
}

/* What we call unknown, llama.cpp does not render as one of ours. */
static void test_llama_unknown(void)
{
	static char buf[4096];
	const struct llp_chat_msg m[] = { { "user", "Hello" } };

	if (!t_peer())
		return;
	CU_ASSERT_EQUAL(llp_chat_apply(g_llp, "hello {{ messages }}", m, 1, 1,
				       buf, sizeof(buf)), -ENOENT);
	CU_ASSERT(llp_chat_apply(g_llp, t_phi4, m, 1, 1, buf, sizeof(buf)) > 0);
	CU_ASSERT(strstr(buf, "<|im_sep|>") != NULL);
}

int main(int argc, char **argv)
{
	static const struct t_test tests[] = {
		{ "the models' templates are recognised", test_detect_models },
		{ "other templates are -ENOENT", test_unknown },
		{ "names", test_names },
		{ "snprintf semantics, bad roles", test_apply_edges },
		{ "the models' templates render as llama.cpp's", test_llama_models },
		{ "every family by name renders as llama.cpp's", test_llama_names },
		{ "unknown to us is not ours to llama.cpp", test_llama_unknown },
	};
	const char *dir = argc > 1 && *argv[1] ? argv[1] : "build/ggml";
	int rc;

	if (llp_open(&g_llp, dir, g_llp_err, sizeof(g_llp_err)))
		g_llp = NULL;
	rc = T_RUN_SUITE("chat", NULL, NULL, tests);
	llp_close(g_llp);
	if (!rc && !g_llp) {
		printf("SKIP: the comparison with llama.cpp: %s\n", g_llp_err);
		return 77;
	}
	return rc;
}
