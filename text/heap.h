/* SPDX-License-Identifier: MIT */
/*
 * A binary heap in an array the caller sizes, for the tokenizers' merge
 * queues (bpe.c, spm.c): HEAP_DEFINE(name, T, before) defines
 *
 *	static void name_push(T *heap, size_t *n, T x);
 *	static T name_pop(T *heap, size_t *n);	// *n > 0
 *
 * where before(const T *a, const T *b) says a comes out first. Typed
 * functions, not callbacks: the merge loops call them per pair.
 */
#ifndef SHX_TEXT_HEAP_H
#define SHX_TEXT_HEAP_H

#include <stddef.h>

#define HEAP_DEFINE(name, T, before)					\
static void name##_push(T *h, size_t *np, T x)				\
{									\
	size_t i = (*np)++;						\
									\
	while (i && before(&x, &h[(i - 1) / 2])) {			\
		h[i] = h[(i - 1) / 2];					\
		i = (i - 1) / 2;					\
	}								\
	h[i] = x;							\
}									\
									\
static T name##_pop(T *h, size_t *np)					\
{									\
	T top = h[0], last = h[--(*np)];				\
	size_t i = 0, n = *np;						\
									\
	for (;;) {							\
		size_t c = 2 * i + 1;					\
									\
		if (c >= n)						\
			break;						\
		if (c + 1 < n && before(&h[c + 1], &h[c]))		\
			c++;						\
		if (!before(&h[c], &last))				\
			break;						\
		h[i] = h[c];						\
		i = c;							\
	}								\
	if (n)								\
		h[i] = last;						\
	return top;							\
}

#endif /* SHX_TEXT_HEAP_H */
