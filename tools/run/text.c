// SPDX-License-Identifier: MIT
/*
 * syshax-run's text side (run.h): -p's prompt tokenized with the model's
 * own tokenizer (text/tokenizer.h, read from the same GGUF), as llama.cpp's
 * tools do (BOS as the vocabulary asks, special-token text parsed), and
 * the generated ids decoded as they come, never half a UTF-8 character.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define PROG "syshax-run"

int text_open(struct run_text *t, const char *model)
{
	char err[256];
	int ret;

	memset(t, 0, sizeof(*t));
	ret = shx_tok_open(model, &t->tok, err, sizeof(err));
	if (ret)
		fprintf(stderr, PROG ": -p needs the model's tokenizer: %s\n",
			err);
	/* the generated text continues the prompt: keep its first space */
	else
		shx_detok_init(&t->d, t->tok, SHX_DETOK_CONTINUE);
	return ret;
}

int text_prompt(struct run_text *t, const char *s, struct run_opts *o)
{
	const unsigned int flags = SHX_TOK_ADD_SPECIAL | SHX_TOK_PARSE_SPECIAL;
	ssize_t n = shx_tok_encode(t->tok, s, strlen(s), flags, NULL, 0);

	if (n == 0) {
		fprintf(stderr, PROG ": -p: the prompt gives no tokens\n");
		return -EINVAL;
	}
	if (n > 0 && n > 65536)
		n = -E2BIG;
	if (n > 0 && !(o->prompt = calloc((size_t)n, sizeof(*o->prompt))))
		n = -ENOMEM;
	if (n > 0)
		n = shx_tok_encode(t->tok, s, strlen(s), flags, o->prompt,
				   (size_t)n);
	if (n < 0) {
		fprintf(stderr, PROG ": -p: %s\n", strerror((int)-n));
		return (int)n;
	}
	o->plen = (unsigned int)n;
	return 0;
}

void text_step(void *arg, const int32_t *tokens, unsigned int step)
{
	struct run_text *t = arg;
	ssize_t n;

	if (!t->stream)
		return;
	/* < 0 (no memory): the piece is lost, the run goes on */
	n = shx_detok_next(&t->d, tokens[step], &t->buf, &t->cap);
	if (n > 0) {
		fwrite(t->buf, 1, (size_t)n, stdout);
		fflush(stdout);
	}
}

void text_close(struct run_text *t)
{
	shx_tok_free(t->tok);
	t->tok = NULL;
	free(t->buf);
	t->buf = NULL;
}
