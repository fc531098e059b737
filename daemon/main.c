// SPDX-License-Identifier: MIT
/*
 * syshaxd: the sysHAX daemon. With /dev/syshax it is an engine for the
 * module; without, it is the userspace broker plus engine threads that
 * connect to it through libsyshax-rt, as any engine would.
 */
#include <errno.h>
#include <libgen.h>
#include <stdatomic.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "broker/broker.h"
#include "config.h"
#include "engine/cpu.h"
#include "engine/engine.h"
#include "engine/wset.h"
#include "log.h"

#define SYSHAX_DEV		"/dev/syshax"
#define ENGINE_CONNECT_MS	5000

static volatile sig_atomic_t g_stop;
static struct shxd_cpu *g_cpu;
static atomic_uint g_attached;
static unsigned int g_engines;
static _Thread_local bool tl_attached;

/* systemd Type=notify: ready once every engine thread is attached. */
static void engine_attached(void)
{
	tl_attached = true;
	if (atomic_fetch_add(&g_attached, 1) + 1 == g_engines)
		sd_notify(0, "READY=1");
}

struct engine_thread {
	pthread_t tid;
	struct shxd_engine_conf conf;
	int ret;
	bool started;
	/* Any engine error ends the daemon, not only one before attaching
	 * (a daemon short of a configured engine would only time jobs out,
	 * and Restart=on-failure would never see it). */
	bool fatal;
};

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static int setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waits end with EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL))
		return -errno;
	/* A peer closing its socket must be an error return, not a kill. */
	sa.sa_handler = SIG_IGN;
	return sigaction(SIGPIPE, &sa, NULL) ? -errno : 0;
}

static void *engine_main(void *arg)
{
	struct engine_thread *t = arg;

	t->ret = shxd_engine_run(&t->conf, &g_stop);
	if (t->ret && (t->fatal || !tl_attached))
		g_stop = 1;
	return NULL;
}

static int start_engines(struct engine_thread *t, unsigned int n,
			 const struct shxd_engine_conf *conf, bool fatal)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		int ret;

		t[i].conf = *conf;
		t[i].fatal = fatal;
		ret = pthread_create(&t[i].tid, NULL, engine_main, &t[i]);
		if (ret) {
			shxd_log(LOG_ERR, "engine thread: %s", strerror(ret));
			return -ret;
		}
		t[i].started = true;
	}
	return 0;
}

/* Returns the first engine error, 0 when all stopped cleanly. */
static int join_engines(struct engine_thread *t, unsigned int n)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n; i++) {
		if (!t[i].started)
			continue;
		pthread_join(t[i].tid, NULL);
		if (t[i].ret && !ret)
			ret = t[i].ret;
	}
	return ret;
}

/* Engines only: against the module, or a broker at cfg->socket. */
static int run_engines(const struct shxd_config *cfg, struct engine_thread *t,
		       enum syshax_backend backend, const char *path)
{
	struct shxd_engine_conf ec = {
		.backend = backend,
		.path = path,
		.node = cfg->node,
		.connect_ms = ENGINE_CONNECT_MS,
		.poll_us = cfg->engine_poll_us,
		.cpu = g_cpu,
		.attached = engine_attached,
	};
	int ret;

	g_engines = cfg->engine_threads;
	ret = start_engines(t, cfg->engine_threads, &ec, true);
	int eret;

	if (ret)
		g_stop = 1;
	eret = join_engines(t, cfg->engine_threads);
	return ret ? ret : eret;
}

/* The userspace broker in this thread, engine threads unless no_engine. */
static int run_broker(const struct shxd_config *cfg, struct engine_thread *t,
		      bool engines)
{
	struct shxd_broker_conf bc = {
		.socket_path = cfg->socket[0] ? cfg->socket : NULL,
		.max_jobs_ctx = cfg->max_jobs_ctx,
		.max_jobs_global = cfg->max_jobs_global,
		.max_jobs_user = cfg->max_jobs_user,
		.max_pinned_bytes = cfg->max_pinned_mb << 20,
		.max_pinned_user_bytes = cfg->max_pinned_user_mb << 20,
		.max_bufs_ctx = cfg->max_bufs_ctx,
		.max_bufs_user = cfg->max_bufs_user,
		.max_ctx_user = cfg->max_ctx_user,
		.poll_us = cfg->engine_poll_us,
		.engine_gid = (gid_t)-1,
	};
	unsigned int n = engines ? cfg->engine_threads : 0;
	char path[sizeof(cfg->socket)];
	struct shxd_broker *b;
	int ret, eret;

	ret = shxd_broker_create(&bc, &b);
	if (ret == -ENOTSOCK) {
		shxd_log(LOG_ERR, "broker: %s exists and is not a socket; "
			 "not replacing it", bc.socket_path ?
			 bc.socket_path : "the default socket path");
		return ret;
	}
	if (ret) {
		shxd_log(LOG_ERR, "broker: %s: %s",
			 bc.socket_path ? bc.socket_path : "(default socket)",
			 strerror(-ret));
		return ret;
	}
	/* Engines may still be connecting when b is gone. */
	snprintf(path, sizeof(path), "%s", shxd_broker_path(b));
	if (shxd_broker_made_dir(b)) {
		char dir[sizeof(path)];

		snprintf(dir, sizeof(dir), "%s", path);
		shxd_log(LOG_INFO, "broker: created directory %s",
			 dirname(dir));
	}
	shxd_log(LOG_INFO, "broker listening on %s (%u engine threads)",
		 path, n);
	if (n) {
		struct shxd_engine_conf ec = {
			.backend = SYSHAX_BACKEND_DAEMON,
			.path = path,
			.node = cfg->node,
			.connect_ms = ENGINE_CONNECT_MS,
			.poll_us = cfg->engine_poll_us,
			.cpu = g_cpu,
			.attached = engine_attached,
		};

		g_engines = n;
		ret = start_engines(t, n, &ec, false);
	} else {
		sd_notify(0, "READY=1");
	}
	if (!ret)
		ret = shxd_broker_run(b, &g_stop);
	if (ret)
		shxd_log(LOG_ERR, "broker: %s", strerror(-ret));
	/* Closing every connection ends the engines' parked fetches. */
	g_stop = 1;
	shxd_broker_destroy(b);
	eret = join_engines(t, n);
	return ret ? ret : eret;
}

/*
 * Each buffer a client holds is a memfd open in the broker, and each
 * connection two sockets: the usual soft limit of 1024 descriptors is
 * soon reached. Raise it to the hard limit (LimitNOFILE= in the unit).
 * syshaxd uses poll and epoll only, never select(), so descriptors above
 * FD_SETSIZE are fine. A failure is logged, not fatal: the daemon works
 * with the old limit, and the broker bounds its own use.
 */
static void raise_nofile(void)
{
	struct rlimit rl;
	rlim_t soft;

	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		shxd_log(LOG_WARNING, "RLIMIT_NOFILE: %s", strerror(errno));
		return;
	}
	soft = rl.rlim_cur;
	if (soft < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl)) {
			shxd_log(LOG_WARNING, "RLIMIT_NOFILE: cannot raise "
				 "%llu to %llu: %s", (unsigned long long)soft,
				 (unsigned long long)rl.rlim_max,
				 strerror(errno));
			return;
		}
	}
	shxd_log(LOG_INFO, "open files: up to %llu (soft limit was %llu)",
		 (unsigned long long)rl.rlim_cur, (unsigned long long)soft);
}

/* daemon() moves to "/": a relative path (socket, model_dir) must not
 * move with it. path holds PATH_MAX bytes. */
static int absolute_path(char *path)
{
	char cwd[PATH_MAX], abs[PATH_MAX];
	int n;

	if (!path[0] || path[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	n = snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
	if (n < 0 || (size_t)n >= sizeof(abs))
		return -ENAMETOOLONG;
	memcpy(path, abs, (size_t)n + 1);
	return 0;
}

static void cpu_conf(const struct shxd_config *cfg, struct shxd_cpu_conf *cc)
{
	*cc = (struct shxd_cpu_conf){
		.pool = { .nthreads = cfg->omp_num_threads,
			  .affinity = cfg->cpu_affinity,
			  .poll_us = cfg->worker_spin_us > cfg->engine_poll_us ?
				     cfg->worker_spin_us : cfg->engine_poll_us },
		.model_dir = cfg->model_dir,
		.quantize = (enum shxk_type)cfg->quantize,
		.max_batch = cfg->cpu_max_batch_size,
		.max_wsets = cfg->max_weight_sets,
	};
}

static int start_cpu(const struct shxd_config *cfg)
{
	struct shxd_cpu_conf cc;
	char err[512];
	int ret;

	cpu_conf(cfg, &cc);
	ret = shxd_cpu_create(&cc, &g_cpu, err, sizeof(err));
	if (ret)
		fprintf(stderr, "syshaxd: CPU engine: %s\n",
			err[0] ? err : strerror(-ret));
	return ret;
}

static void log_cpu(const struct shxd_config *cfg)
{
	char pools[1024], cpu[256];

	shxd_pool_describe(shxd_cpu_pool(g_cpu), pools, sizeof(pools));
	shxk_cpu_describe(cpu, sizeof(cpu));
	shxd_log(LOG_INFO, "CPU engine: %s, %s; batch up to %u "
		 "tokens; model_dir %s", cpu, pools,
		 cfg->cpu_max_batch_size,
		 cfg->model_dir[0] ? cfg->model_dir : "(none)");
}

static int preload(const struct shxd_config *cfg)
{
	char err[512];
	uint64_t id;
	int ret = shxd_cpu_preload(g_cpu, cfg->preload, &id, err, sizeof(err));

	if (ret) {
		shxd_log(LOG_ERR, "preload %s: %s", cfg->preload,
			 err[0] ? err : strerror(-ret));
		return ret;
	}
	shxd_log(LOG_INFO, "preload %s: weight set %llu", cfg->preload,
		 (unsigned long long)id);
	return 0;
}

static void print_one(const struct shxd_wset *ws, bool first, void *arg)
{
	(void)first;
	shxd_wset_print_placement(ws, shxd_cpu_pool(g_cpu), arg);
}

/* --print-placement FILE: with no model_dir, FILE's own folder is it. */
static int print_placement(struct shxd_config *cfg)
{
	char dir[PATH_MAX], err[512];
	uint64_t id;
	int ret;

	if (!cfg->model_dir[0]) {
		snprintf(dir, sizeof(dir), "%s", cfg->print_placement);
		snprintf(cfg->model_dir, sizeof(cfg->model_dir), "%s",
			 dirname(dir));
	}
	if (start_cpu(cfg))
		return 2;
	ret = shxd_cpu_preload(g_cpu, cfg->print_placement, &id, err,
			       sizeof(err));
	if (ret) {
		if (err[0])
			fprintf(stderr, "syshaxd: %s\n", err);
		else
			fprintf(stderr, "syshaxd: %s: %s\n",
				cfg->print_placement, strerror(-ret));
	} else {
		char pools[1024];

		shxd_pool_describe(shxd_cpu_pool(g_cpu), pools, sizeof(pools));
		printf("kernels %s; %s\n", shxk_isa_name(), pools);
		shxd_wreg_each(print_one, stdout);
	}
	shxd_wreg_clear();
	shxd_cpu_destroy(g_cpu);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct shxd_config cfg;
	struct engine_thread *threads;
	enum shxd_mode mode;
	int ret;

	ret = shxd_config_parse(&cfg, argc, argv, stdout, stderr);
	if (ret < 0)
		return 2;
	if (ret == SHXD_EXIT_OK)
		return 0;
	ret = absolute_path(cfg.socket);
	if (!ret)
		ret = absolute_path(cfg.model_dir);
	if (ret) {
		fprintf(stderr, "syshaxd: socket or model_dir path: %s\n",
			strerror(-ret));
		return 2;
	}
	if (cfg.print_placement[0])
		return print_placement(&cfg);
	/* Settings the pools refuse are usage errors: found before the
	 * daemon detaches (threads do not survive its fork: start again). */
	ret = start_cpu(&cfg);
	if (ret)
		return 2;
	if (!cfg.foreground) {
		shxd_cpu_destroy(g_cpu);
		if (daemon(0, 0)) {
			perror("syshaxd: daemon");
			return 1;
		}
		if (start_cpu(&cfg))
			return 1;
	}
	shxd_log_init("syshaxd", cfg.foreground);
	raise_nofile();
	log_cpu(&cfg);
	/* Every exit from here stops the workers first: a thread still
	 * starting while exit() runs the libraries' destructors crashes. */
	ret = cfg.preload[0] ? preload(&cfg) : 0;
	if (ret)
		goto out;
	ret = setup_signals();
	if (ret) {
		shxd_log(LOG_ERR, "signals: %s", strerror(-ret));
		goto out;
	}
	threads = calloc(cfg.engine_threads, sizeof(*threads));
	if (!threads) {
		shxd_log(LOG_ERR, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	mode = cfg.mode;
	if (mode == SHXD_MODE_AUTO && access(SYSHAX_DEV, F_OK) == 0)
		mode = SHXD_MODE_ENGINE_ONLY;
	if (mode == SHXD_MODE_ENGINE_ONLY)
		/* An explicit socket names a broker; else the library picks
		 * ($SYSHAX_DEVICE, /dev/syshax, the default socket). */
		ret = cfg.socket[0] ?
		      run_engines(&cfg, threads, SYSHAX_BACKEND_DAEMON,
				  cfg.socket) :
		      run_engines(&cfg, threads, SYSHAX_BACKEND_AUTO, NULL);
	else
		ret = run_broker(&cfg, threads, mode != SHXD_MODE_NO_ENGINE);
	free(threads);
out:
	shxd_wreg_clear();
	shxd_cpu_destroy(g_cpu);
	shxd_log(LOG_INFO, "exiting%s", ret ? " on error" : "");
	return ret ? 1 : 0;
}
