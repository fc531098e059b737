# SPDX-License-Identifier: MIT
"""A device kernel reads and writes a syshax buffer in place, the way the
xPU worker reaches the KV caches (syshax.xpu.cuda_view on cuda, a
Buffer.torch view on cpu): the buffer is imported from an exported fd in
a second context, as the worker imports a client's, the device tensor
sits at the mapping's own address (no copy), a reduction on the device
reads the bytes the CPU wrote, and the bytes an elementwise kernel wrote
are checked from the CPU side through the first context's mapping.
    python3 tests/gpu/inplace.py cuda|cpu     ($SYSHAX_DEVICE: the daemon)
Prints "CHECK inplace <device>: ok ..." and exits 0, else exits 1."""
import os
import sys

import numpy as np
import torch

import syshax
from syshax import xpu

dev = sys.argv[1]
N = 1 << 20                     # int32s: 4 MiB
with syshax.open() as owner, syshax.open() as worker:
    with owner.alloc(4 * N) as b:
        host = b.numpy("int32", N)
        host[:] = np.arange(N, dtype=np.int32)
        fd = b.export()
        mine = worker.import_fd(fd)
        os.close(fd)
        if dev == "cuda":
            t = xpu.cuda_view(mine)
        else:
            t = mine.torch("uint8", 4 * N)
        if t.device.type != dev or t.data_ptr() != mine.addr:
            sys.exit(f"FAIL: the {dev} tensor is at {t.data_ptr():#x} on "
                     f"{t.device}, the mapping at {mine.addr:#x}")
        t32 = t.view(torch.int32)
        s = int(t32.sum(dtype=torch.int64))          # the device reads
        t32.mul_(3).add_(1)                          # and writes
        if dev == "cuda":
            torch.cuda.synchronize()
        want = np.arange(N, dtype=np.int64) * 3 + 1
        bad = np.flatnonzero(host.astype(np.int64) != want)
        if s != N * (N - 1) // 2 or bad.size:
            sys.exit(f"FAIL: {dev} kernel in place: sum {s}, "
                     f"{bad.size} int32s differ (first at {bad[:1]})")
        del t, t32
        if dev == "cuda":
            torch.cuda.check_error(
                torch.cuda.cudart().cudaHostUnregister(mine.addr))
        mine.free()
print(f"CHECK inplace {dev}: ok: {4 * N} bytes read and written by {dev} "
      f"kernels at the mapping's address, checked from the CPU side")
