// SPDX-License-Identifier: MIT
/* The dispatch rule and the CPU's decode-rate window (dispatch.h). */
#include "dispatch.h"

enum shxd_side shxd_dispatch(const struct shxd_dispatch_in *in,
			     enum shxd_why *why)
{
	float cpu, xpu;

	if (!in->xpu_running) {
		*why = SHXD_WHY_XPU_IDLE;
		return SHXD_SIDE_XPU;
	}
	if (!in->cpu_running) {
		*why = SHXD_WHY_CPU_IDLE;
		return SHXD_SIDE_CPU;
	}
	if (in->cpu_running >= in->max_batch) {
		*why = SHXD_WHY_CPU_FULL;
		return SHXD_SIDE_XPU;
	}
	cpu = in->cpu_tps / (float)in->cpu_running;
	xpu = in->xpu_tps / (float)in->xpu_running;
	if (cpu < SHXD_DISPATCH_SLOW_TPS && xpu < SHXD_DISPATCH_SLOW_TPS) {
		*why = SHXD_WHY_BOTH_SLOW;
		return in->cpu_running < in->xpu_running ? SHXD_SIDE_CPU :
							   SHXD_SIDE_XPU;
	}
	*why = SHXD_WHY_FASTER;
	return cpu > xpu ? SHXD_SIDE_CPU : SHXD_SIDE_XPU;
}

void shxd_load_add(struct shxd_load *l, uint64_t t0, uint64_t t1,
		   unsigned int rows)
{
	l->b[l->next].t0 = t0;
	l->b[l->next].t1 = t1;
	l->b[l->next].rows = rows;
	l->next = (l->next + 1) % SHXD_LOAD_SLOTS;
	if (l->count < SHXD_LOAD_SLOTS)
		l->count++;
}

void shxd_load_get(const struct shxd_load *l, uint64_t now,
		   unsigned int *running, float *tps)
{
	uint64_t busy = 0, tokens = 0;

	*running = 0;
	*tps = 0.0f;
	for (unsigned int i = 0; i < l->count; i++) {
		unsigned int s = (l->next + SHXD_LOAD_SLOTS - 1 - i) %
				 SHXD_LOAD_SLOTS;

		if (l->b[s].t1 > now || now - l->b[s].t1 > SHXD_DISPATCH_WINDOW_NS)
			break;
		if (!i)
			*running = l->b[s].rows;
		tokens += l->b[s].rows;
		busy += l->b[s].t1 - l->b[s].t0;
	}
	if (tokens && busy)
		*tps = (float)((double)tokens * 1e9 / (double)busy);
}
