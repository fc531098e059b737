/* SPDX-License-Identifier: MIT */
/* The userspace broker's state, shared by broker.c (sockets, buffers,
 * requests) and bjobs.c (the job queue, engines, completions). Single
 * threaded: everything runs in shxd_broker_run()'s thread. */
#ifndef SHXD_BROKER_INT_H
#define SHXD_BROKER_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "broker.h"
#include "cpl_check.h"
#include "hmap.h"
#include "membuf.h"
#include "syshax.h"

struct bk_export;

/* What an epoll event points at. */
struct bk_tag {
	int kind;		/* BK_LISTEN, BK_REQ, BK_EV, BK_POP, BK_EXP */
	union {
		struct bk_conn *c;
		struct bk_export *x;
	};
};

enum { BK_LISTEN, BK_REQ, BK_EV, BK_POP, BK_EXP };

/* A request answered later (bk_buf_alloc), not an errno. */
#define BK_PENDING	1

/* Handles run cyclically over 1..SHXD_HANDLE_MAX, as the module's. */
#define SHXD_HANDLE_MAX		4194303U

/* A connection's handles (handles.c). */
struct bk_handles {
	struct shrt_hmap map;	/* handle -> struct shxd_membuf */
	uint32_t next;		/* the last number handed out */
};

/* What one uid holds (users.c); freed when it holds nothing. */
struct bk_user {
	struct bk_user *next;
	uid_t uid;
	unsigned int nr_conns;
	/* Buffers charged to it (allocations running too) and the fds it
	 * exported: each holds a descriptor in the daemon. */
	unsigned int nr_bufs;
	uint64_t pinned;	/* bytes of those */
	unsigned int nr_jobs;	/* queued or held, of all its contexts */
	int full;		/* nr_jobs reached max_jobs_user */
};

struct bk_pending;

/* One connection: a client context, and an engine once attached. */
struct bk_conn {
	struct bk_conn *next, *prev;	/* b->conns */
	int fd;				/* request socket */
	int evfd;			/* our end of the event socket */
	struct bk_tag req_tag, ev_tag;
	uint32_t id;			/* ctx_id */
	pid_t pid;
	uid_t uid;
	gid_t gid;
	struct bk_user *user;		/* uid's */
	uint64_t memlock;		/* its RLIMIT_MEMLOCK; UINT64_MAX: none */
	/* CTX_STATS (bstats.c): counters since it connected, the opener's
	 * command (read once from /proc), a scratch index. */
	uint64_t st_submitted, st_completed, st_failed, st_eng_done;
	char comm[16];
	unsigned int st_idx;
	int broken;			/* a send failed: close it */
	int dead;			/* closed, freed after this round */

	struct bk_handles handles;
	struct bk_pending *pending;	/* a BUF_ALLOC being populated */
	struct bk_ring *ring;		/* RING_SETUP's (brings.c) */
	/* An engine on the rings: ids it mapped -> the buffer, or a mark
	 * once freed until its BUF_GONE note is in the ring (nr_gone). */
	struct shrt_hmap mapped;
	unsigned int nr_gone;

	/* max_jobs_ctx counts nr_jobs + nr_cpls + in_sock. The client's
	 * own reaped count is not trusted: in_sock comes from the event
	 * socket's send queue (SIOCOUTQ), ev_msg_bytes per completion. */
	unsigned int nr_jobs;		/* queued or held */
	/* Completions not yet written to the event socket (a ring). */
	struct syshax_completion *cpls;
	unsigned int cpl_head, nr_cpls, cap_cpls;
	unsigned int in_sock;		/* written, not yet reaped */
	unsigned int ev_msg_bytes;	/* SIOCOUTQ of one unread message */
	int ev_out;			/* EPOLLOUT armed on evfd */

	/* Engine side. */
	int engine;
	int note_sent;			/* a "jobs queued" note is unread */
	int fetch_parked;
	struct bk_conn *fnext;		/* b->parked list */
	uint32_t fetch_max;
	int64_t fetch_end;		/* ns; < 0: none */
};

/* A job slot; token = generation << 32 | slot index. */
struct bk_job {
	struct bk_job *next, *prev;	/* queue or free list */
	int state;			/* BJ_FREE, BJ_QUEUED, BJ_HELD */
	struct bk_conn *owner;		/* NULL once the owner closed */
	struct bk_user *user;		/* the submitter's, charged */
	struct bk_conn *engine;
	struct shxd_membuf *bufs[SYSHAX_JOB_MAX_REFS];
	uint64_t submit_ns;
	struct syshax_engine_job ej;	/* refs hold global ids */
};

enum { BJ_FREE, BJ_QUEUED, BJ_HELD };

struct shxd_broker {
	struct shxd_broker_conf conf;
	char path[108];
	int made_dir;			/* create made path's directory */
	int lfd, epfd;
	int spare_fd;			/* given up to refuse at EMFILE */
	struct bk_tag listen_tag;
	uid_t euid;
	struct bk_conn *conns;
	struct bk_conn *dead;		/* closed this round, via next */
	void *rx;			/* one request (SHRT_MAX_MSG) */
	uint32_t next_ctx_id, next_engine_id;

	struct bk_user *users;

	/* Buffers alive (membuf.refs > 0), for import and stats. */
	struct shxd_membuf **bufs;
	size_t nr_bufs, cap_bufs;
	uint64_t next_buf_id;
	uint64_t pinned;
	uint64_t reserved;		/* by allocations running */
	struct bk_pending *pending;
	int pop_pipe[2];		/* their threads post here */
	struct bk_tag pop_tag;
	struct bk_export *exports;	/* exported fds alive */
	struct bk_ring *dirty;		/* rings with out entries to publish */

	/* Jobs. */
	struct bk_job *slots;
	struct bk_job *free_list;
	struct bk_job *q_head, *q_tail;
	struct bk_conn *parked;		/* engines with a fetch waiting */
	unsigned int nr_active;		/* queued or held */
	int rings_full;			/* SYSHAX_RING_FULL is set */

	struct syshax_job_stats st;
};

/* Sends a reply (header, args, array, optional fd); a peer that cannot
 * take it is marked broken and closed by the loop. */
void bk_reply(struct bk_conn *c, int ret, const void *args, size_t args_len,
	      const void *extra, size_t extra_len, int fd);

/* handles.c: -ENOSPC when all numbers are live, -ENOMEM. */
int bk_handle_add(struct bk_handles *h, struct shxd_membuf *mb,
		  uint32_t *handle);
struct shxd_membuf *bk_handle_get(const struct bk_handles *h, uint64_t handle);
/* Removes handle; returns its buffer, NULL if it was not live. */
struct shxd_membuf *bk_handle_del(struct bk_handles *h, uint64_t handle);

/* users.c */
/* uid's record, made when missing (NULL: no memory). */
struct bk_user *bk_user_get(struct shxd_broker *b, uid_t uid);
/* Frees u when it holds nothing. */
void bk_user_idle(struct shxd_broker *b, struct bk_user *u);
uint64_t bk_client_memlock(const struct shxd_broker *b, pid_t pid, uid_t uid);
/* 0, -ENOSPC (max_bufs_user) or -ENOMEM (a byte cap). */
int bk_user_may_pin(const struct shxd_broker *b, const struct bk_conn *c,
		    uint64_t size);

/* bufs.c: the buffer requests; 0 or -errno, BK_PENDING from alloc. */
int bk_buf_alloc(struct shxd_broker *b, struct bk_conn *c,
		 struct syshax_buf_alloc_args *a);
int bk_buf_free(struct shxd_broker *b, struct bk_conn *c,
		const struct syshax_buf_free_args *f);
int bk_buf_info(struct bk_conn *c, struct syshax_buf_info_args *i);
/* *fd: a new fd the caller closes once the reply carried it. */
int bk_buf_export(struct shxd_broker *b, struct bk_conn *c,
		  struct syshax_buf_export_args *e, int *fd);
/* *fd_out: the buffer's memfd, for the client to map. */
int bk_buf_import(struct shxd_broker *b, struct bk_conn *c,
		  struct syshax_buf_import_args *i, int fd, int *fd_out);
/* x's fd hung up: its last copy is closed. */
void bk_buf_export_event(struct shxd_broker *b, struct bk_export *x);
/* Drops every export (the broker is going). */
void bk_buf_exports_fini(struct shxd_broker *b);
int bk_buf_map(struct shxd_broker *b, struct bk_conn *c,
	       struct syshax_engine_map_args *m, int *fd);
/* Drops a reference (a handle's, a job's); the last one frees it. */
void bk_buf_put(struct shxd_broker *b, struct shxd_membuf *mb);
/* Answers the allocations whose threads posted to pop_pipe. */
void bk_buf_alloc_events(struct shxd_broker *b);
/* Drops c's handles; its running allocation finishes unanswered. */
void bk_buf_conn_gone(struct shxd_broker *b, struct bk_conn *c);
/* Waits for running allocations; frees the buffer table. */
void bk_buf_fini(struct shxd_broker *b);

/* brings.c: the shared rings. */
struct bk_ring;
/* *fd: the area's memfd, which the caller closes once it is sent. */
int bk_ring_setup(struct shxd_broker *b, struct bk_conn *c,
		  struct syshax_ring_setup_args *a, int *fd);
void bk_ring_free(struct shxd_broker *b, struct bk_conn *c);
/* 0, or -EPROTO once the caller broke its rings. */
int bk_ring_dead(const struct bk_conn *c);
/* Drains the kick bytes on c's event socket. */
void bk_ring_kicked(struct bk_conn *c);
/* A completion into a client's out ring (room is the caller's rule);
 * seen by the client at the next bk_rings_publish(). */
int bk_ring_post_cpl(struct shxd_broker *b, struct bk_conn *c,
		     const struct syshax_completion *cpl);
/* Publishes the out entries put since the last call; wakes sleepers. */
void bk_rings_publish(struct shxd_broker *b);
/* Queued jobs into engine c's out ring, as room allows; how many. */
int bk_ring_give(struct shxd_broker *b, struct bk_conn *c);
/* Engine c is gone: what its out ring still holds goes back to the
 * queue (bk_unhold). */
void bk_ring_requeue(struct shxd_broker *b, struct bk_conn *c);
/* ENGINE_MAP of mb by c: on the rings, c hears when mb goes (0, -ENOMEM). */
int bk_ring_mapped(struct bk_conn *c, struct shxd_membuf *mb);
/* mb is freed: a BUF_GONE note for every ring engine that mapped it. */
void bk_rings_buf_gone(struct shxd_broker *b, const struct shxd_membuf *mb);
/* Takes every in ring's entries; how many. */
int bk_rings_run(struct shxd_broker *b);
/* Before sleeping: asks each ring for a kick; 1 when one got entries. */
int bk_rings_sleep(struct shxd_broker *b);
void bk_rings_awake(struct shxd_broker *b);
/* After nr_active and u's nr_jobs changed: SYSHAX_RING_FULL on client
 * rings. */
void bk_rings_full(struct shxd_broker *b, struct bk_user *u);

/* bjobs.c */
int bk_queue_one(struct shxd_broker *b, struct bk_conn *c,
		 const struct syshax_job *job);
/* The queue's first job, now held by engine c. */
struct bk_job *bk_hold(struct shxd_broker *b, struct bk_conn *c);
/* Undoes bk_hold for a job engine c holds by token and never took: to the
 * queue's head (cancelled when its owner is gone); no such job: nothing. */
void bk_unhold(struct shxd_broker *b, struct bk_conn *c, uint64_t token);
/* After jobs were queued: hands them to engines. */
void bk_kick_engines(struct shxd_broker *b);
int bk_jobs_init(struct shxd_broker *b);
void bk_jobs_fini(struct shxd_broker *b);
int bk_submit(struct shxd_broker *b, struct bk_conn *c,
	      const struct syshax_submit_args *a, const struct syshax_job *jobs,
	      size_t len);
int bk_attach(struct shxd_broker *b, struct bk_conn *c,
	      struct syshax_engine_attach_args *a);
/* Replies itself (now or when parked); returns nothing to send. */
void bk_fetch(struct shxd_broker *b, struct bk_conn *c,
	      const struct syshax_engine_fetch_args *a);
void bk_fetch_cancel(struct shxd_broker *b, struct bk_conn *c);
/* Ends parked fetches whose time is up; returns ms until the next one
 * (or limit). */
int bk_fetch_timeouts(struct shxd_broker *b, int limit);
int bk_map_check(struct shxd_broker *b, struct bk_conn *c, uint64_t id,
		 struct shxd_membuf **mb);
int bk_complete(struct shxd_broker *b, struct bk_conn *c,
		const struct syshax_engine_complete_args *a,
		const struct syshax_engine_cpl *cpls, size_t len);
/* Writes pending completions to the event socket. */
void bk_flush(struct shxd_broker *b, struct bk_conn *c);
/* Lifetime rules when a connection goes. */
void bk_conn_jobs_release(struct shxd_broker *b, struct bk_conn *c);
void bk_jobs_stats(struct shxd_broker *b, struct syshax_stats_args *st);

/* bstats.c: CTX_STATS; replies itself. */
void bk_ctx_stats(struct shxd_broker *b, struct bk_conn *c,
		  struct syshax_ctx_stats_args *a);
/* 1 when c has jobs or completions on the old path (queued, held, not yet
 * reaped, or a parked fetch): they have no place in rings. */
int bk_jobs_busy(const struct shxd_broker *b, const struct bk_conn *c);

#endif /* SHXD_BROKER_INT_H */
