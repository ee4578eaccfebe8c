"""Bus switching activity: how many wires toggle when a stream of values crosses a bus, with and without
zero gating.

Dynamic energy on a wire is spent when it switches (``C V^2`` per 0->1->0), so the energy of moving a stream of
words is proportional to the number of bit flips between consecutive words (their Hamming distances).
Sending a zero costs twice: every line that was 1 drops to 0, then rises again for the next non-zero word.
Dally's zero gating (ScaledML 2018, "I am a zero"): when a word is zero, *hold* the data lines in their
previous state and raise one extra wire instead. The cost of a zero is then at most one toggle of that
wire (none while zeros follow zeros), and the next non-zero word is compared with the last non-zero one.

>>> bus_toggles([1.0, 0.0, 1.0], dtype=np.float16)   # 0x3C00 has 4 bits set: on, off, on again
12
>>> bus_toggles([1.0, 0.0, 1.0], dtype=np.float16, zero_gating=True)  # 4 to set, then the flag up and down
6
"""

from __future__ import annotations

import numpy as np

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits of each unsigned word (NumPy 1 and 2; ``np.bitwise_count`` exists only in 2)."""
    if words.size == 0:
        return np.zeros(0, np.int64)
    as_bytes = words.astype(words.dtype.newbyteorder("<"), copy=False).view(np.uint8)
    return np.unpackbits(as_bytes.reshape(words.size, -1), axis=1).sum(axis=1)


def bus_words(values, dtype=np.float16) -> np.ndarray:
    """The bit patterns (unsigned integers) of ``values`` rounded to ``dtype``, in order, flattened."""
    dtype = np.dtype(dtype)
    if dtype.itemsize not in _UINT or dtype.kind not in "fiu":
        raise TypeError(f"dtype: expected a numeric dtype of 1, 2, 4 or 8 bytes, got {dtype}")
    arr = np.asarray(values)
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError("values: expected finite numbers (a bus carries data, not NaN or inf)")
    return np.ascontiguousarray(arr.astype(dtype).ravel()).view(_UINT[dtype.itemsize])


def bus_toggles(values, *, dtype=np.float16, zero_gating: bool = False) -> int:
    """Wire toggles to send ``values`` in order over a bus one word wide, starting from all lines at 0.

    Args:
        values: the stream (any shape; sent in C order).
        dtype: the word format on the bus (default FP16, 16 data lines).
        zero_gating: hold the data lines on a zero word and toggle one extra "zero" wire instead.

    Returns:
        The total number of line transitions (data lines, plus the zero wire when gating).
    """
    words = bus_words(values, dtype)
    if words.size == 0:
        return 0
    if not zero_gating:
        prev = np.concatenate([words[:1] * 0, words[:-1]])
        return int(_popcount(words ^ prev).sum())
    zero = (words == 0) | (np.asarray(values).ravel().astype(dtype) == 0)  # -0.0 is a zero too
    nonzero = words[~zero]
    prev = np.concatenate([nonzero[:1] * 0, nonzero[:-1]])
    data = int(_popcount(nonzero ^ prev).sum())
    flag = np.concatenate([[False], zero])
    return data + int(np.count_nonzero(flag[1:] != flag[:-1]))
