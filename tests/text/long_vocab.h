/* SPDX-License-Identifier: MIT */
/*
 * A byte-level BPE vocabulary whose pieces outgrow fixed buffers: one of
 * LONG_A_LEN 'a's and one of BAD_LEN bytes 0x80 (each its own U+FFFD when
 * decoded: three times its length), for the tokenizer's and the server's
 * tests.
 */
#ifndef T_LONG_VOCAB_H
#define T_LONG_VOCAB_H

#include <stddef.h>

enum { LV_A, LV_AA, LV_LONG_A, LV_BAD, LV_EOT, LV_N };

#define LONG_A_LEN 300
#define BAD_LEN 100

/* The vocabulary as a GGUF image (malloc'ed), or NULL. */
void *long_vocab_image(size_t *len);

#endif
