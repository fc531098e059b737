# SPDX-License-Identifier: MIT
"""Job builders: one function per op of ``uapi/syshax_ops.h``.

Each takes the op's buffers (a :class:`~syshax.Buffer` for all of it or a
:class:`~syshax.Ref` for a part, e.g. ``buf.ref(off, n)`` or
``buf.ref_of(tensor)``) in the order the header gives its refs, and its
params as keyword arguments named as the header's fields; floats are
Python floats, dtypes ``DT_*`` codes or names ("f32", "f16", "bf16") or
numpy/torch dtypes. Each returns a :class:`~syshax.Job` with the access
every ref needs; ``user_data`` and ``job_flags`` (``JOB_MAY_DEFER``) are
common to all. The params are packed by the C layer from the header's own
structs, so a wrong field name is a TypeError, an out-of-range value an
OverflowError; the engine checks the rest (docs/engine.md).

    job = ops.ffn(h, h, wset=ws.id, layer=3, m=1, x_type="f32",
                  flags=FFN_NORM | FFN_RESIDUAL, eps=1e-5)
    sh.run(job)
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

from . import _syshax as _c
from ._core import Buffer, Job, Ref, dtype_code

__all__ = ["nop", "copy", "weights_load", "weights_free", "gemm", "ffn",
           "moe", "attn_decode", "engine_stats", "model_load", "decode",
           "prefill", "report_xpu"]

RefLike = Union[Buffer, Ref]
R, W, RW = _c.ACCESS_READ, _c.ACCESS_WRITE, _c.ACCESS_RW


def _ref(r: RefLike) -> Ref:
    return r if isinstance(r, Ref) else Ref(r)


def _job(op: int, layout: Optional[str], fields: dict,
         refs: List[Tuple[RefLike, int]], user_data: Optional[int],
         job_flags: int) -> Job:
    params = _c.pack(layout, fields) if layout else b""
    return Job(op, params, [(_ref(r), a) for r, a in refs], user_data,
               job_flags)


def _dts(kw: dict, *names: str) -> dict:
    for n in names:
        if n in kw:
            kw[n] = dtype_code(kw[n])
    return kw


def nop(*, user_data: Optional[int] = None, job_flags: int = 0) -> Job:
    """NOP: no refs; completes with result 0."""
    return _job(_c.OP_NOP, None, {}, [], user_data, job_flags)


def copy(src: RefLike, dst: RefLike, *, user_data: Optional[int] = None,
         job_flags: int = 0) -> Job:
    """COPY: min(len(src), len(dst)) bytes src -> dst; result = bytes."""
    return _job(_c.OP_COPY, None, {}, [(src, R), (dst, W)], user_data,
                job_flags)


def weights_load(desc: Optional[RefLike] = None, *, path: str = "",
                 quantize: int = _c.QUANT_NONE,
                 user_data: Optional[int] = None, job_flags: int = 0) -> Job:
    """WEIGHTS_LOAD from a buffer holding a ``syshax_wdesc`` and the
    tensors (``desc``; see :func:`syshax.weights.write_image`) or from a
    file ``path`` beneath syshaxd's model_dir; ``quantize``: QUANT_*.
    result = the weight-set id."""
    if (desc is None) == (not path):
        raise ValueError("weights_load takes a desc buffer or a path")
    if desc is not None:
        return _job(_c.OP_WEIGHTS_LOAD, "weights_load",
                    {"source": _c.WLOAD_BUFFER, "quantize": quantize},
                    [(desc, R)], user_data, job_flags)
    return _job(_c.OP_WEIGHTS_LOAD, "weights_load",
                {"source": _c.WLOAD_FILE, "quantize": quantize,
                 "path": path}, [], user_data, job_flags)


def weights_free(*, wset: int, user_data: Optional[int] = None,
                 job_flags: int = 0) -> Job:
    """WEIGHTS_FREE of a set this context loaded; result 0."""
    return _job(_c.OP_WEIGHTS_FREE, "weights_free", {"wset": wset}, [],
                user_data, job_flags)


def gemm(x: RefLike, y: RefLike, *, wset: int, tensor: str, m: int,
         x_type: Any = "f32", y_type: Any = "f32", flags: int = 0,
         user_data: Optional[int] = None, job_flags: int = 0) -> Job:
    """GEMM: Y[m x n] = X[m x k] . W[n x k]^T for weight ``tensor`` of set
    ``wset``; result m."""
    kw = _dts(dict(wset=wset, tensor=tensor, m=m, x_type=x_type,
                   y_type=y_type, flags=flags), "x_type", "y_type")
    return _job(_c.OP_GEMM, "gemm", kw, [(x, R), (y, W)], user_data,
                job_flags)


def ffn(x: RefLike, y: RefLike, *, wset: int, layer: int, m: int,
        x_type: Any = "f32", y_type: Any = "f32",
        flags: int = _c.FFN_NORM | _c.FFN_RESIDUAL, eps: float = 0.0,
        user_data: Optional[int] = None, job_flags: int = 0) -> Job:
    """FFN: layer ``layer``'s SwiGLU block on m rows of X into Y (Y may be
    X); flags FFN_NORM (RMSNorm with ffn_norm first, ``eps``; 0: 1e-6),
    FFN_RESIDUAL (add X). result m."""
    kw = _dts(dict(wset=wset, layer=layer, m=m, x_type=x_type,
                   y_type=y_type, flags=flags, eps=eps), "x_type", "y_type")
    return _job(_c.OP_FFN, "ffn", kw, [(x, R), (y, W)], user_data,
                job_flags)


def moe(x: RefLike, y: RefLike, ids: Optional[RefLike] = None,
        weights: Optional[RefLike] = None, logits: Optional[RefLike] = None,
        *, wset: int, layer: int, m: int, topk: int,
        route: int = _c.MOE_ROUTE_ROUTER, x_type: Any = "f32",
        y_type: Any = "f32",
        flags: int = _c.MOE_NORM | _c.MOE_RESIDUAL | _c.MOE_NORM_TOPK,
        eps: float = 0.0, user_data: Optional[int] = None,
        job_flags: int = 0) -> Job:
    """MOE: layer ``layer``'s experts on m rows, top-``topk`` per token.
    ``route``: MOE_ROUTE_ROUTER (the set's ffn_gate_inp), MOE_ROUTE_LOGITS
    (``logits``: f32 [m x n_expert]) or MOE_ROUTE_IDS (``ids``: s32
    [m x topk] and ``weights``: f32 [m x topk]). flags MOE_NORM,
    MOE_RESIDUAL, MOE_SHARED, MOE_NORM_TOPK. result m."""
    refs: List[Tuple[RefLike, int]] = [(x, R), (y, W)]
    if route == _c.MOE_ROUTE_IDS:
        if ids is None or weights is None:
            raise ValueError("MOE_ROUTE_IDS takes ids and weights")
        refs += [(ids, R), (weights, R)]
    elif route == _c.MOE_ROUTE_LOGITS:
        if logits is None:
            raise ValueError("MOE_ROUTE_LOGITS takes logits")
        refs.append((logits, R))
    kw = _dts(dict(wset=wset, layer=layer, m=m, topk=topk, route=route,
                   x_type=x_type, y_type=y_type, flags=flags, eps=eps),
              "x_type", "y_type")
    return _job(_c.OP_MOE, "moe", kw, refs, user_data, job_flags)


def attn_decode(q: RefLike, k_cache: RefLike, v_cache: RefLike,
                block_tables: RefLike, seq_lens: RefLike, out: RefLike, *,
                num_seqs: int, q_heads: int, kv_heads: int, head_dim: int,
                block_size: int, num_blocks: int, max_blocks: int,
                kv_type: Any = "f32", q_type: Any = "f32",
                o_type: Any = "f32", scale: float = 0.0, flags: int = 0,
                user_data: Optional[int] = None, job_flags: int = 0) -> Job:
    """ATTN_DECODE: paged decode attention, one query per sequence, over
    vLLM-layout caches [num_blocks, block_size, kv_heads, head_dim];
    ``scale`` 0: 1/sqrt(head_dim). result num_seqs."""
    kw = _dts(dict(num_seqs=num_seqs, q_heads=q_heads, kv_heads=kv_heads,
                   head_dim=head_dim, block_size=block_size,
                   num_blocks=num_blocks, max_blocks=max_blocks,
                   kv_type=kv_type, q_type=q_type, o_type=o_type,
                   scale=scale, flags=flags), "kv_type", "q_type", "o_type")
    return _job(_c.OP_ATTN_DECODE, "attn_decode", kw,
                [(q, R), (k_cache, R), (v_cache, R), (block_tables, R),
                 (seq_lens, R), (out, W)], user_data, job_flags)


def engine_stats(out: RefLike, *, user_data: Optional[int] = None,
                 job_flags: int = 0) -> Job:
    """ENGINE_STATS into ``out`` (a struct syshax_engine_stats; see
    :meth:`syshax.Context.engine_stats`, which decodes it)."""
    return _job(_c.OP_ENGINE_STATS, None, {}, [(out, W)], user_data,
                job_flags)


def model_load(info: Optional[RefLike] = None, *, path: str,
               quantize: int = _c.QUANT_NONE, flags: int = 0,
               user_data: Optional[int] = None, job_flags: int = 0) -> Job:
    """MODEL_LOAD of a GGUF ``path`` beneath model_dir; ``info`` (optional)
    receives a struct syshax_model_info (``_syshax.unpack("model_info",
    ...)``). result = the model id."""
    return _job(_c.OP_MODEL_LOAD, "model_load",
                dict(path=path, quantize=quantize, flags=flags),
                [] if info is None else [(info, W)], user_data, job_flags)


def decode(tokens: RefLike, positions: RefLike, block_tables: RefLike,
           k_cache: RefLike, v_cache: RefLike, out: RefLike, *, model: int,
           n: int, block_size: int, num_blocks: int, max_blocks: int,
           kv_type: Any = "f32", out_kind: int = _c.STEP_OUT_LOGITS,
           topk: int = 0, user_data: Optional[int] = None,
           job_flags: int = 0) -> Job:
    """DECODE: one token for each of ``n`` sequences of ``model``
    (``out_kind`` STEP_OUT_LOGITS or STEP_OUT_TOPK with ``topk``). With
    ``job_flags=JOB_MAY_DEFER`` the engine may leave it to the xPU
    (:attr:`syshax.Completion.deferred`). result: rows written."""
    kw = _dts(dict(model=model, n=n, block_size=block_size,
                   num_blocks=num_blocks, max_blocks=max_blocks,
                   kv_type=kv_type, out=out_kind, topk=topk), "kv_type")
    return _job(_c.OP_DECODE, "step", kw,
                [(tokens, R), (positions, R), (block_tables, R),
                 (k_cache, RW), (v_cache, RW), (out, W)], user_data,
                job_flags)


def prefill(tokens: RefLike, block_table: RefLike, k_cache: RefLike,
            v_cache: RefLike, out: RefLike, *, model: int, n: int, pos: int,
            block_size: int, num_blocks: int, max_blocks: int,
            kv_type: Any = "f32", out_kind: int = _c.STEP_OUT_LOGITS,
            topk: int = 0, flags: int = 0, user_data: Optional[int] = None,
            job_flags: int = 0) -> Job:
    """PREFILL: ``n`` tokens of one sequence from position ``pos``
    (``flags`` STEP_ALL_ROWS: every token's output row). result: rows."""
    kw = _dts(dict(model=model, n=n, pos=pos, block_size=block_size,
                   num_blocks=num_blocks, max_blocks=max_blocks,
                   kv_type=kv_type, out=out_kind, topk=topk, flags=flags),
              "kv_type")
    return _job(_c.OP_PREFILL, "step", kw,
                [(tokens, R), (block_table, R), (k_cache, RW),
                 (v_cache, RW), (out, W)], user_data, job_flags)


def report_xpu(*, running: int, tokens_per_s: float,
               user_data: Optional[int] = None, job_flags: int = 0) -> Job:
    """REPORT_XPU: the framework's xPU load for the dispatch rule."""
    return _job(_c.OP_REPORT_XPU, "report_xpu",
                dict(running=running, tokens_per_s=tokens_per_s), [],
                user_data, job_flags)
