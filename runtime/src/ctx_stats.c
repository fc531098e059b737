// SPDX-License-Identifier: MIT
/* syshax_ctx_stats(): CTX_STATS on either backend. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "rt_int.h"

int syshax_ctx_stats(struct syshax *sh, struct syshax_ctx_stat *ctxs,
		     unsigned int max, unsigned int *total)
{
	struct syshax_ctx_stats_args a;
	int ret;

	if (!sh || (max && !ctxs))
		return -EINVAL;
	if (!sh->be->ctx_stats || !(sh->ver.features & SYSHAX_FEAT_CTX_STATS))
		return -EOPNOTSUPP;
	memset(&a, 0, sizeof(a));
	a.ctxs = (uint64_t)(uintptr_t)ctxs;
	a.max = max;
	ret = sh->be->ctx_stats(sh, &a);
	if (ret < 0)
		return ret;
	if (total)
		*total = a.total;
	return (int)a.nr;
}
