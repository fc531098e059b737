// SPDX-License-Identifier: MIT
/*
 * syshax-check: diagnoses a sysHAX setup, one line per item (OK, WARN or
 * FAIL) with a one-line fix: the module and its UAPI, /dev/syshax's
 * permissions, syshaxd's socket, hugepages, RLIMIT_MEMLOCK against the
 * caps, IOMMU and VFIO, the CPU kernel variant, the daemon's memory cap.
 * Exit status 1 on any FAIL, 2 on a usage error. docs/check.md.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cJSON.h>

#include "internal.h"	/* kernels/: shxk_cpu_select() */
#include "shxk.h"
#include "syshax/rt.h"

#define PROG		"syshax-check"
#define DEV_PATH	"/dev/syshax"
#define SYS_MODULE	"/sys/module/syshax"
#define SYS_SOCKET	"/run/syshax/syshaxd.sock"

enum status { ST_OK, ST_WARN, ST_FAIL };
static const char *const g_st_name[] = { "OK", "WARN", "FAIL" };

static bool g_json;
static cJSON *g_items;		/* --json: the array of items */
static int g_counts[3];

/* What earlier items learnt that later ones use. */
static struct {
	bool mod_loaded, mod_version;
	struct syshax_version_args mod_v;
	bool daemon_version;
	struct syshax_version_args daemon_v;
	char daemon_path[256];
} g;

/* One item: prints it (or adds it to the JSON), with its fix unless OK.
 * data (may be NULL) goes into the JSON item as "data". */
static void item(const char *name, enum status st, cJSON *data,
		 const char *fix, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	g_counts[st]++;
	if (g_json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddStringToObject(o, "status", g_st_name[st]);
		cJSON_AddStringToObject(o, "detail", detail);
		if (st != ST_OK && fix)
			cJSON_AddStringToObject(o, "fix", fix);
		else
			cJSON_AddNullToObject(o, "fix");
		cJSON_AddItemToObject(o, "data",
				      data ? data : cJSON_CreateObject());
		cJSON_AddItemToArray(g_items, o);
		return;
	}
	cJSON_Delete(data);
	printf("%-4s  %-10s %s\n", g_st_name[st], name, detail);
	if (st != ST_OK && fix)
		printf("      %-10s fix: %s\n", "", fix);
}

static bool exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* First line of a small sysfs file, newline cut; false if unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

static bool read_ull(const char *path, unsigned long long *v)
{
	char buf[64], *end;

	if (!read_line(path, buf, sizeof(buf)))
		return false;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return !errno && end != buf;
}

/* A directory with at least one entry besides . and .. */
static bool dir_nonempty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool any = false;

	if (!d)
		return false;
	while (!any && (e = readdir(d)))
		any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return any;
}

static double mib(unsigned long long b)
{
	return b / 1048576.0;
}

/* ---- module ---------------------------------------------------------- */

static void check_module(void)
{
	struct syshax_open_opts o = {
		.backend = SYSHAX_BACKEND_KERNEL, .path = DEV_PATH,
	};
	cJSON *d = cJSON_CreateObject();
	struct syshax *sh;
	int ret;

	g.mod_loaded = exists(SYS_MODULE);
	cJSON_AddBoolToObject(d, "loaded", g.mod_loaded);
	cJSON_AddNumberToObject(d, "lib_uapi", SYSHAX_UAPI_VERSION);
	if (!g.mod_loaded) {
		cJSON_AddNullToObject(d, "uapi");
		item("module", ST_FAIL, d,
		     "modprobe syshax (built: insmod syshax.ko; DKMS: dkms "
		     "install syshax), or use syshaxd alone",
		     "syshax not loaded (no " SYS_MODULE "%s)",
		     exists(DEV_PATH) ? "" : ", no " DEV_PATH);
		return;
	}
	if (!exists(DEV_PATH)) {
		cJSON_AddNullToObject(d, "uapi");
		item("module", ST_FAIL, d,
		     "udev made no node: install kmod/60-syshax.rules, then "
		     "udevadm trigger",
		     "syshax loaded, but no " DEV_PATH);
		return;
	}
	ret = syshax_open(&sh, &o);
	if (!ret) {
		ret = syshax_version(sh, &g.mod_v);
		syshax_close(sh);
	}
	if (ret) {
		cJSON_AddNullToObject(d, "uapi");
		item("module", ret == -EACCES || ret == -EPERM ? ST_WARN :
		     ST_FAIL, d, ret == -EACCES || ret == -EPERM ?
		     "see the device line below (or run as root)" :
		     "reload it: rmmod syshax; modprobe syshax",
		     "syshax loaded; its version unknown: " DEV_PATH ": %s",
		     syshax_strerror(ret));
		return;
	}
	g.mod_version = true;
	cJSON_AddNumberToObject(d, "uapi", g.mod_v.uapi_version);
	cJSON_AddNumberToObject(d, "features", g.mod_v.features);
	cJSON_AddNumberToObject(d, "max_pinned", (double)g.mod_v.max_pinned);
	if (g.mod_v.uapi_version != SYSHAX_UAPI_VERSION) {
		item("module", ST_FAIL, d,
		     "install the module and libsyshax-rt of one release "
		     "(dkms install syshax; make install)",
		     "syshax loaded, UAPI %u but libsyshax-rt speaks %u",
		     g.mod_v.uapi_version, SYSHAX_UAPI_VERSION);
		return;
	}
	item("module", ST_OK, d, NULL, "syshax loaded, UAPI %u (library %u), "
	     "max_pinned %.0f MiB", g.mod_v.uapi_version, SYSHAX_UAPI_VERSION,
	     mib(g.mod_v.max_pinned));
}

/* ---- /dev/syshax permissions ----------------------------------------- */

static bool in_group(gid_t gid)
{
	gid_t groups[256];
	int n, i;

	if (getegid() == gid)
		return true;
	n = getgroups(256, groups);
	for (i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

static void check_device(void)
{
	cJSON *d = cJSON_CreateObject();
	char gname[64], fix[160];
	struct group *gr;
	struct stat st;
	bool can;

	if (stat(DEV_PATH, &st)) {
		item("device", ST_WARN, d, "load the module (see the module "
		     "line); without it only syshaxd serves clients",
		     "no " DEV_PATH ": %s", strerror(errno));
		return;
	}
	gr = getgrgid(st.st_gid);
	if (gr)
		snprintf(gname, sizeof(gname), "%s", gr->gr_name);
	else
		snprintf(gname, sizeof(gname), "%u", (unsigned)st.st_gid);
	cJSON_AddNumberToObject(d, "mode", st.st_mode & 07777);
	cJSON_AddStringToObject(d, "group", gname);
	if (!S_ISCHR(st.st_mode)) {
		item("device", ST_FAIL, d, "rm " DEV_PATH "; reload the module",
		     DEV_PATH " is not a character device");
		return;
	}
	can = !access(DEV_PATH, R_OK | W_OK);
	cJSON_AddBoolToObject(d, "can_open", can);
	if (!can) {
		snprintf(fix, sizeof(fix), "usermod -aG %s $USER, then log in "
			 "again (kmod/60-syshax.rules sets the group)", gname);
		item("device", ST_FAIL, d, fix, DEV_PATH " mode %04o group "
		     "%s: not open to you (uid %u, %s that group)",
		     st.st_mode & 07777, gname, (unsigned)geteuid(),
		     in_group(st.st_gid) ? "in" : "not in");
		return;
	}
	item("device", ST_OK, d, NULL, DEV_PATH " mode %04o group %s: you "
	     "can open it (%s)", st.st_mode & 07777, gname,
	     !geteuid() ? "root" : in_group(st.st_gid) ? "in the group" :
	     "open to all");
}

/* ---- syshaxd --------------------------------------------------------- */

static const char *system_socket(void)
{
	const char *p = getenv("SYSHAX_SYSTEM_SOCKET");	/* tests only */

	return p && *p ? p : SYS_SOCKET;
}

/* Tries one socket path; true when a syshaxd answered. */
static bool try_daemon(const char *path, char *tried, size_t len,
		       cJSON *paths)
{
	struct syshax_open_opts o = {
		.backend = SYSHAX_BACKEND_DAEMON, .path = path,
	};
	size_t n = strlen(tried);
	struct syshax *sh;
	cJSON *p;
	int ret;

	ret = syshax_open(&sh, &o);
	if (!ret) {
		ret = syshax_version(sh, &g.daemon_v);
		syshax_close(sh);
	}
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "path", path);
	cJSON_AddStringToObject(p, "result", ret ? syshax_strerror(ret) :
				"ok");
	cJSON_AddItemToArray(paths, p);
	snprintf(tried + n, len - n, "%s%s (%s)", n ? ", " : "", path,
		 ret ? syshax_strerror(ret) : "ok");
	if (ret)
		return false;
	g.daemon_version = true;
	snprintf(g.daemon_path, sizeof(g.daemon_path), "%s", path);
	return true;
}

static void check_daemon(void)
{
	const char *env = getenv("SYSHAX_DEVICE");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	cJSON *d = cJSON_CreateObject(), *paths = cJSON_CreateArray();
	char tried[1536] = "", xpath[512];
	struct stat st;
	bool found = false;

	cJSON_AddItemToObject(d, "tried", paths);
	if (env && *env && !stat(env, &st) && !S_ISCHR(st.st_mode))
		found = try_daemon(env, tried, sizeof(tried), paths);
	else if (env && *env && stat(env, &st))
		snprintf(tried, sizeof(tried), "$SYSHAX_DEVICE %s (%s)", env,
			 strerror(errno));
	/* The library's order without a path: the user's daemon (not for
	 * root), then the system's. */
	if (!found && geteuid() && xdg && *xdg) {
		snprintf(xpath, sizeof(xpath), "%s/syshax/syshaxd.sock", xdg);
		found = try_daemon(xpath, tried, sizeof(tried), paths);
	} else if (!found && geteuid()) {
		size_t n = strlen(tried);

		snprintf(tried + n, sizeof(tried) - n, "%s$XDG_RUNTIME_DIR "
			 "unset", n ? ", " : "");
	}
	if (!found)
		found = try_daemon(system_socket(), tried, sizeof(tried),
				   paths);
	cJSON_AddBoolToObject(d, "found", found);
	if (!found) {
		cJSON_AddNullToObject(d, "path");
		item("daemon", ST_WARN, d, "start one: systemctl start syshaxd "
		     "(system), or syshaxd (yours, under $XDG_RUNTIME_DIR); "
		     "or set SYSHAX_DEVICE to its socket",
		     "no syshaxd answered; tried %s", tried);
		return;
	}
	cJSON_AddStringToObject(d, "path", g.daemon_path);
	cJSON_AddStringToObject(d, "backend", "syshaxd");
	cJSON_AddNumberToObject(d, "uapi", g.daemon_v.uapi_version);
	cJSON_AddNumberToObject(d, "features", g.daemon_v.features);
	if (g.daemon_v.uapi_version != SYSHAX_UAPI_VERSION) {
		item("daemon", ST_FAIL, d, "install syshaxd and libsyshax-rt "
		     "of one release", "syshaxd at %s speaks UAPI %u, "
		     "libsyshax-rt %u", g.daemon_path, g.daemon_v.uapi_version,
		     SYSHAX_UAPI_VERSION);
		return;
	}
	item("daemon", ST_OK, d, NULL, "syshaxd (userspace backend) at %s, "
	     "UAPI %u; tried %s", g.daemon_path, g.daemon_v.uapi_version,
	     tried);
}

/* ---- hugepages -------------------------------------------------------- */

static void check_hugepages(void)
{
	cJSON *d = cJSON_CreateObject(), *nodes = cJSON_CreateArray();
	char line[768] = "", path[160];
	unsigned long long tot, fr, all_free = 0;
	bool short_node = false;
	int node, seen = 0;

	cJSON_AddItemToObject(d, "nodes", nodes);
	for (node = 0; node < 1024; node++) {
		size_t n = strlen(line);
		cJSON *o;

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d",
			 node);
		if (!exists(path))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d"
			 "/hugepages/hugepages-2048kB/nr_hugepages", node);
		if (!read_ull(path, &tot))
			tot = 0;
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d"
			 "/hugepages/hugepages-2048kB/free_hugepages", node);
		if (!read_ull(path, &fr))
			fr = 0;
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "node", node);
		cJSON_AddNumberToObject(o, "total", (double)tot);
		cJSON_AddNumberToObject(o, "free", (double)fr);
		cJSON_AddItemToArray(nodes, o);
		snprintf(line + n, sizeof(line) - n, "%snode%d %llu/%llu",
			 n ? ", " : "", node, fr, tot);
		short_node |= !fr;
		all_free += fr;
		seen++;
	}
	if (!seen) {	/* no NUMA sysfs: the global pool */
		if (!read_ull("/sys/kernel/mm/hugepages/hugepages-2048kB/"
			      "nr_hugepages", &tot))
			tot = 0;
		if (!read_ull("/sys/kernel/mm/hugepages/hugepages-2048kB/"
			      "free_hugepages", &fr))
			fr = 0;
		snprintf(line, sizeof(line), "all %llu/%llu", fr, tot);
		short_node = !fr;
		all_free = fr;
	}
	cJSON_AddNumberToObject(d, "free_total", (double)all_free);
	if (short_node) {
		item("hugepages", ST_WARN, d, "echo N > /sys/devices/system/"
		     "node/nodeX/hugepages/hugepages-2048kB/nr_hugepages (or "
		     "sysctl vm.nr_hugepages=N)", "2 MiB pages free/total: %s; "
		     "buffers %sfall back to 4 KiB pages", line,
		     all_free ? "on a node with none free " : "");
		return;
	}
	item("hugepages", ST_OK, d, NULL, "2 MiB pages free/total: %s", line);
}

/* ---- RLIMIT_MEMLOCK against the caps --------------------------------- */

static bool has_cap_ipc_lock(void)
{
	char line[256];
	unsigned long long eff = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			found = true;
			break;
		}
	fclose(f);
	return found && (eff >> 14 & 1);	/* CAP_IPC_LOCK */
}

static void check_memlock(void)
{
	cJSON *d = cJSON_CreateObject();
	unsigned long long user_mb = 0, cap = 0;
	char capdesc[160] = "no module cap known";
	bool have_user, unlimited;
	struct rlimit rl;

	getrlimit(RLIMIT_MEMLOCK, &rl);
	unlimited = rl.rlim_cur == RLIM_INFINITY;
	have_user = read_ull(SYS_MODULE "/parameters/max_pinned_user_mb",
			     &user_mb);
	if (g.mod_version) {
		cap = g.mod_v.max_pinned;
		snprintf(capdesc, sizeof(capdesc), "module max_pinned %.0f MiB",
			 mib(cap));
	}
	if (have_user && user_mb && (!cap || (user_mb << 20) < cap)) {
		cap = user_mb << 20;
		snprintf(capdesc, sizeof(capdesc), "max_pinned_user_mb %llu",
			 user_mb);
	}
	if (unlimited)
		cJSON_AddNullToObject(d, "rlimit_memlock");
	else
		cJSON_AddNumberToObject(d, "rlimit_memlock",
					(double)rl.rlim_cur);
	cJSON_AddBoolToObject(d, "cap_ipc_lock", has_cap_ipc_lock());
	if (g.mod_version)
		cJSON_AddNumberToObject(d, "max_pinned",
					(double)g.mod_v.max_pinned);
	else
		cJSON_AddNullToObject(d, "max_pinned");
	if (have_user)
		cJSON_AddNumberToObject(d, "max_pinned_user_mb",
					(double)user_mb);
	else
		cJSON_AddNullToObject(d, "max_pinned_user_mb");
	if (has_cap_ipc_lock()) {
		item("memlock", ST_OK, d, NULL, "CAP_IPC_LOCK: RLIMIT_MEMLOCK "
		     "does not apply; %s", capdesc);
		return;
	}
	if (unlimited) {
		item("memlock", ST_OK, d, NULL, "RLIMIT_MEMLOCK unlimited; %s",
		     capdesc);
		return;
	}
	if ((cap && rl.rlim_cur < cap) || (!cap && rl.rlim_cur < (1ULL << 30))) {
		item("memlock", ST_WARN, d, "ulimit -l unlimited, or in "
		     "/etc/security/limits.d/syshax.conf: @syshax - memlock "
		     "unlimited (systemd: LimitMEMLOCK=infinity)",
		     "RLIMIT_MEMLOCK %.0f MiB < %s: the module's buffers over "
		     "%.0f MiB per user fail with ENOMEM", mib(rl.rlim_cur),
		     cap ? capdesc : "1 GiB (no module cap known)",
		     mib(rl.rlim_cur));
		return;
	}
	item("memlock", ST_OK, d, NULL, "RLIMIT_MEMLOCK %.0f MiB; %s",
	     mib(rl.rlim_cur), capdesc);
}

/* ---- IOMMU and VFIO -------------------------------------------------- */

static void check_iommu(void)
{
	bool on = dir_nonempty("/sys/class/iommu") ||
		  dir_nonempty("/sys/kernel/iommu_groups");
	cJSON *d = cJSON_CreateObject();

	cJSON_AddBoolToObject(d, "on", on);
	if (!on) {
		item("iommu", ST_WARN, d, "enable VT-d / AMD-Vi in the firmware "
		     "and boot with intel_iommu=on iommu=pt (only xPU engines "
		     "through VFIO need it)", "IOMMU off (/sys/class/iommu "
		     "and /sys/kernel/iommu_groups empty)");
		return;
	}
	item("iommu", ST_OK, d, NULL, "IOMMU on");
}

/* Whether modules.dep or modules.builtin of the running kernel names a
 * module whose file starts with name (vfio-pci.ko, vfio_pci.ko...). */
static bool module_available(const char *name)
{
	static const char *const files[] = { "modules.dep",
					     "modules.builtin" };
	char path[256], line[1024], pat[64];
	struct utsname u;
	bool found = false;
	size_t i;

	if (uname(&u))
		return false;
	snprintf(pat, sizeof(pat), "/%s.ko", name);
	for (i = 0; i < 2 && !found; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "/lib/modules/%s/%s", u.release,
			 files[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (!found && fgets(line, sizeof(line), f))
			found = strstr(line, pat) != NULL;
		fclose(f);
	}
	return found;
}

static void check_vfio(void)
{
	bool vfio = exists("/sys/module/vfio");
	bool pci = exists("/sys/module/vfio_pci");
	bool avail = module_available("vfio-pci") ||
		     module_available("vfio_pci");
	cJSON *d = cJSON_CreateObject();

	cJSON_AddBoolToObject(d, "vfio", vfio);
	cJSON_AddBoolToObject(d, "vfio_pci", pci);
	cJSON_AddBoolToObject(d, "available", avail);
	if (vfio && pci) {
		item("vfio", ST_OK, d, NULL, "vfio and vfio_pci loaded");
		return;
	}
	item("vfio", ST_WARN, d, avail ? "modprobe vfio-pci" :
	     "install the kernel's vfio modules (linux-image-* has them)",
	     "vfio%s loaded, vfio_pci%s loaded; vfio-pci %s for this "
	     "kernel (only xPU engines through VFIO need it)",
	     vfio ? "" : " not", pci ? "" : " not",
	     avail ? "available" : "not found");
}

/* ---- CPU kernels ----------------------------------------------------- */

static void check_cpu(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static const char *const names[] = { "avx2", "avx512", "avx512bf16",
					     "amx" };
#elif defined(__aarch64__)
	static const char *const names[] = { "neon", "dotprod", "i8mm", "sve" };
#else
	static const char *const names[] = { NULL };
#endif
	cJSON *d = cJSON_CreateObject(), *runs = cJSON_CreateArray();
	cJSON *amx = cJSON_CreateArray();
	const char *want = getenv("SYSHAX_ISA");
	struct shxk_cpu_info ci;
	char list[256] = "generic";
	size_t i;
	int ret, err;

	/* First: it asks Linux for the AMX tile state "amx" is selected by. */
	ret = shxk_init();
	cJSON_AddItemToArray(runs, cJSON_CreateString("generic"));
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(list);

		if (!names[i] || !shxk_cpu_select(names[i], &err))
			continue;
		cJSON_AddItemToArray(runs, cJSON_CreateString(names[i]));
		snprintf(list + n, sizeof(list) - n, " %s", names[i]);
	}
	shxk_cpu_info(&ci);
	cJSON_AddStringToObject(d, "model", ci.model);
	cJSON_AddItemToObject(d, "runs", runs);
	cJSON_AddStringToObject(d, "variant", shxk_isa_name());
	cJSON_AddItemToObject(d, "amx", amx);
	if (ci.amx & SHXK_AMX_TILE)
		cJSON_AddItemToArray(amx, cJSON_CreateString("tile"));
	if (ci.amx & SHXK_AMX_INT8)
		cJSON_AddItemToArray(amx, cJSON_CreateString("int8"));
	if (ci.amx & SHXK_AMX_BF16)
		cJSON_AddItemToArray(amx, cJSON_CreateString("bf16"));
	cJSON_AddBoolToObject(d, "amx_usable", ci.amx && !ci.amx_perm);
	if (ret) {
		item("cpu", ST_FAIL, d, "unset SYSHAX_ISA, or name one this "
		     "CPU runs", "SYSHAX_ISA=%s: %s; this CPU runs: %s",
		     want ? want : "", ret == -EINVAL ? "unknown variant" :
		     "not on this CPU or build", list);
		return;
	}
	if (!strcmp(shxk_isa_name(), "generic") && !(want && *want)) {
		item("cpu", ST_WARN, d, "run on a CPU with AVX2 or NEON for "
		     "fast CPU-engine jobs", "kernels generic (no SIMD variant "
		     "for this CPU)");
		return;
	}
	if (ci.amx && ci.amx_perm) {
		item("cpu", ST_WARN, d, "AMX needs Linux 5.16 or later (it "
		     "enables the tile state) and no seccomp filter that "
		     "denies arch_prctl",
		     "%s: kernels %s; the CPU has AMX but this process may "
		     "not use it: %s", ci.model, shxk_isa_name(),
		     strerror(-ci.amx_perm));
		return;
	}
	item("cpu", ST_OK, d, NULL, "%s: kernels %s (syshaxd's CPU engine); "
	     "this CPU runs: %s; AMX %s", ci.model, shxk_isa_name(), list,
	     ci.amx ? "usable" : "none");
}

/* ---- the daemon's memory cap ----------------------------------------- */

static void check_daemon_cap(void)
{
	cJSON *d = cJSON_CreateObject();

	if (!g.daemon_version) {
		cJSON_AddNullToObject(d, "max_pinned");
		item("daemon-cap", ST_WARN, d, "start syshaxd (see the daemon "
		     "line) to see its cap", "unknown: no syshaxd answered");
		return;
	}
	cJSON_AddNumberToObject(d, "max_pinned",
				(double)g.daemon_v.max_pinned);
	cJSON_AddNumberToObject(d, "max_buf_size",
				(double)g.daemon_v.max_buf_size);
	item("daemon-cap", ST_OK, d, NULL, "syshaxd pins at most %.0f MiB "
	     "(max_pinned_mb), %.0f MiB per buffer", mib(g.daemon_v.max_pinned),
	     mib(g.daemon_v.max_buf_size));
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [--json]\n"
"Checks a sysHAX setup: one line per item, OK, WARN or FAIL, with a fix.\n"
"  module      syshax.ko loaded, its UAPI equal to libsyshax-rt's\n"
"  device      /dev/syshax mode and group; whether you can open it\n"
"  daemon      syshaxd's socket ($SYSHAX_DEVICE, $XDG_RUNTIME_DIR's,\n"
"              /run/syshax/syshaxd.sock) and its UAPI\n"
"  hugepages   2 MiB pages free/total per NUMA node\n"
"  memlock     RLIMIT_MEMLOCK against max_pinned / max_pinned_user_mb\n"
"  iommu, vfio IOMMU on; vfio modules loaded\n"
"  cpu         the kernel variant syshaxd's CPU engine runs\n"
"  daemon-cap  syshaxd's max_pinned\n"
"  -j, --json  one JSON object instead\n"
"  -h, --help  this text\n"
"Exit status: 0 without FAIL, 1 with any FAIL, 2 on a usage error.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	cJSON *root = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			g_json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (g_json) {
		root = cJSON_CreateObject();
		g_items = cJSON_AddArrayToObject(root, "checks");
	}
	check_module();
	check_device();
	check_daemon();
	check_hugepages();
	check_memlock();
	check_iommu();
	check_vfio();
	check_cpu();
	check_daemon_cap();
	if (g_json) {
		char *s;

		cJSON_AddNumberToObject(root, "lib_uapi", SYSHAX_UAPI_VERSION);
		cJSON_AddNumberToObject(root, "ok", g_counts[ST_OK]);
		cJSON_AddNumberToObject(root, "warn", g_counts[ST_WARN]);
		cJSON_AddNumberToObject(root, "fail", g_counts[ST_FAIL]);
		s = cJSON_Print(root);
		if (s)
			puts(s);
		free(s);
		cJSON_Delete(root);
	} else {
		printf("%d OK, %d WARN, %d FAIL\n", g_counts[ST_OK],
		       g_counts[ST_WARN], g_counts[ST_FAIL]);
	}
	return g_counts[ST_FAIL] ? 1 : 0;
}
