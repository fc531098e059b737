# SPDX-License-Identifier: MIT
"""Every op of uapi/syshax_ops.h through its builder, against syshaxd's
engine, with results checked against numpy where the op computes."""
import errno

import numpy as np
import pytest

import syshax
from syshax import ops

# f32 weights and activations: the engine and numpy differ by summation
# order only (docs/engine.md); 1e-4 relative leaves room for that.
RTOL, ATOL = 1e-4, 1e-5
HID, FF, NEXP, TOPK = 64, 96, 4, 2
rng = np.random.default_rng(7)


def rnd(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1 + np.exp(-x))


def swiglu(h, g, u, d):
    return (silu(h @ g.T) * (h @ u.T)) @ d.T


W = {
    "blk.0.ffn_norm.weight": (1 + 0.1 * rnd(HID)),
    "blk.0.ffn_gate.weight": rnd(FF, HID, scale=HID ** -0.5),
    "blk.0.ffn_up.weight": rnd(FF, HID, scale=HID ** -0.5),
    "blk.0.ffn_down.weight": rnd(HID, FF, scale=FF ** -0.5),
    "blk.1.ffn_norm.weight": (1 + 0.1 * rnd(HID)),
    "blk.1.ffn_gate_inp.weight": rnd(NEXP, HID, scale=HID ** -0.5),
    "blk.1.ffn_gate_exps.weight": rnd(NEXP, FF, HID, scale=HID ** -0.5),
    "blk.1.ffn_up_exps.weight": rnd(NEXP, FF, HID, scale=HID ** -0.5),
    "blk.1.ffn_down_exps.weight": rnd(NEXP, HID, FF, scale=FF ** -0.5),
}

# Ops each test below runs; test_every_op_is_covered checks the list
# against the header's (a new op without a builder and a test fails).
COVERED = {"NOP", "COPY", "WEIGHTS_LOAD", "WEIGHTS_FREE", "GEMM", "FFN",
           "MOE", "ATTN_DECODE", "ENGINE_STATS", "MODEL_LOAD", "DECODE",
           "PREFILL", "REPORT_XPU"}


def test_every_op_is_covered():
    header = {k[3:] for k in dir(syshax) if k.startswith("OP_")} - {"MAX"}
    assert header == COVERED
    assert {n.upper() for n in ops.__all__} == COVERED
    assert len(header) == syshax.OP_MAX - 14  # NOP, COPY, 16..26


@pytest.fixture
def wset(sh):
    with syshax.load_weights(sh, W) as ws:
        yield ws


def test_weights_load_gemm(sh, wset):
    m = 3
    x = rnd(m, HID)
    with sh.alloc(1 << 16) as bx, sh.alloc(1 << 16) as by:
        bx.numpy("float32", (m, HID))[:] = x
        (c,) = sh.run(ops.gemm(bx, by, wset=wset.id, m=m,
                               tensor="blk.0.ffn_up.weight"))
        assert c.result == m
        want = x @ W["blk.0.ffn_up.weight"].T
        np.testing.assert_allclose(by.numpy("float32", (m, FF)), want,
                                   rtol=RTOL, atol=ATOL)
        # bf16 out: the same within bf16's rounding.
        sh.run(ops.gemm(bx, by, wset=wset.id, m=m, y_type="bf16",
                        tensor="blk.0.ffn_up.weight"))
        got = by.torch("bfloat16", (m, FF)).float().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def test_ffn(sh, wset):
    m, eps = 2, 1e-5
    x = rnd(m, HID)
    with sh.alloc(1 << 16) as b:
        b.numpy("float32", (m, HID))[:] = x
        sh.run(ops.ffn(b, b, wset=wset.id, layer=0, m=m, eps=eps,
                       flags=syshax.FFN_NORM | syshax.FFN_RESIDUAL))
        h = rms(x, W["blk.0.ffn_norm.weight"], eps)
        want = x + swiglu(h, W["blk.0.ffn_gate.weight"],
                          W["blk.0.ffn_up.weight"],
                          W["blk.0.ffn_down.weight"])
        np.testing.assert_allclose(b.numpy("float32", (m, HID)), want,
                                   rtol=RTOL, atol=ATOL)


def moe_ref(x, eps, topk):
    h = rms(x, W["blk.1.ffn_norm.weight"], eps)
    logits = h @ W["blk.1.ffn_gate_inp.weight"].T
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = x.copy()
    for t in range(x.shape[0]):
        ids = np.argsort(-p[t], kind="stable")[:topk]
        w = p[t, ids] / p[t, ids].sum()
        for e, we in zip(ids, w):
            out[t] += we * swiglu(h[t:t + 1],
                                  W["blk.1.ffn_gate_exps.weight"][e],
                                  W["blk.1.ffn_up_exps.weight"][e],
                                  W["blk.1.ffn_down_exps.weight"][e])[0]
    return out, logits


def test_moe_router_and_logits(sh, wset):
    m, eps = 4, 1e-6
    x = rnd(m, HID)
    want, logits = moe_ref(x, eps, TOPK)
    with sh.alloc(1 << 16) as bx, sh.alloc(1 << 16) as by, \
            sh.alloc(4096) as bl:
        bx.numpy("float32", (m, HID))[:] = x
        sh.run(ops.moe(bx, by, wset=wset.id, layer=1, m=m, topk=TOPK,
                       eps=eps))
        np.testing.assert_allclose(by.numpy("float32", (m, HID)), want,
                                   rtol=RTOL, atol=ATOL)
        bl.numpy("float32", (m, NEXP))[:] = logits
        by.numpy("float32")[:] = 0
        sh.run(ops.moe(bx, by, logits=bl, wset=wset.id, layer=1, m=m,
                       topk=TOPK, eps=eps,
                       route=syshax.MOE_ROUTE_LOGITS))
        np.testing.assert_allclose(by.numpy("float32", (m, HID)), want,
                                   rtol=RTOL, atol=ATOL)


def test_moe_ids(sh, wset):
    m = 2
    x = rnd(m, HID)
    ids = np.array([[0, 3], [2, 1]], np.int32)
    wts = np.array([[0.25, 0.75], [0.5, 0.5]], np.float32)
    with sh.alloc(1 << 16) as b, sh.alloc(4096) as bi, sh.alloc(4096) as bw:
        b.numpy("float32", (m, HID))[:] = x
        bi.numpy("int32", (m, 2))[:] = ids
        bw.numpy("float32", (m, 2))[:] = wts
        sh.run(ops.moe(b.ref(0, m * HID * 4), b.ref(8192, m * HID * 4),
                       ids=bi, weights=bw, wset=wset.id, layer=1, m=m,
                       topk=2, route=syshax.MOE_ROUTE_IDS, flags=0))
        want = np.zeros((m, HID), np.float32)
        for t in range(m):
            for e, we in zip(ids[t], wts[t]):
                want[t] += we * swiglu(x[t:t + 1],
                                       W["blk.1.ffn_gate_exps.weight"][e],
                                       W["blk.1.ffn_up_exps.weight"][e],
                                       W["blk.1.ffn_down_exps.weight"][e])[0]
        np.testing.assert_allclose(b.numpy("float32", (m, HID), 8192), want,
                                   rtol=RTOL, atol=ATOL)


def test_attn_decode(sh):
    S, HQ, HKV, D, BS, NB, MB = 2, 4, 2, 32, 4, 8, 3
    lens = np.array([5, 11], np.int32)
    tables = np.array([[6, 1, 3], [0, 7, 2]], np.int32)
    q = rnd(S, HQ, D)
    k = rnd(NB, BS, HKV, D)
    v = rnd(NB, BS, HKV, D)
    with sh.alloc(1 << 16) as bq, sh.alloc(1 << 16) as bk, \
            sh.alloc(1 << 16) as bv, sh.alloc(4096) as bt, \
            sh.alloc(4096) as bl, sh.alloc(1 << 16) as bo:
        bq.numpy("float32", q.shape)[:] = q
        bk.numpy("float32", k.shape)[:] = k
        bv.numpy("float32", v.shape)[:] = v
        bt.numpy("int32", tables.shape)[:] = tables
        bl.numpy("int32", 2)[:] = lens
        (c,) = sh.run(ops.attn_decode(
            bq, bk, bv, bt, bl, bo, num_seqs=S, q_heads=HQ, kv_heads=HKV,
            head_dim=D, block_size=BS, num_blocks=NB, max_blocks=MB))
        assert c.result == S
        out = bo.numpy("float32", (S, HQ, D))
    for s in range(S):
        pos = np.arange(lens[s])
        blk = tables[s][pos // BS]
        ks, vs = k[blk, pos % BS], v[blk, pos % BS]  # [L, HKV, D]
        for h in range(HQ):
            kv = h // (HQ // HKV)
            a = ks[:, kv] @ q[s, h] / np.sqrt(D)
            a = np.exp(a - a.max())
            a /= a.sum()
            np.testing.assert_allclose(out[s, h], a @ vs[:, kv],
                                       rtol=RTOL, atol=ATOL)


def test_weights_free_and_engine_stats(sh):
    ws = syshax.load_weights(sh, {"blk.0.ffn_up.weight": W[
        "blk.0.ffn_up.weight"]})
    st = sh.engine_stats()
    assert st["nr_threads"] >= 1 and st["nr_wsets"] >= 1
    ws.free()
    assert ws.id == 0
    with pytest.raises(FileNotFoundError):
        sh.run(ops.weights_free(wset=123456))
    g0 = sh.engine_stats()["ops"]["gemm"]["jobs"]
    with syshax.load_weights(sh, W) as ws2, sh.alloc(1 << 16) as b:
        sh.run(ops.gemm(b, b.ref(8192), wset=ws2.id, m=1,
                        tensor="blk.0.ffn_up.weight"))
    assert sh.engine_stats()["ops"]["gemm"]["jobs"] == g0 + 1


def test_report_xpu(sh):
    (c,) = sh.run(ops.report_xpu(running=4, tokens_per_s=120.5))
    assert c.result == 0


def test_model_load_prefill_decode(sh, model_path):
    with sh.alloc(4096) as binfo:
        (c,) = sh.run(ops.model_load(binfo, path=model_path))
        info = syshax._syshax.unpack("model_info", binfo.raw)
    model = c.result
    assert info["model"] == model and info["arch"] == syshax.ARCH_LLAMA
    L, HKV, D, V = (info["n_layer"], info["n_head_kv"], info["head_dim"],
                    info["n_vocab"])
    BS, NB, MB = 4, 8, 8
    layer = NB * BS * HKV * D * 4
    prompt = [1, 17, 300, 42, 5]
    nxt = 77
    try:
        with sh.alloc(L * layer) as k, sh.alloc(L * layer) as v, \
                sh.alloc(4096) as toks, sh.alloc(4096) as table, \
                sh.alloc(4096) as pos, sh.alloc(V * 4 * 8) as out:
            table.numpy("int32", MB)[:] = np.arange(MB)[::-1]
            toks.numpy("int32", len(prompt))[:] = prompt
            kw = dict(model=model, block_size=BS, num_blocks=NB,
                      max_blocks=MB)
            (c,) = sh.run(ops.prefill(toks, table, k, v, out, n=len(prompt),
                                      pos=0, **kw))
            assert c.result == 1
            toks.numpy("int32", 1)[:] = nxt
            pos.numpy("int32", 1)[:] = len(prompt)
            sh.run(ops.decode(toks, pos, table, k, v, out, n=1, **kw))
            step = out.numpy("float32", V).copy()
            # The same positions in one prefill, every row: its last row
            # is the decode step's logits.
            toks.numpy("int32", 6)[:] = prompt + [nxt]
            (c,) = sh.run(ops.prefill(toks, table, k, v, out, n=6, pos=0,
                                      flags=syshax.STEP_ALL_ROWS, **kw))
            assert c.result == 6
            rows = out.numpy("float32", (6, V))
            np.testing.assert_allclose(rows[5], step, rtol=1e-4,
                                       atol=1e-4 * np.abs(step).max())
            # Top-k output: ids and logits of the highest, in order.
            toks.numpy("int32", 1)[:] = nxt
            sh.run(ops.decode(toks, pos, table, k, v, out, n=1,
                              out_kind=syshax.STEP_OUT_TOPK, topk=4, **kw))
            ids = out.numpy("int32", 8)[0::2]
            assert list(ids) == list(np.argsort(-step, kind="stable")[:4])
            with pytest.raises(syshax.JobError) as e:
                toks.numpy("int32", 1)[:] = V  # not a token id
                sh.run(ops.decode(toks, pos, table, k, v, out, n=1, **kw))
            assert e.value.errno == errno.EINVAL
    finally:
        sh.run(ops.weights_free(wset=model))
    with pytest.raises(PermissionError):
        sh.run(ops.model_load(path="/etc/passwd"))
