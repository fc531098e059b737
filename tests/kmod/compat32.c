// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A 32-bit x86 program that buf_test runs in the VM with a syshax fd (fd 3,
 * opened by its 64-bit parent, with a buffer at handle 1): open, ioctl and
 * mmap2 must all fail with -EOPNOTSUPP, since the module refuses 32-bit
 * callers. Built without libc (no i386 libc is installed): raw int $0x80
 * system calls, exit status 0 when every call was refused.
 */
#include "syshax.h"

#define NR_EXIT		1
#define NR_WRITE	4
#define NR_OPEN		5
#define NR_CLOSE	6
#define NR_IOCTL	54
#define NR_MMAP2	192
#define T_O_RDWR	2
#define T_PROT_RW	3
#define T_MAP_SHARED	1
#define T_EOPNOTSUPP	95
#define T_FD		3
/* Handle 1's mmap offset in pages: 1 << 40 bytes. */
#define T_PGOFF_H1	(1UL << 28)

static long sys3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("int $0x80"
			 : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory");
	return ret;
}

/* The sixth argument goes in %ebp, which cannot be named as an operand. */
static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;

	__asm__ volatile("pushl %7\n\tpush %%ebp\n\tmov 4(%%esp), %%ebp\n\t"
			 "int $0x80\n\tpop %%ebp\n\tadd $4, %%esp"
			 : "=a"(ret)
			 : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e),
			   "g"(f)
			 : "memory");
	return ret;
}

static void say(const char *s)
{
	long n = 0;

	while (s[n])
		n++;
	sys3(NR_WRITE, 1, (long)s, n);
}

/* Reports the call and its result; 1 when it was not refused. */
static int refused(const char *what, long ret)
{
	say(what);
	if (ret == -T_EOPNOTSUPP) {
		say(": -EOPNOTSUPP\n");
		return 0;
	}
	say(ret >= 0 ? ": succeeded\n" : ": another error\n");
	if (ret >= 0 && ret < 1024 && ret != T_FD)
		sys3(NR_CLOSE, ret, 0, 0);
	return 1;
}

void __attribute__((noreturn, used)) _start(void)
{
	static unsigned char args[512];
	int bad = 0;

	bad += refused("compat32: open", sys3(NR_OPEN, (long)"/dev/syshax",
					      T_O_RDWR, 0));
	bad += refused("compat32: ioctl VERSION",
		       sys3(NR_IOCTL, T_FD, (long)SYSHAX_IOC_VERSION,
			    (long)args));
	bad += refused("compat32: ioctl BUF_ALLOC",
		       sys3(NR_IOCTL, T_FD, (long)SYSHAX_IOC_BUF_ALLOC,
			    (long)args));
	bad += refused("compat32: mmap2 of handle 1",
		       sys6(NR_MMAP2, 0, 4096, T_PROT_RW, T_MAP_SHARED, T_FD,
			    T_PGOFF_H1));
	sys3(NR_EXIT, bad, 0, 0);
	for (;;)
		;
}
