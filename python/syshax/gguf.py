# SPDX-License-Identifier: MIT
"""A GGUF (v2, v3) reader for the xPU worker: metadata, and tensors as f32
numpy arrays (F32, F16, BF16 as they are, Q8_0 and Q4_0 dequantized as
ggml does: value = d * q, Q4_0's q = nibble - 8, the low nibbles first).
The file is mapped, not read; arrays of F32 tensors are views of it."""

import mmap
import struct
from typing import Any, Dict, Tuple

import numpy as np

__all__ = ["GGUF"]

# value types: struct format or None (string, array)
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
           7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
# ggml types: (elements per block, bytes per block)
_F32, _F16, _Q4_0, _Q8_0, _BF16 = 0, 1, 2, 8, 30
_BLOCK = {_F32: (1, 4), _F16: (1, 2), _Q4_0: (32, 18), _Q8_0: (32, 34),
          _BF16: (1, 2)}


class GGUF:
    """``GGUF(path)``: ``.meta`` (key: value), ``.tensors`` (name: (ggml
    type, ne, offset)), ``.array(name)`` (f32, numpy order: ne reversed)."""

    def __init__(self, path: str):
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._pos = 0
        magic, version = struct.unpack_from("<4sI", self._map, 0)
        if magic != b"GGUF" or version not in (2, 3):
            raise ValueError(f"{path}: not a GGUF v2/v3 file")
        self._pos = 8
        n_tensors, n_kv = self._unpack("<QQ")
        self.meta: Dict[str, Any] = {}
        for _ in range(n_kv):
            key = self._string()
            (vtype,) = self._unpack("<I")
            self.meta[key] = self._value(vtype)
        self.tensors: Dict[str, Tuple[int, Tuple[int, ...], int]] = {}
        for _ in range(n_tensors):
            name = self._string()
            (ndim,) = self._unpack("<I")
            ne = self._unpack("<" + "Q" * ndim)
            ttype, off = self._unpack("<IQ")
            self.tensors[name] = (ttype, tuple(ne), off)
        align = int(self.meta.get("general.alignment", 32))
        self._data = (self._pos + align - 1) // align * align

    def _unpack(self, fmt: str) -> Tuple[Any, ...]:
        v = struct.unpack_from(fmt, self._map, self._pos)
        self._pos += struct.calcsize(fmt)
        return v

    def _string(self) -> str:
        (n,) = self._unpack("<Q")
        s = bytes(self._map[self._pos:self._pos + n]).decode("utf-8",
                                                               "replace")
        self._pos += n
        return s

    def _value(self, vtype: int) -> Any:
        if vtype == _STRING:
            return self._string()
        if vtype == _ARRAY:
            etype, n = self._unpack("<IQ")
            return [self._value(etype) for _ in range(n)]
        if vtype not in _SCALAR:
            raise ValueError(f"unknown GGUF value type {vtype}")
        return self._unpack(_SCALAR[vtype])[0]

    def array(self, name: str) -> np.ndarray:
        """Tensor ``name`` as f32, shape ne reversed ([rows, ne[0]])."""
        ttype, ne, off = self.tensors[name]
        if ttype not in _BLOCK:
            raise ValueError(f"tensor {name}: ggml type {ttype} is not "
                             "F32, F16, BF16, Q8_0 or Q4_0")
        count = int(np.prod(ne))
        per, size = _BLOCK[ttype]
        raw = np.frombuffer(self._map, np.uint8, count // per * size,
                            self._data + off)
        shape = tuple(reversed(ne))
        if ttype == _F32:
            return raw.view(np.float32).reshape(shape)
        if ttype == _F16:
            return raw.view(np.float16).astype(np.float32).reshape(shape)
        if ttype == _BF16:
            b = raw.view(np.uint16).astype(np.uint32) << 16
            return b.view(np.float32).reshape(shape)
        blocks = raw.reshape(-1, size)
        d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
        if ttype == _Q8_0:
            q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
        else:
            qs = blocks[:, 2:]
            q = np.concatenate([qs & 0x0F, qs >> 4], axis=1)
            q = q.astype(np.float32) - 8.0
        return (d * q).reshape(shape)
