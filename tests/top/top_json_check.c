// SPDX-License-Identifier: MIT
/*
 * syshax-top --json against the stats calls: takes STATS and CTX_STATS,
 * runs syshax-top --json, takes them again, and checks that
 *  - backend, UAPI version, cap, engines and contexts equal the calls';
 *  - every monotonic counter (jobs, latency buckets) lies between the
 *    calls before and after;
 *  - the contexts listed include ours (same ctx_id, pid and comm), the
 *    load's (pid, one buffer of the bytes it allocated) and syshax-top's
 *    own (marked self), and pinned bytes are ours before plus syshax-top's
 *    own buffer.
 *   top_json_check <syshax-top> <load pid> <load bytes>
 * Exit 0, or 1 naming each check that failed.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syshax.h"
#include "syshax/rt.h"

static int fails;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "top_json_check: ");		\
			fprintf(stderr, __VA_ARGS__);			\
			fprintf(stderr, "\n");				\
			fails++;					\
		}							\
	} while (0)

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(v)) {
		CHECK(0, "no number '%s'", k);
		return -1;
	}
	return v->valuedouble;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static void between(const char *what, double v, uint64_t lo, uint64_t hi)
{
	CHECK(v >= (double)lo && v <= (double)hi,
	      "%s: %.0f not within [%llu, %llu]", what, v,
	      (unsigned long long)lo, (unsigned long long)hi);
}

static char *run(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	size_t n;

	if (!p || !buf)
		return NULL;
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				break;
			buf = nb;
		}
	}
	buf[len] = 0;
	if (pclose(p)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int main(int argc, char **argv)
{
	struct syshax_stats_args st0, st1;
	struct syshax_version_args ver;
	struct syshax_ctx_stat me;
	struct syshax *sh;
	const cJSON *o, *a, *e;
	cJSON *root;
	char cmd[4096], *txt;
	int load_pid, ret, i, seen_me = 0, seen_load = 0, seen_top = 0;
	unsigned long long load_bytes;
	double top_bytes = 0, sum = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: top_json_check <syshax-top> <load pid> "
			"<load bytes>\n");
		return 2;
	}
	load_pid = atoi(argv[2]);
	load_bytes = strtoull(argv[3], NULL, 0);
	ret = syshax_open(&sh, NULL);
	if (ret) {
		fprintf(stderr, "top_json_check: open: %s\n",
			syshax_strerror(ret));
		return 1;
	}
	if (syshax_version(sh, &ver) || syshax_stats(sh, &st0) ||
	    syshax_ctx_stats(sh, &me, 1, NULL) != 1) {
		fprintf(stderr, "top_json_check: the stats calls failed\n");
		return 1;
	}
	CHECK(me.flags & SYSHAX_CTX_SELF, "our entry is not marked self");
	CHECK(me.pid == getpid(), "our pid %d, not %d", me.pid, getpid());
	snprintf(cmd, sizeof(cmd), "%s --json --interval 0.2", argv[1]);
	txt = run(cmd);
	if (syshax_stats(sh, &st1)) {
		fprintf(stderr, "top_json_check: STATS failed\n");
		return 1;
	}
	if (!txt) {
		fprintf(stderr, "top_json_check: '%s' failed\n", cmd);
		return 1;
	}
	root = cJSON_Parse(txt);
	if (!root) {
		fprintf(stderr, "top_json_check: not JSON:\n%s\n", txt);
		return 1;
	}

	o = cJSON_GetObjectItemCaseSensitive(root, "backend");
	CHECK(!strcmp(jstr(o, "kind"), syshax_backend(sh) ==
		      SYSHAX_BACKEND_KERNEL ? "module" : "syshaxd"),
	      "backend kind '%s'", jstr(o, "kind"));
	CHECK(jnum(o, "uapi_version") == ver.uapi_version, "uapi_version");
	CHECK(jnum(o, "max_pinned") == (double)ver.max_pinned, "max_pinned");
	CHECK(jnum(o, "features") == ver.features, "features");

	o = cJSON_GetObjectItemCaseSensitive(root, "jobs");
	CHECK(jnum(o, "engines") == st0.engines, "engines %.0f, not %u",
	      jnum(o, "engines"), st0.engines);
	/* syshax-top's own context besides the ones open before and after. */
	CHECK(jnum(o, "contexts") == st0.contexts + 1 &&
	      st1.contexts == st0.contexts, "contexts %.0f, not %u + 1",
	      jnum(o, "contexts"), st0.contexts);
	between("jobs.submitted", jnum(o, "submitted"), st0.jobs_submitted,
		st1.jobs_submitted);
	between("jobs.completed", jnum(o, "completed"), st0.jobs_completed,
		st1.jobs_completed);
	between("jobs.fetched", jnum(o, "fetched"), st0.jobs_fetched,
		st1.jobs_fetched);
	between("jobs.failed", jnum(o, "failed"), st0.jobs_failed,
		st1.jobs_failed);
	CHECK(jnum(o, "submitted") > (double)st0.jobs_submitted,
	      "the load's jobs did not move submitted");
	a = cJSON_GetObjectItemCaseSensitive(o, "lat_hist");
	CHECK(cJSON_GetArraySize(a) == SYSHAX_LAT_BUCKETS, "lat_hist size");
	for (i = 0; i < SYSHAX_LAT_BUCKETS && i < cJSON_GetArraySize(a); i++)
		between("lat_hist", cJSON_GetArrayItem(a, i)->valuedouble,
			st0.lat_hist[i], st1.lat_hist[i]);

	a = cJSON_GetObjectItemCaseSensitive(root, "contexts");
	CHECK(cJSON_IsArray(a), "no contexts array");
	CHECK(cJSON_GetArraySize(a) == (int)jnum(o, "contexts"),
	      "%d contexts listed, STATS says %.0f", cJSON_GetArraySize(a),
	      jnum(o, "contexts"));
	cJSON_ArrayForEach(e, a) {
		int pid = (int)jnum(e, "pid");

		if (jnum(e, "ctx_id") == me.ctx_id) {
			seen_me = 1;
			CHECK(pid == getpid(), "our pid in --json: %d", pid);
			CHECK(!strcmp(jstr(e, "comm"), "top_json_check"),
			      "our comm in --json: '%s'", jstr(e, "comm"));
			CHECK(!cJSON_IsTrue(cJSON_GetObjectItem(e, "self")),
			      "our entry is syshax-top's self");
		}
		if (pid == load_pid) {
			seen_load = 1;
			CHECK(!strcmp(jstr(e, "comm"), "top_load"),
			      "load comm '%s'", jstr(e, "comm"));
			CHECK(jnum(e, "nr_bufs") == 1, "load nr_bufs %.0f",
			      jnum(e, "nr_bufs"));
			CHECK(jnum(e, "buf_bytes") == (double)load_bytes,
			      "load buf_bytes %.0f, not %llu",
			      jnum(e, "buf_bytes"), load_bytes);
			CHECK(jnum(e, "jobs_submitted") > 0,
			      "load jobs_submitted 0");
		}
		if (cJSON_IsTrue(cJSON_GetObjectItem(e, "self"))) {
			seen_top++;
			CHECK(!strcmp(jstr(e, "comm"), "syshax-top"),
			      "self comm '%s'", jstr(e, "comm"));
			top_bytes = jnum(e, "buf_bytes");
		}
	}
	CHECK(seen_me, "our context (ctx %u) is not listed", me.ctx_id);
	CHECK(seen_load, "the load (pid %d) is not listed", load_pid);
	CHECK(seen_top == 1, "%d contexts marked self", seen_top);

	o = cJSON_GetObjectItemCaseSensitive(root, "memory");
	CHECK(jnum(o, "pinned_bytes") == (double)st0.pinned_bytes + top_bytes,
	      "pinned_bytes %.0f, not %llu + syshax-top's %.0f",
	      jnum(o, "pinned_bytes"), (unsigned long long)st0.pinned_bytes,
	      top_bytes);
	CHECK(st1.pinned_bytes == st0.pinned_bytes,
	      "pinned bytes changed under the test");
	a = cJSON_GetObjectItemCaseSensitive(o, "nodes");
	cJSON_ArrayForEach(e, a)
		sum += jnum(e, "pinned_bytes");
	CHECK(sum == jnum(o, "pinned_bytes"), "nodes sum %.0f", sum);
	if (st0.engines)
		CHECK(cJSON_GetObjectItem(root, "cpu_engine"),
		      "no cpu_engine with an engine attached: %s",
		      jstr(root, "cpu_engine_unavailable"));
	cJSON_Delete(root);
	free(txt);
	syshax_close(sh);
	if (!fails)
		printf("top_json_check: --json agrees with STATS and "
		       "CTX_STATS\n");
	return fails ? 1 : 0;
}
