# SPDX-License-Identifier: MIT
"""The xPU worker: PyTorch runs the PREFILL and DECODE steps a framework
hands it (syshax-run --xpu-worker), on the very syshax buffers syshaxd's
CPU engine reads and writes: the paged KV caches of uapi/syshax_ops.h.

    python3 -m syshax.xpu --socket /run/xpu.sock [--device cuda --dtype bf16]

The wire protocol and what each step reads and writes are in
docs/dispatch.md ("The xPU side"); tools/lib/xpu.h has its C structs.
The math is the CPU engine's (daemon/engine/op_model.c): RMSNorm with the
model's epsilon, Q/K/V (+ biases), per-head q/k RMSNorm (qwen3), RoPE
(llama: adjacent pairs; qwen: NeoX halves) with ggml's angles, the new
K/V rows stored in kv_type, GQA attention over positions 0..pos read back
from the cache, SwiGLU FFN or softmax-routed top-k experts renormalized
(qwen3moe), the final norm and the logits (top-k pairs, ties to the lower
id, or all of them).

Buffers are imported from the fds the client sends (Context.import_fd)
and mapped once. On the CPU device the caches are torch.frombuffer views
of the mapping: K/V are written and read in place. On CUDA each mapping is
pinned with cudaHostRegister (torch.cuda.cudart()) and wrapped as a CUDA
tensor at the same address (unified addressing): kernels write the new K/V
rows into, and attention reads the context from, host memory in place
over the bus; only the step's token ids, positions and block tables (read
on the host) and its output rows (written back) are copied."""

import argparse
import errno
import math
import os
import signal
import socket
import struct
import sys
import time
import traceback
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

from . import _syshax as _c
from . import ops
from ._core import Buffer, Context, open as _open
from .gguf import GGUF

__all__ = ["Model", "Worker", "main"]

# The wire (tools/lib/xpu.h).
MAGIC = 0x58584853
VERSION = 1
MSG_HELLO, MSG_BUF, MSG_STEP, MSG_REPORT = 1, 2, 3, 4
_HDR = struct.Struct("<II")
_HELLO = struct.Struct("<IIII4096s")
_BUF = struct.Struct("<IIQQ")
_REF = struct.Struct("<QIIQQ")
_STEP_SIZE = _c.layout("step")[0]
_STEP_HEAD = struct.Struct("<IIII")
_STEP = _STEP_HEAD.size + 8 * _REF.size + _STEP_SIZE
_REPORT = struct.Struct("<IIII")
_REPLY = struct.Struct("<IiQ")

_ARCHS = {"llama": False, "qwen2": True, "qwen3": True, "qwen3moe": True}
_KV_DTYPES = {_c.DT_F32: torch.float32, _c.DT_F16: torch.float16,
              _c.DT_BF16: torch.bfloat16}
RATE_WINDOW = 8     # decode steps its tokens/s is measured over


class StepError(Exception):
    """A step the engine would refuse: its errno."""

    def __init__(self, err: int, why: str):
        super().__init__(why)
        self.errno = err


class Model:
    """A GGUF decoder model as torch tensors on ``device`` (``dtype``:
    the weights' and the activations'; Q4_0/Q8_0 dequantized)."""

    def __init__(self, path: str, device: str = "cpu",
                 dtype: torch.dtype = torch.float32):
        g = GGUF(path)
        arch = g.meta.get("general.architecture")
        if arch not in _ARCHS:
            raise ValueError(f"{path}: architecture {arch!r} is not "
                             "supported (llama, qwen2, qwen3, qwen3moe)")
        self.arch, self.neox = arch, _ARCHS[arch]
        self.qwen3 = arch in ("qwen3", "qwen3moe")
        m = g.meta

        def key(k: str, default=None):
            v = m.get(f"{arch}.{k}", default)
            if v is None:
                raise ValueError(f"{path}: metadata {arch}.{k}: missing")
            return v

        self.n_layer = int(key("block_count"))
        self.n_embd = int(key("embedding_length"))
        self.n_head = int(key("attention.head_count"))
        self.n_head_kv = int(key("attention.head_count_kv", self.n_head))
        self.head_dim = int(key("attention.key_length",
                                self.n_embd // self.n_head))
        self.n_expert = int(key("expert_count", 0))
        self.n_expert_used = int(key("expert_used_count", 0))
        # The engine keeps both as floats.
        self.rope_base = np.float32(key("rope.freq_base", 10000.0))
        self.eps = float(np.float32(
            key("attention.layer_norm_rms_epsilon", 1e-5)))
        self.device, self.dtype = torch.device(device), dtype

        def t(name: str) -> torch.Tensor:
            return torch.tensor(g.array(name), dtype=dtype, device=device)

        def opt(name: str) -> Optional[torch.Tensor]:
            return t(name) if name in g.tensors else None

        self.embd = t("token_embd.weight")
        self.n_vocab = self.embd.shape[0]
        self.output_norm = t("output_norm.weight")
        self.output = opt("output.weight")
        if self.output is None:
            self.output = self.embd          # tied embeddings
        self.layers: List[Dict[str, Optional[torch.Tensor]]] = []
        for i in range(self.n_layer):
            b = f"blk.{i}."
            names = ["attn_norm", "ffn_norm", "attn_q", "attn_k", "attn_v",
                     "attn_output"]
            if self.qwen3:
                names += ["attn_q_norm", "attn_k_norm"]
            names += (["ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps",
                       "ffn_down_exps"] if self.n_expert else
                      ["ffn_gate", "ffn_up", "ffn_down"])
            y = {n: t(b + n + ".weight") for n in names}
            for n in ("attn_q", "attn_k", "attn_v"):
                y[n + ".bias"] = opt(b + n + ".bias")
            self.layers.append(y)
        # ggml's angle scale, as a float: theta *= scale pair after pair.
        self.rope_scale = np.float32(np.power(
            self.rope_base, np.float32(-2.0) / np.float32(self.head_dim),
            dtype=np.float32))

    def layer_bytes(self, num_blocks: int, block_size: int,
                    kv_type: int) -> int:
        size = torch.tensor([], dtype=_KV_DTYPES[kv_type]).element_size()
        return num_blocks * block_size * self.n_head_kv * self.head_dim * size

    def _norm(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) +
                               self.eps) * w

    def _rope_tables(self, pos: np.ndarray) -> Tuple[torch.Tensor,
                                                     torch.Tensor]:
        half = self.head_dim // 2
        theta = pos.astype(np.float32)
        ang = np.empty((len(pos), half), np.float32)
        for i in range(half):
            ang[:, i] = theta
            theta = (theta * self.rope_scale).astype(np.float32)
        a = ang.astype(np.float64)
        cos = torch.tensor(np.cos(a).astype(np.float32), dtype=self.dtype,
                           device=self.device)
        sin = torch.tensor(np.sin(a).astype(np.float32), dtype=self.dtype,
                           device=self.device)
        return cos[:, None, :], sin[:, None, :]

    def _rope(self, x: torch.Tensor, cos: torch.Tensor,
              sin: torch.Tensor) -> torch.Tensor:
        half = self.head_dim // 2
        if self.neox:
            x0, x1 = x[..., :half], x[..., half:]
        else:
            x0, x1 = x[..., 0::2], x[..., 1::2]
        y0, y1 = x0 * cos - x1 * sin, x0 * sin + x1 * cos
        if self.neox:
            return torch.cat([y0, y1], -1)
        return torch.stack([y0, y1], -1).flatten(-2)

    def _moe(self, y: Dict[str, torch.Tensor],
             h: torch.Tensor) -> torch.Tensor:
        probs = torch.softmax((h @ y["ffn_gate_inp"].T).float(), -1)
        order = torch.sort(probs, dim=-1, descending=True,
                           stable=True)[1]
        ids = order[:, :self.n_expert_used]
        w = torch.gather(probs, 1, ids)
        w = (w / w.sum(-1, keepdim=True)).to(self.dtype)
        out = torch.zeros_like(h)
        for e in torch.unique(ids).tolist():
            rows, slot = torch.nonzero(ids == e, as_tuple=True)
            x = h[rows]
            f = (torch.nn.functional.silu(x @ y["ffn_gate_exps"][e].T) *
                 (x @ y["ffn_up_exps"][e].T)) @ y["ffn_down_exps"][e].T
            out.index_add_(0, rows, f * w[rows, slot, None])
        return out

    def forward(self, tok: np.ndarray, pos: np.ndarray, bt: np.ndarray,
                kc: List[torch.Tensor], vc: List[torch.Tensor],
                out_rows: np.ndarray, kill_after_layer0: bool = False
                ) -> torch.Tensor:
        """Rows tok[i] at pos[i] with block tables bt[i]; kc[l], vc[l]:
        layer l's caches [num_blocks, block_size, n_head_kv, head_dim],
        written in place. The logits of out_rows (f32)."""
        dev, n = self.device, len(tok)
        bs = kc[0].shape[1]
        nh, nkv, hd = self.n_head, self.n_head_kv, self.head_dim
        g = nh // nkv
        tok_t = torch.from_numpy(tok.astype(np.int64)).to(dev)
        slot = bt[np.arange(n), pos // bs].astype(np.int64) * bs + pos % bs
        slot_t = torch.from_numpy(slot).to(dev)
        # Every row's context slots 0..len-1 (padded with slot 0, masked).
        ctx = int(pos.max()) + 1
        j = np.arange(ctx)
        blk = np.take_along_axis(bt, np.minimum(j // bs, bt.shape[1] - 1)
                                 [None, :].repeat(n, 0), 1)
        valid = j[None, :] <= pos[:, None]
        cslot = np.where(valid, blk.astype(np.int64) * bs + j % bs, 0)
        # One sequence (a PREFILL): its context is gathered once, for the
        # row that sees all of it, not once a row (n times the memory).
        one = bool((bt == bt[:1]).all())
        if one:
            cslot = cslot[int(pos.argmax())]
        cslot_t = torch.from_numpy(cslot).to(dev)
        cd = "c" if one else "nc"     # the gathered context's dims
        mask = torch.from_numpy(~valid).to(dev)[:, None, None, :]
        cos, sin = self._rope_tables(pos)
        scale = 1.0 / math.sqrt(hd)
        sel = torch.from_numpy(out_rows.astype(np.int64)).to(dev)
        last = len(self.layers) - 1
        x = self.embd[tok_t]
        for i, y in enumerate(self.layers):
            h = self._norm(x, y["attn_norm"])
            q, k, v = h @ y["attn_q"].T, h @ y["attn_k"].T, h @ y["attn_v"].T
            for name, t in (("attn_q", q), ("attn_k", k), ("attn_v", v)):
                if y[name + ".bias"] is not None:
                    t += y[name + ".bias"]
            q, k, v = q.view(n, nh, hd), k.view(n, nkv, hd), v.view(n, nkv, hd)
            if self.qwen3:
                q = self._norm(q, y["attn_q_norm"])
                k = self._norm(k, y["attn_k_norm"])
            q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
            kf, vf = kc[i].view(-1, nkv, hd), vc[i].view(-1, nkv, hd)
            kf[slot_t] = k.to(kf.dtype)
            vf[slot_t] = v.to(vf.dtype)
            if kill_after_layer0:
                os.kill(os.getpid(), signal.SIGKILL)
            ck = kf[cslot_t].to(self.dtype)        # [(n,) ctx, nkv, hd]
            cv = vf[cslot_t].to(self.dtype)
            s = torch.einsum(f"nkgd,{cd}kd->nkgc", q.view(n, nkv, g, hd),
                             ck) * scale
            p = torch.softmax(s.float().masked_fill(mask, -math.inf), -1)
            a = torch.einsum(f"nkgc,{cd}kd->nkgd", p.to(self.dtype), cv)
            a = a.reshape(n, nh * hd)
            if i == last:   # only the output rows go on, as in the engine
                x, a = x[sel], a[sel]
            x = x + a @ y["attn_output"].T
            h = self._norm(x, y["ffn_norm"])
            if self.n_expert:
                x = x + self._moe(y, h)
            else:
                x = x + (torch.nn.functional.silu(h @ y["ffn_gate"].T) *
                         (h @ y["ffn_up"].T)) @ y["ffn_down"].T
        h = self._norm(x, self.output_norm)
        return (h @ self.output.T).float()


class Worker:
    """Runs steps for clients on ``ctx``'s syshaxd: the buffers each
    client sent, imported; ``delay_ms`` added to each DECODE (an
    artificially slow xPU); ``kill_at``: SIGKILL itself in the middle
    of its kill_at-th DECODE (after layer 0's K/V rows), for tests."""

    def __init__(self, ctx: Context, device: str = "cpu",
                 dtype: torch.dtype = torch.float32, delay_ms: float = 0.0,
                 kill_at: int = 0, log=sys.stderr):
        self.ctx, self.device, self.dtype = ctx, device, dtype
        self.delay, self.kill_at, self.log = delay_ms / 1e3, kill_at, log
        self.models: Dict[str, Model] = {}
        self.model: Optional[Model] = None
        self.bufs: Dict[int, Buffer] = {}
        self.cuda_maps: Dict[int, torch.Tensor] = {}
        self.win: List[Tuple[int, float]] = []
        self.decodes = 0
        self.rates: List[float] = []    # reported with running > 0

    # ---- buffers ----
    def add_buffer(self, bid: int, fd: int) -> None:
        """The buffer with global id bid, from an exported fd (kept
        mapped until the client goes)."""
        b = self.ctx.import_fd(fd)
        if b.id != bid:
            b.free()
            raise StepError(errno.EINVAL, f"fd of buffer {b.id}, not {bid}")
        self.bufs[bid] = b
        if self.device.startswith("cuda"):
            self.cuda_maps[bid] = cuda_view(b)

    def drop_buffers(self) -> None:
        for bid, b in self.bufs.items():
            if bid in self.cuda_maps:
                torch.cuda.check_error(
                    torch.cuda.cudart().cudaHostUnregister(b.addr))
            b.free()
        self.bufs.clear()
        self.cuda_maps.clear()

    def _span(self, ref: Tuple[int, int, int], need: int) -> Tuple[int, int]:
        bid, off, length = ref
        b = self.bufs.get(bid)
        if b is None:
            raise StepError(errno.ENOENT, f"buffer {bid} was not sent")
        if length < need or off + length > b.size:
            raise StepError(errno.ERANGE, f"ref of buffer {bid}: {length} "
                            f"bytes, {need} needed")
        return bid, off

    def _ints(self, ref, count: int) -> np.ndarray:
        bid, off = self._span(ref, 4 * count)
        return self.bufs[bid].numpy("int32", (count,), off).copy()

    def _cache(self, ref, lb: int, p: dict) -> List[torch.Tensor]:
        m = self.model
        bid, off = self._span(ref, lb * m.n_layer)
        shape = (p["num_blocks"], p["block_size"], m.n_head_kv, m.head_dim)
        dt = _KV_DTYPES[p["kv_type"]]
        if bid in self.cuda_maps:
            flat = self.cuda_maps[bid]
            return [flat[off + i * lb:off + (i + 1) * lb].view(dt)
                    .view(shape) for i in range(m.n_layer)]
        return [self.bufs[bid].torch(str(dt).replace("torch.", ""), shape,
                                     off + i * lb) for i in range(m.n_layer)]

    # ---- steps ----
    def step(self, op: int, refs: List[Tuple[int, int, int]],
             p: dict) -> int:
        """A DECODE or PREFILL as the engine runs it; rows written."""
        m = self.model
        if m is None:
            raise StepError(errno.EINVAL, "no HELLO: no model")
        prefill = op == _c.OP_PREFILL
        n = p["n"]
        if (op not in (_c.OP_DECODE, _c.OP_PREFILL) or
                len(refs) != (5 if prefill else 6) or not n or
                p["kv_type"] not in _KV_DTYPES or not p["block_size"] or
                not p["num_blocks"] or not p["max_blocks"] or
                (not prefill and (p["pos"] or p["flags"])) or
                (prefill and p["flags"] & ~_c.STEP_ALL_ROWS) or
                p["out"] not in (_c.STEP_OUT_TOPK, _c.STEP_OUT_LOGITS) or
                (p["out"] == _c.STEP_OUT_TOPK and
                 not 1 <= p["topk"] <= min(_c.STEP_TOPK_MAX, m.n_vocab)) or
                (p["out"] == _c.STEP_OUT_LOGITS and p["topk"])):
            raise StepError(errno.EINVAL, "bad step params")
        r = iter(refs)
        tok = self._ints(next(r), n)
        mb = p["max_blocks"]
        if prefill:
            pos = p["pos"] + np.arange(n, dtype=np.int64)
            bt = self._ints(next(r), mb)[None, :].repeat(n, 0)
        else:
            pos = self._ints(next(r), n).astype(np.int64)
            bt = self._ints(next(r), n * mb).reshape(n, mb)
        lb = m.layer_bytes(p["num_blocks"], p["block_size"], p["kv_type"])
        kc, vc = self._cache(next(r), lb, p), self._cache(next(r), lb, p)
        nout = n if not prefill or p["flags"] & _c.STEP_ALL_ROWS else 1
        row = m.n_vocab * 4 if p["out"] == _c.STEP_OUT_LOGITS else \
            p["topk"] * 8
        obid, ooff = self._span(next(r), nout * row)
        bs = p["block_size"]
        if ((tok < 0) | (tok >= m.n_vocab)).any() or (pos < 0).any() or \
                (pos >= mb * bs).any():
            raise StepError(errno.EINVAL, "token or position out of range")
        for i in range(n):
            used = bt[i, :pos[i] // bs + 1]
            if ((used < 0) | (used >= p["num_blocks"])).any():
                raise StepError(errno.EINVAL, "block table entry out of "
                                "range")
        t0 = time.monotonic()
        kill = not prefill and self.kill_at and \
            self.decodes + 1 == self.kill_at
        with torch.no_grad():
            logits = m.forward(tok, pos, bt, kc, vc,
                               np.arange(n - nout, n), kill)
        out = self.bufs[obid].numpy("uint8", (nout * row,), ooff)
        if p["out"] == _c.STEP_OUT_LOGITS:
            out[:] = logits.cpu().numpy().view(np.uint8).reshape(-1)
        else:
            k = p["topk"]
            val, ids = torch.sort(logits, dim=-1, descending=True,
                                  stable=True)
            pairs = np.empty((nout, k), [("id", "<i4"), ("v", "<f4")])
            pairs["id"] = ids[:, :k].cpu().numpy()
            pairs["v"] = val[:, :k].cpu().numpy()
            out[:] = pairs.view(np.uint8).reshape(-1)
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        if not prefill:
            if self.delay:
                time.sleep(self.delay)
            self.decodes += 1
            self.win = (self.win + [(n, time.monotonic() - t0)])[
                -RATE_WINDOW:]
        return nout

    def rate(self) -> float:
        """Its decode tokens/s over its last steps (0 before the first)."""
        tok = sum(w[0] for w in self.win)
        sec = sum(w[1] for w in self.win)
        return tok / sec if sec > 0 else 0.0

    def report(self, ran: int) -> None:
        tps = self.rate()
        self.ctx.run(ops.report_xpu(running=ran, tokens_per_s=tps))
        if ran:
            self.rates.append(tps)

    def hello(self, path: str) -> None:
        if path not in self.models:
            t0 = time.monotonic()
            self.models[path] = Model(path, self.device, self.dtype)
            m = self.models[path]
            print(f"syshax.xpu: {path}: {m.arch}, {m.n_layer} layers, "
                  f"{m.n_vocab} vocab on {self.device} ({self.dtype}), "
                  f"{time.monotonic() - t0:.1f} s", file=self.log,
                  flush=True)
        self.model = self.models[path]

    # ---- the socket ----
    def handle(self, msg: bytes, fds: List[int]) -> Tuple[int, int]:
        """One request: (status, result)."""
        if len(msg) < _HDR.size:
            raise ConnectionError("short message")
        magic, kind = _HDR.unpack_from(msg)
        if magic != MAGIC:
            raise ConnectionError("bad magic")
        if kind == MSG_HELLO and len(msg) == _HELLO.size:
            _, _, version, _, path = _HELLO.unpack(msg)
            if version != VERSION:
                return -errno.EPROTO, 0
            self.hello(path.split(b"\0", 1)[0].decode())
            return 0, 0
        if kind == MSG_BUF and len(msg) == _BUF.size and len(fds) == 1:
            _, _, bid, _ = _BUF.unpack(msg)
            self.add_buffer(bid, fds[0])
            return 0, 0
        if kind == MSG_STEP and len(msg) == _STEP:
            _, _, op, nr = _STEP_HEAD.unpack_from(msg)
            if nr > 8:
                return -errno.EINVAL, 0
            refs = []
            for i in range(nr):
                bid, _, _, off, length = _REF.unpack_from(
                    msg, _STEP_HEAD.size + i * _REF.size)
                refs.append((bid, off, length))
            p = _c.unpack("step", msg, _STEP_HEAD.size + 8 * _REF.size)
            return 0, self.step(op, refs, p)
        if kind == MSG_REPORT and len(msg) == _REPORT.size:
            self.report(_REPORT.unpack(msg)[2])
            return 0, 0
        raise ConnectionError(f"bad message (type {kind}, {len(msg)} "
                              "bytes)")

    def serve(self, conn: socket.socket) -> None:
        """One client until it hangs up; then, in the log, the
        tokens/s it reported while running sequences."""
        self.rates = []
        try:
            while True:
                msg, fds, _, _ = socket.recv_fds(conn, 1 << 16, 1)
                if not msg:
                    return
                try:
                    status, result = self.handle(msg, fds)
                except ConnectionError:
                    raise
                except (StepError, OSError) as e:
                    print(f"syshax.xpu: {e}", file=self.log, flush=True)
                    status, result = -(e.errno or errno.EIO), 0
                except ValueError as e:     # a model file it cannot run
                    print(f"syshax.xpu: {e}", file=self.log, flush=True)
                    status, result = -errno.EINVAL, 0
                except Exception:     # a bug here: said, the step fails
                    traceback.print_exc(file=self.log)
                    status, result = -errno.EIO, 0
                finally:
                    for fd in fds:
                        os.close(fd)
                conn.send(_REPLY.pack(MAGIC, status, result))
        except ConnectionError as e:
            print(f"syshax.xpu: client dropped: {e}", file=self.log,
                  flush=True)
        finally:
            self.drop_buffers()
            conn.close()
            if self.rates:
                print(f"syshax.xpu: client done: {len(self.rates)} reports "
                      f"with running > 0, tokens_per_s "
                      f"{min(self.rates):.0f}..{max(self.rates):.0f}",
                      file=self.log, flush=True)


class _CudaMem:
    """Pinned host memory as CUDA sees it (__cuda_array_interface__)."""

    def __init__(self, addr: int, size: int):
        self.__cuda_array_interface__ = {
            "shape": (size,), "typestr": "|u1", "data": (addr, False),
            "version": 2, "strides": None}


def cuda_view(b: Buffer) -> torch.Tensor:
    """Buffer b's whole mapping pinned (cudaHostRegister, mapped) and
    seen by CUDA kernels at the same address: a uint8 CUDA tensor over
    the host pages, no copy."""
    # 2: cudaHostRegisterMapped; a failure raises torch's CudaError.
    torch.cuda.check_error(torch.cuda.cudart().cudaHostRegister(
        b.addr, b.size, 2))
    return torch.as_tensor(_CudaMem(b.addr, b.size), device="cuda")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m syshax.xpu",
        description="The PyTorch xPU worker: runs the PREFILL and DECODE "
        "steps clients send on its socket (syshax-run --xpu-worker) on "
        "their syshax buffers, and reports its load to syshaxd "
        "(docs/dispatch.md). It opens syshaxd as syshax.open() does "
        "($SYSHAX_DEVICE first): the clients' daemon.")
    ap.add_argument("--socket", required=True, help="the socket to listen on")
    ap.add_argument("--device", default=None,
                    help="torch device (default: cuda when available, "
                    "else cpu)")
    ap.add_argument("--dtype", choices=("f32", "f16", "bf16"), default=None,
                    help="weights and activations (default: f32 on cpu, "
                    "bf16 on cuda)")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch CPU threads (default: torch's)")
    ap.add_argument("--delay-ms", type=float, default=0.0,
                    help="added to each DECODE: an artificially slow xPU")
    ap.add_argument("--kill-at-step", type=int, default=0, metavar="N",
                    help="SIGKILL itself in the middle of its N-th DECODE "
                    "(tests)")
    a = ap.parse_args(argv)
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = {"f32": torch.float32, "f16": torch.float16,
             "bf16": torch.bfloat16}[a.dtype or
                                     ("bf16" if device.startswith("cuda")
                                      else "f32")]
    if a.threads:
        torch.set_num_threads(a.threads)
    if device.startswith("cuda"):
        # f32 means f32: no TF32 matmuls (tokens compared with the CPU's).
        torch.backends.cuda.matmul.allow_tf32 = False
    with _open() as ctx:
        w = Worker(ctx, device, dtype, a.delay_ms, a.kill_at_step)
        tmp = a.socket + ".new"
        if os.path.exists(tmp):
            os.unlink(tmp)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        srv.bind(tmp)
        srv.listen(4)
        os.rename(tmp, a.socket)      # there once it listens
        print(f"syshax.xpu: listening on {a.socket}, device {device}",
              file=sys.stderr, flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while True:
                conn, _ = srv.accept()
                w.serve(conn)
        finally:
            srv.close()
            os.unlink(a.socket)
    return 0


if __name__ == "__main__":
    sys.exit(main())
