#!/bin/sh
# VM suite: the conformance suite on /dev/syshax with one system call per
# job call (SUBMIT, WAIT, ENGINE_*), rings off; conformance-rings.sh runs
# the same suite through the shared rings.
[ -c /dev/syshax ] || { echo "SKIP: conformance-syscalls: no /dev/syshax"; exit 77; }
SYSHAX_RINGS=0 exec /bin/conformance
