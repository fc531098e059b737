// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Picks the ISA variant once: SYSHAX_ISA when set, else the best the
 * arch's cpu-feats.c reports. Later calls return the first call's result.
 */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

static const struct shxk_ops *g_ops = &shxk_ops_generic;
static int g_init_err;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_once(void)
{
	const char *want = getenv("SYSHAX_ISA");
	const struct shxk_ops *ops;

	if (want && !*want)
		want = NULL;
	ops = shxk_cpu_select(want, &g_init_err);
	if (ops)
		g_ops = ops;
}

int shxk_init(void)
{
	pthread_once(&g_once, init_once);
	return g_init_err;
}

const char *shxk_isa_name(void)
{
	return g_ops->name;
}

const struct shxk_ops *shxk_ops_current(void)
{
	return g_ops;
}
