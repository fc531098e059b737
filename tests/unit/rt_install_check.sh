#!/bin/sh
# Installs libsyshax-rt into a scratch DESTDIR and builds a program against
# the installed copy with pkg-config (shared, then static); the program
# must include <syshax/rt.h>, link, and run against the installed .so.
#   tests/unit/rt_install_check.sh <make> <cc>
set -eu
make=${1:-make}
cc=${2:-cc}
dir=$(mktemp -d "${TMPDIR:-/tmp}/rt_install.XXXXXX")
trap 'rm -rf "$dir"' EXIT
$make -s install-runtime DESTDIR="$dir" PREFIX=/opt/syshax >/dev/null
export PKG_CONFIG_PATH="$dir/opt/syshax/lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$dir"
cat > "$dir/t.c" <<'C'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syshax/rt.h>

int main(void)
{
	struct syshax_job job;

	syshax_job_init(&job, SYSHAX_OP_NOP, 7);
	if (job.user_data != 7 || strcmp(syshax_strerror(-EPIPE),
	    "Engine went away while running the job"))
		return 1;
	puts("installed libsyshax-rt: ok");
	return 0;
}
C
# pkg-config prints several words: split them on purpose.
cflags=$(pkg-config --cflags syshax-rt)
libs=$(pkg-config --libs syshax-rt)
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Werror $cflags -o "$dir/t" "$dir/t.c" $libs
LD_LIBRARY_PATH="$dir/opt/syshax/lib" "$dir/t"
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Werror $cflags -o "$dir/ts" "$dir/t.c" \
	"$dir/opt/syshax/lib/libsyshax-rt.a" -lpthread
env -u LD_LIBRARY_PATH "$dir/ts"
# Only the API is exported, under the version node.
nm -D --defined-only "$dir/opt/syshax/lib/libsyshax-rt.so.0" |
	awk '$2 == "T" && $3 !~ /^syshax_[a-z_]+@@SYSHAX_RT_0\.[1234]$/ { bad = 1; print "unexpected export: " $3 } END { exit bad }'
test "$(readlink "$dir/opt/syshax/lib/libsyshax-rt.so.0")" = libsyshax-rt.so.0.1.0
for p in syshax_open syshax_close syshax_wait syshax_engine_map; do
	test -e "$dir/opt/syshax/share/man/man3/$p.3"
done
echo "install check: ok"
