// SPDX-License-Identifier: MIT
/*
 * syshax-demo: the first thing to run. Opens whichever backend exists, and
 * on each NUMA node allocates a buffer, maps it, writes a pattern, exports
 * it, imports the exported fd back and checks the bytes through the import.
 */
#include <errno.h>
#include <getopt.h>
#include <numa.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syshax/rt.h"

#define DEF_SIZE_MB	4

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
"Usage: %s [--size MiB] [--device PATH]\n"
"Allocates a sysHAX buffer on each NUMA node, writes it, exports it, imports\n"
"the exported fd and checks the bytes through the import.\n"
"  -s, --size MiB     buffer size per node (default %d)\n"
"  -d, --device PATH  /dev/syshax or a syshaxd socket (default: auto:\n"
"                     $SYSHAX_DEVICE, /dev/syshax, syshaxd's socket)\n"
"  -h, --help         this text\n", prog, DEF_SIZE_MB);
}

static unsigned char pattern(int node, uint64_t i)
{
	return (unsigned char)(i * 131 + (uint64_t)node * 17 + (i >> 12));
}

/* Bytes of the buffer on its node, and elsewhere. */
static void placement(const struct syshax_buf_info_args *info, int node,
		      uint64_t *here, uint64_t *other)
{
	int n;

	*here = *other = 0;
	for (n = 0; n < SYSHAX_MAX_NODES; n++) {
		if (n == node)
			*here += info->node_bytes[n];
		else
			*other += info->node_bytes[n];
	}
}

/* One node: returns 0 or -errno, and names the failing step in *step. */
static int demo_node(struct syshax *sh, int node, uint64_t size,
		     const char **step)
{
	struct syshax_buffer buf, imp;
	bool imported = false;
	struct syshax_buf_info_args info;
	uint64_t i, here, other;
	unsigned char *p, *q;
	int fd = -1, ret;

	*step = "alloc";
	ret = syshax_buf_alloc(sh, size, node, SYSHAX_BUF_ALLOW_SMALL, &buf);
	if (ret)
		return ret;
	*step = "map";
	ret = syshax_buf_map(sh, &buf);
	if (ret)
		goto err_free;
	p = buf.addr;
	for (i = 0; i < buf.size; i++)
		p[i] = pattern(node, i);

	*step = "export";
	fd = syshax_buf_export(sh, &buf, SYSHAX_EXPORT_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}
	*step = "import";
	ret = syshax_buf_import(sh, fd, &imp);
	if (ret)
		goto err_close;
	imported = true;
	*step = "map the import";
	ret = syshax_buf_map(sh, &imp);
	if (ret)
		goto err_imp;
	*step = "check through the import";
	ret = -EIO;
	if (imp.id != buf.id || imp.size != buf.size)
		goto err_imp;
	q = imp.addr;
	for (i = 0; i < imp.size; i++)
		if (q[i] != pattern(node, i))
			goto err_imp;
	*step = "info";
	ret = syshax_buf_info(sh, &buf, &info);
	if (ret)
		goto err_imp;
	placement(&info, node, &here, &other);
	printf("%4d  %8.1f  %3u x %-6.0f  %8.1f  %8.1f  %9d  %6u  ok\n",
	       node, buf.size / 1048576.0, info.nr_chunks,
	       info.chunk_size / 1024.0, here / 1048576.0, other / 1048576.0,
	       fd, imp.handle);
	if (info.chunk_size < (2U << 20))
		printf("      note: no 2 MiB hugepages free on node %d: the "
		       "buffer uses %.0f KiB pages (see syshax-check)\n", node,
		       info.chunk_size / 1024.0);
	ret = 0;
err_imp:
	if (imported)
		syshax_buf_free(sh, &imp);
err_close:
	close(fd);
err_free:
	syshax_buf_free(sh, &buf);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct syshax_open_opts oo = { .backend = SYSHAX_BACKEND_AUTO };
	struct syshax_version_args v;
	unsigned long size_mb = DEF_SIZE_MB;
	int c, node, nodes, ret, failed = 0;
	struct syshax *sh;
	char *end;

	while ((c = getopt_long(argc, argv, "s:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			size_mb = strtoul(optarg, &end, 10);
			if (*end || !size_mb || size_mb > (1UL << 20)) {
				fprintf(stderr, "%s: bad size '%s'\n", argv[0],
					optarg);
				return 2;
			}
			break;
		case 'd':
			oo.path = optarg;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr, argv[0]);
		return 2;
	}

	ret = syshax_open(&sh, &oo);
	if (ret) {
		fprintf(stderr, "syshax-demo: no sysHAX backend: %s\n"
			"  tried: %s\n"
			"  load syshax.ko or start syshaxd (scripts/demo does); "
			"run syshax-check for what is missing\n",
			syshax_strerror(ret), syshax_open_tried());
		return 1;
	}
	ret = syshax_version(sh, &v);
	if (ret) {
		fprintf(stderr, "syshax-demo: version: %s\n",
			syshax_strerror(ret));
		syshax_close(sh);
		return 1;
	}
	nodes = numa_available() >= 0 ? numa_max_node() + 1 : (int)v.nr_nodes;
	if (nodes < 1)
		nodes = 1;
	printf("syshax-demo: %s backend, UAPI %u, %d NUMA node%s, %lu MiB per "
	       "node\n", syshax_backend(sh) == SYSHAX_BACKEND_KERNEL ?
	       "kernel (/dev/syshax)" : "userspace (syshaxd)",
	       v.uapi_version, nodes, nodes > 1 ? "s" : "", size_mb);
	printf("node  size MiB  chunks (KiB)  MiB here  MiB else  export fd  "
	       "import  check\n");
	for (node = 0; node < nodes; node++) {
		const char *step;

		if (numa_available() >= 0 &&
		    !numa_bitmask_isbitset(numa_all_nodes_ptr, node)) {
			printf("%4d  skipped: no memory on this node\n", node);
			continue;
		}
		ret = demo_node(sh, node, (uint64_t)size_mb << 20, &step);
		if (ret) {
			printf("%4d  failed at %s: %s\n", node, step,
			       syshax_strerror(ret));
			if (ret == -ENOMEM)
				printf("      over max_pinned_mb / "
				       "max_pinned_user_mb / RLIMIT_MEMLOCK, "
				       "or no memory on the node (see "
				       "syshax-check)\n");
			failed++;
		}
	}
	syshax_close(sh);
	return failed ? 1 : 0;
}
