# SPDX-License-Identifier: MIT
"""Weight sets from arrays: the WEIGHTS_LOAD buffer source.

:func:`load` lays numpy arrays (or CPU torch tensors) out as a
``struct syshax_wdesc`` and the tensors' bytes in a scratch buffer, loads
them as a weight set and frees the scratch buffer. Names are GGUF's
(``blk.<L>.ffn_gate.weight`` ...; docs/engine.md). Shapes are given as
PyTorch's (``[out, in]`` for a matrix: nn.Linear's weight), the
descriptor gets ggml's order (``ne[0]`` = the contiguous dimension).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple

from . import _syshax as _c
from . import ops
from ._core import Context

__all__ = ["WeightSet", "image_size", "write_image", "load"]

_ALIGN = 64


def _as_numpy(t: Any) -> Tuple[Any, int]:
    """(a contiguous numpy array of t's bytes, its DT_* code)."""
    import numpy as np
    if hasattr(t, "detach"):  # torch
        import torch
        t = t.detach().contiguous().cpu()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy(), _c.DT_BF16
        t = t.numpy()
    a = np.ascontiguousarray(t)
    codes = {np.dtype("float32"): _c.DT_F32, np.dtype("float16"): _c.DT_F16}
    if a.dtype not in codes:
        raise ValueError(f"weights are float32, float16 or bfloat16, "
                         f"not {a.dtype}")
    return a, codes[a.dtype]


def _plan(tensors: Mapping[str, Any]):
    dsize, _ = _c.layout("wdesc")
    tsize, _ = _c.layout("wdesc_tensor")
    off = dsize + tsize * len(tensors)
    plan = []
    for name, t in tensors.items():
        a, code = _as_numpy(t)
        if not 1 <= a.ndim <= 4:
            raise ValueError(f"{name}: 1 to 4 dimensions")
        off = (off + _ALIGN - 1) // _ALIGN * _ALIGN
        plan.append((name, a, code, off))
        off += a.nbytes
    return plan, off


def image_size(tensors: Mapping[str, Any]) -> int:
    """Bytes :func:`write_image` needs for ``tensors``."""
    return _plan(tensors)[1]


def write_image(buf: Any, tensors: Mapping[str, Any]) -> int:
    """Writes the descriptor and ``tensors`` at the start of ``buf`` (a
    :class:`~syshax.Buffer`); returns the bytes written."""
    import numpy as np
    plan, size = _plan(tensors)
    if size > buf.size:
        raise ValueError(f"the image takes {size} bytes, the buffer has "
                         f"{buf.size}")
    dsize, _ = _c.layout("wdesc")
    tsize, _ = _c.layout("wdesc_tensor")
    mem = buf.numpy("uint8", size)
    mem[:dsize] = np.frombuffer(_c.pack("wdesc", {
        "magic": _c.WDESC_MAGIC, "version": _c.WDESC_VERSION,
        "nr_tensors": len(plan)}), np.uint8)
    for i, (name, a, code, off) in enumerate(plan):
        ne = list(reversed(a.shape)) + [1] * (4 - a.ndim)
        desc = _c.pack("wdesc_tensor", {
            "name": name, "type": code, "ndim": a.ndim, "ne": ne,
            "offset": off, "size": a.nbytes})
        at = dsize + i * tsize
        mem[at:at + tsize] = np.frombuffer(desc, np.uint8)
        mem[off:off + a.nbytes] = a.reshape(-1).view(np.uint8)
    return size


class WeightSet:
    """A loaded weight set: ``id`` names it in jobs. As a context
    manager (or with :meth:`free`) it is freed with WEIGHTS_FREE."""

    def __init__(self, ctx: Context, wset: int) -> None:
        self.ctx, self.id = ctx, wset

    def free(self) -> None:
        """WEIGHTS_FREE (idempotent; nothing once the context closed)."""
        if self.id and not self.ctx.closed:
            self.ctx.run(ops.weights_free(wset=self.id))
        self.id = 0

    def __enter__(self) -> "WeightSet":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.free()

    def __repr__(self) -> str:
        return f"<syshax.WeightSet {self.id}>"


def load(ctx: Context, tensors: Dict[str, Any],
         quantize: int = _c.QUANT_NONE) -> WeightSet:
    """Loads ``tensors`` ({GGUF name: array}) into syshaxd's engine as a
    weight set; ``quantize``: QUANT_NONE keeps f32/f16/bf16, QUANT_Q8_0 /
    QUANT_Q4_0 quantize the matrices on load."""
    size = image_size(tensors)
    with ctx.alloc(size, flags=_c.BUF_ALLOW_SMALL) as buf:
        write_image(buf, tensors)
        (cpl,) = ctx.run(ops.weights_load(buf.ref(0, size),
                                          quantize=quantize))
    return WeightSet(ctx, cpl.result)
