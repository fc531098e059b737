// SPDX-License-Identifier: MIT
/*
 * CTX_STATS on syshaxd's broker: one struct syshax_ctx_stat per connection,
 * with the same fields as the module's (kmod/broker.c). The pid and uid
 * are the peer's SO_PEERCRED at connect; the command name comes from
 * /proc/<pid>/comm, read at the first CTX_STATS that lists the connection.
 * The reply carries the array after the args (runtime/src/proto.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_int.h"
#include "proto.h"

static void read_comm(struct bk_conn *c)
{
	char path[32];
	ssize_t n = -1;
	int fd;

	if (c->comm[0])
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)c->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, c->comm, sizeof(c->comm) - 1);
		close(fd);
	}
	if (n <= 0) {
		strcpy(c->comm, "?");
		return;
	}
	c->comm[n] = 0;
	c->comm[strcspn(c->comm, "\n")] = 0;
	if (!c->comm[0])
		strcpy(c->comm, "?");
}

static void fill_one(struct bk_conn *c, const struct bk_conn *self,
		     struct syshax_ctx_stat *s)
{
	uint32_t i;

	memset(s, 0, sizeof(*s));
	read_comm(c);
	s->ctx_id = c->id;
	s->pid = (int32_t)c->pid;
	s->uid = (uint32_t)c->uid;
	s->flags = (c->engine ? SYSHAX_CTX_ENGINE : 0) |
		   (c->ring ? SYSHAX_CTX_RING : 0) |
		   (c == self ? SYSHAX_CTX_SELF : 0);
	memcpy(s->comm, c->comm, sizeof(s->comm));
	for (i = 0; i < c->handles.map.cap; i++) {
		const struct shxd_membuf *mb = c->handles.map.vals[i];

		if (!c->handles.map.keys[i])
			continue;
		s->nr_bufs++;
		s->buf_bytes += mb->size;
	}
	s->jobs_submitted = c->st_submitted;
	s->jobs_completed = c->st_completed;
	s->jobs_failed = c->st_failed;
	s->eng_done = c->st_eng_done;
}

void bk_ctx_stats(struct shxd_broker *b, struct bk_conn *c,
		  struct syshax_ctx_stats_args *a)
{
	struct syshax_ctx_stat *v = NULL;
	struct bk_conn *o;
	unsigned int n = 0, max = a->max, i;

	if (a->flags || a->reserved[0] || a->reserved[1]) {
		bk_reply(c, -EINVAL, a, sizeof(*a), NULL, 0, -1);
		return;
	}
	/* Jobs waiting in rings count as queued, as in STATS. */
	bk_rings_run(b);
	if (max > SHRT_MAX_CTX_STATS)
		max = SHRT_MAX_CTX_STATS;
	a->total = 0;
	for (o = b->conns; o; o = o->next)
		a->total++;
	if (max > a->total)
		max = a->total;
	if (max) {
		v = calloc(max, sizeof(*v));
		if (!v) {
			bk_reply(c, -ENOMEM, a, sizeof(*a), NULL, 0, -1);
			return;
		}
	}
	/* The caller first, so a short array still shows it. */
	if (max)
		c->st_idx = n++;
	for (o = b->conns; o; o = o->next) {
		if (o == c)
			continue;
		o->st_idx = n < max ? n++ : UINT32_MAX;
	}
	for (o = b->conns; o; o = o->next)
		if (o->st_idx < n)
			fill_one(o, c, &v[o->st_idx]);
	/* One pass over the job slots: queued and held, by owner and
	 * by engine. */
	for (i = 0; i < b->conf.max_jobs_global && n; i++) {
		const struct bk_job *j = &b->slots[i];

		if (j->state == BJ_FREE)
			continue;
		if (j->owner && j->owner->st_idx < n) {
			if (j->state == BJ_QUEUED)
				v[j->owner->st_idx].jobs_queued++;
			else
				v[j->owner->st_idx].jobs_inflight++;
		}
		if (j->state == BJ_HELD && j->engine && j->engine->st_idx < n)
			v[j->engine->st_idx].eng_held++;
	}
	a->nr = n;
	bk_reply(c, 0, a, sizeof(*a), v, n * sizeof(*v), -1);
	free(v);
}
