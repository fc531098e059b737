# SPDX-License-Identifier: MIT
"""syshax: Python bindings of libsyshax-rt, the sysHAX runtime.

sysHAX pins buffers that the CPU, an xPU and syshaxd's CPU engine share,
and runs jobs on them (uapi/syshax.h, uapi/syshax_ops.h). This package:

* :func:`open` -> :class:`Context` (the kernel module or syshaxd);
* :meth:`Context.alloc` -> :class:`Buffer`, mapped, with zero-copy
  :meth:`Buffer.numpy` and :meth:`Buffer.torch` views; :meth:`Buffer.export`
  and :meth:`Context.import_fd` share buffers as (dma-buf) fds;
* :mod:`syshax.ops`: a job builder per op with keyword params;
  :meth:`Context.submit` / :meth:`Context.wait` give :class:`Completion`
  objects, :meth:`Context.run` submits and waits;
* :mod:`syshax.weights`: weight sets from numpy/torch arrays;
* :mod:`syshax.text`: the tokenizer, chat templates and sampler of
  syshax-run and syshax-serve (libshxtext);
* :meth:`Context.stats`, :meth:`Context.ctx_stats`,
  :meth:`Context.engine_stats`;
* errors: :class:`Error` (an OSError with the errno and libsyshax-rt's
  message), :class:`JobError` for failed jobs.

Example::

    import syshax
    from syshax import ops
    with syshax.open() as sh, sh.alloc(1 << 20) as a, sh.alloc(1 << 20) as b:
        a.numpy("float32")[:4] = [1, 2, 3, 4]
        sh.run(ops.copy(a, b))
        print(b.numpy("float32")[:4])

The UAPI constants are attributes without their ``SYSHAX_`` prefix
(``OP_FFN``, ``DT_BF16``, ``FFN_NORM``, ...). docs/python.md has more.
"""
from . import _syshax
from ._core import (Buffer, Completion, Context, Job, Ref, dtype_code,
                    dtype_size, open)
from .errors import Error, JobError
from . import ops, text, weights
from .weights import WeightSet

__version__ = "0.1.0"

# The UAPI constants (OP_*, DT_*, FFN_*, MOE_*, ...), from the C headers.
globals().update({k: v for k, v in vars(_syshax).items()
                  if k.isupper() and isinstance(v, int)})


def strerror(err: int) -> str:
    """libsyshax-rt's message for an errno (negative or positive)."""
    return _syshax.strerror(err)


def load_weights(ctx: Context, tensors, quantize: int = _syshax.QUANT_NONE
                 ) -> WeightSet:
    """Same as :func:`syshax.weights.load`."""
    return weights.load(ctx, tensors, quantize)


__all__ = ["open", "Context", "Buffer", "Ref", "Job", "Completion",
           "Error", "JobError", "WeightSet", "ops", "weights",
           "load_weights", "strerror", "dtype_code", "dtype_size"]
