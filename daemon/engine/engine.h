/* SPDX-License-Identifier: MIT */
/*
 * The job engine: attach to a backend (the module or a broker, through
 * libsyshax-rt), fetch a batch, map the buffers it references, run it,
 * unmap, complete. Any number of engines may serve one backend.
 */
#ifndef SHXD_ENGINE_H
#define SHXD_ENGINE_H

#include <signal.h>

#include "syshax/rt.h"

struct shxd_cpu;

/* Most jobs one fetch takes. */
#define SHXD_ENGINE_BATCH	64

struct shxd_engine_conf {
	enum syshax_backend backend;	/* SYSHAX_BACKEND_AUTO: as syshax_open */
	const char *path;		/* NULL: the backend's default */
	int node;			/* NUMA node to run on, -1: any */
	/* How long to retry opening while the backend is not up yet. */
	unsigned int connect_ms;
	/* With shared rings: µs to spin on them before sleeping. */
	unsigned int poll_us;
	struct shxd_cpu *cpu;		/* runs the compute ops (shared) */
	/* Called once this engine is attached (readiness), may be NULL. */
	void (*attached)(void);
};

/*
 * Serves jobs in the calling thread until *stop is set (checked at least
 * every 100 ms) or the backend goes away. Returns 0 when stopped, else the
 * -errno that ended it (open, attach, or a lost backend).
 */
int shxd_engine_run(const struct shxd_engine_conf *conf,
		    volatile sig_atomic_t *stop);

#endif /* SHXD_ENGINE_H */
