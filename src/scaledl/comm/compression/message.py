"""What a compressor sends: encoded messages that know their wire size and decode to the dense array.

Every message stores only what would cross the network (indices and values, packed codes and scalers,
sign bits and reconstruction values), and ``nbytes`` counts exactly that, so a compression ratio computed
from it is the real one. Sizes are counted as the reference implementations pack them: float32 values and
scalers (4 B), uint32 indices (4 B, as DGC's code sends them), codes of ``bits`` bits packed end to end and
rounded up to whole bytes per message.

>>> import numpy as np
>>> m = SparseMessage((3, 4), np.uint32([2, 7]), np.float32([0.5, -1.0]))
>>> m.nbytes, m.decode()[1].tolist()                # 2 values + 2 indices of 4 B
(16, [0.0, 0.0, 0.0, -1.0])
>>> q = ScaledMessage((5,), np.int8([1, 0, -1, 0, 1]), np.float32(0.25), bits=2)
>>> q.nbytes, q.decode().tolist()                   # ceil(5 x 2 / 8) = 2 B of codes + a 4 B scaler
(6, [0.25, 0.0, -0.25, 0.0, 0.25])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Message", "DenseMessage", "SparseMessage", "ScaledMessage", "SignMessage", "SCALER_NBYTES",
           "INDEX_NBYTES"]

SCALER_NBYTES = 4  # one float32 scaler (TernGrad's max|g|, QSGD's norm, a per-column reconstruction value)
INDEX_NBYTES = 4   # one uint32 index: tensors up to 2^32 elements


class Message:
    """Base class: ``decode()`` gives the dense array the receiver adds; ``nbytes`` its encoded size."""

    shape: tuple

    @property
    def size(self) -> int:
        """Elements of the dense tensor."""
        return math.prod(self.shape)

    @property
    def dense_nbytes(self) -> int:
        """What the uncompressed float32 tensor would cost."""
        return 4 * self.size

    def decode(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def nbytes(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class DenseMessage(Message):
    """The tensor itself (no compression)."""
    values: np.ndarray

    @property
    def shape(self):
        return self.values.shape

    def decode(self) -> np.ndarray:
        return self.values.copy()

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)


@dataclass(frozen=True)
class SparseMessage(Message):
    """``values`` at flat positions ``indices`` (sorted, unique) of a tensor of ``shape``; zero elsewhere."""
    shape: tuple
    indices: np.ndarray  # uint32
    values: np.ndarray

    def decode(self) -> np.ndarray:
        out = np.zeros(self.size, self.values.dtype)
        out[self.indices] = self.values
        return out.reshape(self.shape)

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + INDEX_NBYTES * self.indices.size)


@dataclass(frozen=True)
class ScaledMessage(Message):
    """Integer codes of ``bits`` bits each times a scaler (TernGrad, QSGD, stochastic rounding)."""
    shape: tuple
    codes: np.ndarray   # integers; the dense value is codes * scale
    scale: np.ndarray   # float32 scaler(s), broadcast against the codes
    bits: int

    def decode(self) -> np.ndarray:
        # float64 product, then one rounding: exact for codes up to 2^24, and the same on every CPU
        return (self.codes * np.asarray(self.scale, np.float64)).astype(np.float32).reshape(self.shape)

    @property
    def nbytes(self) -> int:
        return -(-self.size * self.bits // 8) + SCALER_NBYTES * int(np.size(self.scale))


@dataclass(frozen=True)
class SignMessage(Message):
    """One bit per element choosing between two reconstruction values per column (1-bit SGD)."""
    shape: tuple
    positive: np.ndarray  # bool, shaped (rows, columns): the sign bit
    high: np.ndarray      # float32 per column: value decoded for a set bit
    low: np.ndarray       # float32 per column: value decoded for a clear bit

    def decode(self) -> np.ndarray:
        return np.where(self.positive, self.high, self.low).astype(self.high.dtype).reshape(self.shape)

    @property
    def nbytes(self) -> int:
        return -(-self.size // 8) + SCALER_NBYTES * (self.high.size + self.low.size)
