# SPDX-License-Identifier: MIT
"""Contexts, buffers, jobs and completions (over syshax._syshax)."""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import (Any, Dict, Iterable, List, Optional, Sequence, Tuple,
                    Union)

from . import _syshax as _c
from .errors import Error, JobError, from_errno

__all__ = ["Context", "Buffer", "Ref", "Job", "Completion", "open",
           "dtype_code", "dtype_size"]

Shape = Union[int, Sequence[int]]

# ---- dtypes ---------------------------------------------------------------

_DT_NAMES = {"f32": _c.DT_F32, "float32": _c.DT_F32,
             "f16": _c.DT_F16, "float16": _c.DT_F16,
             "bf16": _c.DT_BF16, "bfloat16": _c.DT_BF16,
             "q8_0": _c.DT_Q8_0, "q4_0": _c.DT_Q4_0}
_DT_SIZE = {_c.DT_F32: 4, _c.DT_F16: 2, _c.DT_BF16: 2}


def dtype_code(dt: Any) -> int:
    """The ``DT_*`` code for ``dt``: a code, a name ("f32", "bf16", ...),
    a numpy dtype or a torch dtype."""
    if isinstance(dt, int):
        return dt
    name = str(dt).replace("torch.", "")
    if name in _DT_NAMES:
        return _DT_NAMES[name]
    raise ValueError(f"no syshax dtype for {dt!r} (f32, f16, bf16)")


def dtype_size(dt: Any) -> int:
    """Bytes per element of an activation dtype (f32, f16, bf16)."""
    return _DT_SIZE[dtype_code(dt)]


def _shape(shape: Optional[Shape], count: int) -> Tuple[int, ...]:
    if shape is None:
        return (count,)
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(s) for s in shape)


# ---- Buffers --------------------------------------------------------------

@dataclass(frozen=True)
class Ref:
    """Bytes ``[offset, offset + length)`` of a buffer, for a job's refs.
    The job builders set the access each ref needs."""

    buffer: "Buffer"
    offset: int = 0
    length: Optional[int] = None

    def resolved(self) -> Tuple["Buffer", int, int]:
        n = self.buffer.size - self.offset if self.length is None \
            else self.length
        return self.buffer, self.offset, n


RefLike = Union["Buffer", Ref]


class Buffer:
    """A pinned syshax buffer, mapped into this process.

    Views (:meth:`numpy`, :meth:`torch`, ``memoryview(buf.raw)``) share the
    mapped memory: no copy, and a job that writes the buffer writes what
    the views see. :meth:`free` (or leaving a ``with`` block) drops the
    handle at once; the mapping stays until the last view is gone, so a
    view never points at unmapped memory.
    """

    def __init__(self, raw: "_c._Buffer") -> None:
        self.raw = raw

    # properties
    @property
    def size(self) -> int:
        """Bytes."""
        return self.raw.size

    @property
    def id(self) -> int:
        """Global buffer id (stats, engines)."""
        return self.raw.id

    @property
    def handle(self) -> int:
        """Handle in the owning context (ValueError once freed)."""
        return self.raw.handle

    @property
    def addr(self) -> int:
        """Address of the mapping in this process."""
        return self.raw.addr

    @property
    def freed(self) -> bool:
        return self.raw.freed

    def numpy(self, dtype: Any = "float32", shape: Optional[Shape] = None,
              offset: int = 0) -> "numpy.ndarray":  # noqa: F821
        """A numpy array over the buffer's bytes from ``offset``: ``shape``
        (default: as many elements as fit), writable, no copy."""
        import numpy as np
        dt = np.dtype(dtype)
        if shape is None:
            count = (self.size - offset) // dt.itemsize
        else:
            count = 1
            for s in _shape(shape, 0):
                count *= s
        a = np.frombuffer(self.raw, dtype=dt, count=count, offset=offset)
        return a.reshape(_shape(shape, count))

    def torch(self, dtype: Any = "float32", shape: Optional[Shape] = None,
              offset: int = 0) -> "torch.Tensor":  # noqa: F821
        """A CPU torch tensor over the buffer's bytes (as :meth:`numpy`;
        bfloat16 too). The tensor keeps the mapping alive."""
        import torch
        tdt = getattr(torch, str(dtype).replace("torch.", ""))
        size = torch.tensor([], dtype=tdt).element_size()
        # Through numpy: the array holds the buffer export (the mapping
        # stays while the tensor lives); bf16 via same-size integers.
        ints = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}[size]
        a = self.numpy(ints, shape, offset)
        return torch.from_numpy(a).view(tdt)

    def ref(self, offset: int = 0, length: Optional[int] = None) -> Ref:
        """Bytes ``[offset, offset + length)`` (default: to the end)."""
        return Ref(self, offset, length)

    def ref_of(self, view: Any) -> Ref:
        """The bytes a contiguous numpy array or torch tensor of this
        buffer covers."""
        if hasattr(view, "data_ptr"):
            if not view.is_contiguous():
                raise ValueError("ref_of takes a contiguous tensor")
            ptr, n = view.data_ptr(), view.numel() * view.element_size()
        else:
            if not view.flags["C_CONTIGUOUS"]:
                raise ValueError("ref_of takes a contiguous array")
            ptr, n = view.__array_interface__["data"][0], view.nbytes
        off = ptr - self.addr
        if off < 0 or off + n > self.size:
            raise ValueError("the view is not inside this buffer")
        return Ref(self, off, n)

    def export(self, cloexec: bool = True) -> int:
        """A new fd naming the buffer (a dma-buf on the kernel backend, a
        memfd-backed handle on syshaxd); import it with
        :meth:`Context.import_fd` in any process. The caller closes it."""
        return self.raw.export(cloexec=cloexec)

    def info(self) -> Dict[str, Any]:
        """BUF_INFO: kind, size, id, chunk_size, nr_chunks, node, flags,
        node_bytes."""
        return self.raw.info()

    def free(self) -> None:
        """Drops the handle now (idempotent); see the class doc."""
        self.raw.free()

    def __enter__(self) -> "Buffer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.free()

    def __repr__(self) -> str:
        state = "freed" if self.freed else f"handle {self.raw.handle}"
        return f"<syshax.Buffer id {self.id} {self.size} bytes, {state}>"


# ---- Jobs -----------------------------------------------------------------

@dataclass
class Job:
    """One job: an op code, its packed params, its refs with their access.
    Build it with the functions of :mod:`syshax.ops`. ``user_data`` None
    gets a fresh tag at submit (``Context.submit`` sets it)."""

    op: int
    params: bytes = b""
    refs: List[Tuple[Ref, int]] = field(default_factory=list)
    user_data: Optional[int] = None
    flags: int = 0

    def _raw(self) -> tuple:
        refs = []
        for r, access in self.refs:
            buf, off, n = r.resolved()
            refs.append((buf.raw, off, n, access))
        return (self.op, self.flags, self.user_data or 0, self.params, refs)


@dataclass(frozen=True)
class Completion:
    """A finished job: ``status`` is 0 or ``-errno``; ``result`` is the
    op's (syshax_ops.h); ``exec_ns`` the engine's run time."""

    user_data: int
    status: int
    flags: int
    result: int
    exec_ns: int

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def deferred(self) -> bool:
        """DECODE with MAY_DEFER: the engine left the step to the xPU."""
        return bool(self.flags & _c.CPL_DEFERRED)

    def check(self) -> "Completion":
        """Raises :class:`JobError` when the job failed; else self."""
        if self.status < 0:
            e = from_errno(-self.status, "job",
                           _c.strerror(self.status) +
                           f" (user_data {self.user_data})", JobError)
            e.completion = self
            raise e
        return self


# ---- Contexts -------------------------------------------------------------

class Context:
    """An open backend: the kernel module or syshaxd (see :func:`open`).

    Use it as a context manager: leaving the block drops every buffer's
    handle and closes the connection (views keep their memory mapped).
    Safe to share between threads for buffers, submit and wait.
    """

    def __init__(self, path: Optional[str] = None,
                 backend: int = _c.BACKEND_AUTO) -> None:
        self._c = _c._Context(path, backend)
        self._tags = itertools.count(1 << 32)
        self._lock = threading.Lock()
        self._stash: Dict[int, Completion] = {}

    # lifetime
    def close(self) -> None:
        """Drops all buffer handles and closes the backend. Idempotent."""
        self._c.close()

    @property
    def closed(self) -> bool:
        return self._c.closed

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def backend(self) -> str:
        """"kernel" or "daemon"."""
        return {_c.BACKEND_KERNEL: "kernel",
                _c.BACKEND_DAEMON: "daemon"}[self._c.backend]

    @property
    def fd(self) -> int:
        """Readable when :meth:`wait` would not block (for poll/epoll)."""
        return self._c.fd

    # queries
    def version(self) -> Dict[str, Any]:
        """VERSION: uapi_version, features (FEAT_*), limits."""
        return self._c.version()

    def stats(self) -> Dict[str, Any]:
        """STATS: pinned bytes, buffers, contexts, engines, job counters,
        queue depth, in flight, latency histogram."""
        return self._c.stats()

    def ctx_stats(self) -> List[Dict[str, Any]]:
        """CTX_STATS: one dict per open context, this one first."""
        return self._c.ctx_stats()

    def set_spin(self, us: int) -> None:
        """µs :meth:`wait` spins on the shared rings before it sleeps."""
        self._c.set_spin(us)

    # buffers
    def alloc(self, size: int, node: int = -1, flags: int = 0) -> Buffer:
        """A new pinned buffer of ``size`` bytes (rounded up to a page) on
        NUMA ``node`` (-1: this thread's), mapped. ``flags``:
        ``BUF_ALLOW_SMALL``, ``BUF_ALLOW_REMOTE``."""
        return Buffer(self._c.alloc(size, node, flags))

    def import_fd(self, fd: int) -> Buffer:
        """A buffer for an fd from :meth:`Buffer.export` (any process);
        ``fd`` stays the caller's to close."""
        return Buffer(self._c.import_fd(fd))

    # jobs
    def submit(self, jobs: Union[Job, Iterable[Job]]) -> int:
        """Queues jobs in order; returns how many were queued (> 0). Jobs
        with ``user_data`` None get a fresh tag first. Raises
        :class:`Error` when none could be (``BlockingIOError`` for a full
        queue)."""
        if isinstance(jobs, Job):
            jobs = [jobs]
        jobs = list(jobs)
        for j in jobs:
            if j.user_data is None:
                j.user_data = next(self._tags)
        return self._c.submit([j._raw() for j in jobs])

    def wait(self, min: int = 1, max: int = 64,
             timeout: Optional[float] = None) -> List[Completion]:
        """Waits for at least ``min`` completions (``timeout`` seconds,
        None: forever); returns up to ``max``. Raises ``TimeoutError`` (an
        :class:`Error`) when none came in time. Completions held back by
        :meth:`run` for other jobs come first."""
        with self._lock:
            out = list(self._stash.values())[:max]
            for c in out:
                del self._stash[c.user_data]
        if len(out) >= min:
            return out
        ns = -1 if timeout is None else int(timeout * 1e9)
        try:
            raw = self._c.wait(min - len(out), max - len(out), ns)
        except Error:
            if out:
                return out
            raise
        return out + [Completion(*t) for t in raw]

    def run(self, *jobs: Job, timeout: Optional[float] = None
            ) -> List[Completion]:
        """Submits ``jobs``, waits for all of them and returns their
        completions in the jobs' order; raises :class:`JobError` for the
        first that failed. Other jobs' completions it sees are kept for
        :meth:`wait`."""
        want: set = set()
        got: Dict[int, Completion] = {}
        ns = -1 if timeout is None else int(timeout * 1e9)

        def reap() -> None:
            for c in (Completion(*t) for t in self._c.wait(1, 64, ns)):
                if c.user_data in want:
                    got[c.user_data] = c
                else:
                    with self._lock:
                        self._stash[c.user_data] = c

        todo = list(jobs)
        while todo:
            try:
                n = self.submit(todo)
            except BlockingIOError:
                # Queue full: room comes back as our queued jobs complete.
                if len(got) == len(want):
                    raise
                reap()
                continue
            want.update(j.user_data for j in todo[:n])
            todo = todo[n:]
        with self._lock:
            for t in list(want & self._stash.keys()):
                got[t] = self._stash.pop(t)
        while len(got) < len(want):
            reap()
        out = [got[j.user_data] for j in jobs]
        for c in out:
            c.check()
        return out

    def engine_stats(self) -> Dict[str, Any]:
        """ENGINE_STATS, run as a job: the engine's nodes, threads and
        batch size, and per op (gemm, ffn, moe, attn_decode, decode,
        prefill) the sums over pools of jobs, failed, tokens, batches,
        run_ns."""
        from . import ops
        size, _ = _c.layout("engine_stats")
        osize, _ = _c.layout("op_stats")
        with self.alloc(size, flags=_c.BUF_ALLOW_SMALL) as b:
            self.run(ops.engine_stats(b))
            mem = memoryview(b.raw)
            try:
                st = _c.unpack("engine_stats", mem)
                names = ["gemm", "ffn", "moe", "attn_decode", "decode",
                         "prefill"]
                per_op = {}
                for i, name in enumerate(names):
                    tot: Dict[str, int] = {}
                    for p in range(_c.MAX_NODES):
                        off = _c.ENGINE_STATS_OP_OFF + \
                            (i * _c.MAX_NODES + p) * osize
                        d = _c.unpack("op_stats", mem, off)
                        for k in ("jobs", "failed", "tokens", "batches",
                                  "run_ns"):
                            tot[k] = tot.get(k, 0) + d[k]
                    per_op[name] = tot
                st["ops"] = per_op
            finally:
                mem.release()
        return st

    def __repr__(self) -> str:
        if self.closed:
            return "<syshax.Context closed>"
        return f"<syshax.Context {self.backend}>"


def open(path: Optional[str] = None, backend: str = "auto") -> Context:
    """Opens a sysHAX backend.

    ``backend``: "auto" ($SYSHAX_DEVICE, /dev/syshax, then syshaxd's
    socket), "kernel" or "daemon"; ``path``: a device node or socket
    instead of the default. Raises :class:`Error` (with the paths tried)
    when none opens. Use as ``with syshax.open() as sh: ...``.
    """
    codes = {"auto": _c.BACKEND_AUTO, "kernel": _c.BACKEND_KERNEL,
             "daemon": _c.BACKEND_DAEMON}
    if backend not in codes:
        raise ValueError(f"backend {backend!r}: auto, kernel or daemon")
    return Context(path, codes[backend])
