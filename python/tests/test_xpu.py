# SPDX-License-Identifier: MIT
"""The PyTorch xPU worker (syshax.xpu) against syshaxd's CPU engine on the
same model files: K/V that one side wrote, read by the other, element by
element. The worker runs in this process on buffers it imported from
exported fds, as it does for a client (same code path but the socket).

Tolerances, f32 everywhere but the caches: the two sides sum the same
products in different orders (BLAS blocks against the engine's kernels),
so each value carries a relative error of a few float32 ulps per layer;
over the tiny models' layers that stays under 1e-4 of the value's scale.
With f16/bf16 caches a value that lands near a rounding boundary may
round one way on one side and the other way on the other: one ulp of the
cache type (2^-10, 2^-7 relative) is allowed on top."""
import os

import numpy as np
import pytest

from syshax import _syshax as _c
from syshax import ops
from syshax import xpu      # run.sh has skipped already without torch

KV = {"f32": (np.float32, 0.0), "f16": (np.float16, 2.0 ** -10),
      "bf16": (None, 2.0 ** -7)}
BS, NB, MB = 4, 8, 8        # block size, blocks, blocks per sequence


def model_dir():
    d = os.environ.get("SYSHAX_TEST_MODEL_DIR")
    if not d:
        pytest.fail("SYSHAX_TEST_MODEL_DIR is not set: run the tests with "
                    "python/tests/run.sh (make check-python)")
    return d


def on_worker(w, job):
    """A job run by the worker as if a client had sent it."""
    refs = []
    for r, _ in job.refs:
        buf, off, n = r.resolved()
        refs.append((buf.id, off, n))
    return w.step(job.op, refs, _c.unpack("step", job.params))


def as_f32(buf, kv, count):
    """The cache's values as f32."""
    if kv == "bf16":
        u = buf.numpy("uint16", count).astype(np.uint32) << 16
        return u.view(np.float32)
    return buf.numpy(KV[kv][0], count).astype(np.float32)


def close(a, b, kv):
    """Max abs difference, and whether it is within the tolerance."""
    scale = max(float(np.abs(a).max()), 1.0)
    d = float(np.abs(a - b).max())
    return d, d <= 1e-4 * scale + KV[kv][1] * float(np.abs(a).max())


@pytest.mark.parametrize("kv", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("name", ["tiny.gguf", "tinymoe.gguf"])
def test_kv_both_ways(sh, name, kv, capsys):
    with sh.alloc(4096) as binfo:
        (c,) = sh.run(ops.model_load(binfo, path=name))
        info = _c.unpack("model_info", binfo.raw)
    model = c.result
    L, HKV, D, V = (info["n_layer"], info["n_head_kv"], info["head_dim"],
                    info["n_vocab"])
    esize = 4 if kv == "f32" else 2
    layer = NB * BS * HKV * D * esize
    w = xpu.Worker(sh)
    w.hello(os.path.join(model_dir(), name))
    prompt = [(7 + 131 * i) % V for i in range(11)]
    P = len(prompt)
    try:
        with sh.alloc(L * layer) as kc, sh.alloc(L * layer) as vc, \
                sh.alloc(L * layer) as kw, sh.alloc(L * layer) as vw, \
                sh.alloc(4096) as toks, sh.alloc(4096) as table, \
                sh.alloc(4096) as pos, sh.alloc(V * 4) as out:
            for b in (kc, vc, kw, vw, toks, table, pos, out):
                fd = b.export()
                w.add_buffer(b.id, fd)
                os.close(fd)
            table.numpy("int32", MB)[:] = [5, 2, 7, 0, 3, 6, 1, 4]
            toks.numpy("int32", P)[:] = prompt
            kw_ = dict(model=model, block_size=BS, num_blocks=NB,
                       max_blocks=MB, kv_type=kv)
            pf = ops.prefill(toks, table, kc, vc, out, n=P, pos=0, **kw_)
            (c,) = sh.run(pf)
            cpu_logits = out.numpy("float32", V).copy()
            assert on_worker(w, ops.prefill(toks, table, kw, vw, out, n=P,
                                            pos=0, **kw_)) == 1
            wk_logits = out.numpy("float32", V).copy()
            # The slots the prompt filled, every layer, K and V.
            slots = [table.numpy("int32", MB)[p // BS] * BS + p % BS
                     for p in range(P)]
            rows = HKV * D
            count = L * NB * BS * rows
            for what, a, b in (("K", kc, kw), ("V", vc, vw)):
                x = as_f32(a, kv, count).reshape(L, NB * BS, rows)[:, slots]
                y = as_f32(b, kv, count).reshape(L, NB * BS, rows)[:, slots]
                assert np.abs(x).max() > 0
                d, ok = close(x, y, kv)
                with capsys.disabled():
                    print(f"\n{name} kv {kv}: prefill {what}: "
                          f"{x.size} elements, max abs diff {d:.3g}")
                assert ok, f"{what}: max abs diff {d}"
            d, ok = close(cpu_logits, wk_logits, "f32")
            assert ok, f"prefill logits: max abs diff {d}"
            # Decode at position P: the CPU reads the worker's caches, the
            # worker the CPU's; both against the CPU on its own.
            toks.numpy("int32", 1)[:] = int(np.argmax(cpu_logits))
            pos.numpy("int32", 1)[:] = P
            sh.run(ops.decode(toks, pos, table, kc, vc, out, n=1, **kw_))
            ref = out.numpy("float32", V).copy()
            assert on_worker(w, ops.decode(toks, pos, table, kc, vc, out,
                                           n=1, **kw_)) == 1
            d1, ok1 = close(ref, out.numpy("float32", V), "f32")
            sh.run(ops.decode(toks, pos, table, kw, vw, out, n=1, **kw_))
            d2, ok2 = close(ref, out.numpy("float32", V), "f32")
            with capsys.disabled():
                print(f"{name} kv {kv}: decode logits, worker on the CPU's "
                      f"K/V: {d1:.3g}, CPU on the worker's: {d2:.3g}")
            assert ok1 and ok2, (d1, d2)
    finally:
        w.drop_buffers()
        sh.run(ops.weights_free(wset=model))


def test_bad_step(sh, model_path):
    """A step the engine would refuse fails on the worker too."""
    w = xpu.Worker(sh)
    w.hello(os.path.join(model_dir(), model_path))
    with sh.alloc(4096) as b:
        with pytest.raises(xpu.StepError):
            on_worker(w, ops.prefill(b, b, b, b, b, n=1, pos=0, model=1,
                                     block_size=BS, num_blocks=NB,
                                     max_blocks=MB))
