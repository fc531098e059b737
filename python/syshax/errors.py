# SPDX-License-Identifier: MIT
"""Exceptions of the syshax package.

Every failure of a libsyshax-rt call raises :class:`Error`, an
:class:`OSError` whose ``errno`` is the library's errno and whose
``strerror`` is ``"<call>: <libsyshax-rt's message>"``
(``syshax_strerror()``). Where Python has a built-in subclass of OSError
for that errno (``FileNotFoundError`` for ENOENT, ``PermissionError`` for
EACCES and EPERM, ``TimeoutError`` for ETIMEDOUT, ``BlockingIOError`` for
EAGAIN, ...), the exception is an instance of both, so either ``except``
clause catches it. A job that completes with a negative status raises
:class:`JobError` (from :meth:`syshax.Context.run` or
:meth:`syshax.Completion.check`), which carries the completion.
"""
from __future__ import annotations

import errno as _errno
from typing import Dict, Optional, Tuple, Type

__all__ = ["Error", "JobError", "from_errno"]


class Error(OSError):
    """A libsyshax-rt call failed: ``errno`` and the library's message."""


class JobError(Error):
    """A job completed with a negative status; ``completion`` is it."""

    completion: Optional[object] = None


# Built-in OSError subclasses by errno (as OSError(errno, ...) picks them).
_BUILTIN: Dict[int, Type[OSError]] = {
    _errno.ENOENT: FileNotFoundError,
    _errno.EEXIST: FileExistsError,
    _errno.EACCES: PermissionError,
    _errno.EPERM: PermissionError,
    _errno.ETIMEDOUT: TimeoutError,
    _errno.EAGAIN: BlockingIOError,
    _errno.EINTR: InterruptedError,
    _errno.ECONNREFUSED: ConnectionRefusedError,
    _errno.ECONNRESET: ConnectionResetError,
    _errno.EPIPE: BrokenPipeError,
    _errno.ENOTDIR: NotADirectoryError,
    _errno.EISDIR: IsADirectoryError,
    _errno.ECHILD: ChildProcessError,
    _errno.ESRCH: ProcessLookupError,
}

_classes: Dict[Tuple[type, int], type] = {}


def _class_for(base: type, err: int) -> type:
    builtin = _BUILTIN.get(err)
    if builtin is None:
        return base
    key = (base, err)
    if key not in _classes:
        _classes[key] = type(base.__name__, (base, builtin),
                             {"__module__": base.__module__,
                              "__doc__": base.__doc__})
    return _classes[key]


def from_errno(err: int, call: str, message: str,
               base: type = Error) -> Error:
    """The exception for ``-err`` (or ``err``) from ``call``."""
    err = abs(err)
    return _class_for(base, err)(err, f"{call}: {message}")
