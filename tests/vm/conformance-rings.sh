#!/bin/sh
# VM suite: the conformance suite on /dev/syshax through the shared rings
# (RING_SETUP, kicks with SYSHAX_SUBMIT_RING; its engine, syshaxd
# --engine-only, on rings too). conformance-syscalls.sh runs the old path.
[ -c /dev/syshax ] || { echo "SKIP: conformance-rings: no /dev/syshax"; exit 77; }
SYSHAX_RINGS=1 exec /bin/conformance
