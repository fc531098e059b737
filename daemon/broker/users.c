// SPDX-License-Identifier: MIT
/*
 * Per-uid accounting: what each user's contexts hold in the broker, so
 * one user cannot take every descriptor, buffer or byte the daemon has.
 * Buffers are charged to the uid that created them (as the module charges
 * its user_struct), for as long as they live, whoever else imports them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "broker_int.h"

struct bk_user *bk_user_get(struct shxd_broker *b, uid_t uid)
{
	struct bk_user *u;

	for (u = b->users; u; u = u->next)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = b->users;
	b->users = u;
	return u;
}

void bk_user_idle(struct shxd_broker *b, struct bk_user *u)
{
	struct bk_user **p;

	if (u->nr_conns || u->nr_bufs || u->pinned || u->nr_jobs)
		return;
	for (p = &b->users; *p; p = &(*p)->next)
		if (*p == u) {
			*p = u->next;
			free(u);
			return;
		}
}

/* CAP_IPC_LOCK in the process's effective set, from /proc. */
static int has_ipc_lock(pid_t pid)
{
	char path[64], line[256];
	unsigned long long caps;
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			ret = !!(caps & (1ULL << 14));	/* CAP_IPC_LOCK */
			break;
		}
	fclose(f);
	return ret;
}

/* The soft RLIMIT_MEMLOCK of pid from /proc (which needs no privilege,
 * where prlimit() needs CAP_SYS_RESOURCE): 0, or -1 when unreadable. */
static int proc_memlock(pid_t pid, uint64_t *bytes)
{
	char path[64], line[256], soft[32];
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Max locked memory %31s", soft) == 1) {
			*bytes = strcmp(soft, "unlimited") ? strtoull(soft, NULL, 10) :
				 UINT64_MAX;
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}

/*
 * The client's RLIMIT_MEMLOCK, read when its context opens, as the module
 * reads the caller's. A user serving itself (the daemon's own uid) and a
 * process with CAP_IPC_LOCK have none. When the client's limit cannot be
 * read, the daemon's own applies.
 */
uint64_t bk_client_memlock(const struct shxd_broker *b, pid_t pid, uid_t uid)
{
	struct rlimit rl;
	uint64_t bytes;

	if (uid == b->euid || has_ipc_lock(pid))
		return UINT64_MAX;
	if (!proc_memlock(pid, &bytes))
		return bytes;
	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		return 0;
	return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
}

/* used + add > cap, without overflow. */
static int over(uint64_t used, uint64_t add, uint64_t cap)
{
	return used > cap || add > cap - used;
}

/*
 * Whether c may have one more buffer of size bytes charged to its user:
 * the user's buffer count, then its bytes against the per-user cap and
 * the client's RLIMIT_MEMLOCK, then the daemon-wide cap.
 */
int bk_user_may_pin(const struct shxd_broker *b, const struct bk_conn *c,
		    uint64_t size)
{
	const struct bk_user *u = c->user;

	if (u->nr_bufs >= b->conf.max_bufs_user)
		return -ENOSPC;
	if (over(u->pinned, size, b->conf.max_pinned_user_bytes) ||
	    over(u->pinned, size, c->memlock) ||
	    over(b->pinned + b->reserved, size, b->conf.max_pinned_bytes))
		return -ENOMEM;
	return 0;
}
