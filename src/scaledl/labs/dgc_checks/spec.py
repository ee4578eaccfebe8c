"""Lab 06's independent specification: top-k (:mod:`scaledl.labs.top_k_spec`), top-k with error feedback and DGC
in plain NumPy (never :mod:`scaledl.comm.compression`), and the helpers the checks share to show a difference."""

from __future__ import annotations

import math

import numpy as np

from scaledl.labs.top_k_spec import spec_top_k

SHOWN = 5
EF_SIZES = (1, 7, 37, 101, (5, 13))  # odd sizes, none a multiple of another, one 2-D
EF_RATIOS = (0.01, 0.1, 0.3, 1.0)
BYTES_PER_SENT = 8  # a uint32 index and a float32 value


# ----------------------------------------------------------------------------------- the specification
def spec_k(ratio: float, n: int) -> int:
    """Elements sent of a tensor of ``n``: ceil(ratio n), at least one."""
    return min(n, max(1, math.ceil(ratio * n)))


def spec_topk_ef(grads, ratio: float):
    """Top-k with local accumulation on a sequence of gradients of one tensor: (dense sent per step, final
    residual), in float32 as the student's code computes it."""
    r = np.zeros_like(np.asarray(grads[0], np.float32))
    sent = []
    for g in grads:
        r = r + np.asarray(g, np.float32)
        flat = r.ravel()
        idx = spec_top_k(flat, spec_k(ratio, flat.size))
        s = np.zeros_like(flat)
        s[idx] = flat[idx]
        flat[idx] = 0
        sent.append(s.reshape(r.shape))
    return sent, r


def spec_dgc(grads, ratio: float, momentum: float, masking: bool):
    """DGC's momentum correction (u <- m u + g, v <- v + u, send top-k of v, clear it there) with optional
    momentum factor masking (clear u there too): (dense sent per step, final u, final v), in float32."""
    m = np.float32(momentum)
    u = np.zeros_like(np.asarray(grads[0], np.float32))
    v = np.zeros_like(u)
    sent = []
    for g in grads:
        u = m * u + np.asarray(g, np.float32)
        v = v + u
        fv, fu = v.ravel(), u.ravel()
        idx = spec_top_k(fv, spec_k(ratio, fv.size))
        s = np.zeros_like(fv)
        s[idx] = fv[idx]
        fv[idx] = 0
        if masking:
            fu[idx] = 0
        sent.append(s.reshape(v.shape))
    return sent, u, v


# ------------------------------------------------------------------------------------------- helpers
def _hint(result, text):
    if text and text not in result.hints:
        result.hints.append(text)


def _fmt(a) -> str:
    return "[" + ", ".join(f"{float(x):g}" for x in np.asarray(a).ravel()) + "]"


def _differences(yours, spec, what: str, limit=SHOWN):
    yours, spec = np.asarray(yours).ravel(), np.asarray(spec).ravel()
    bad = np.flatnonzero(yours != spec)
    return [f"    {what}[{int(i)}]:  Yours: {float(yours[i])!r}  Spec: {float(spec[i])!r}" for i in bad[:limit]]


def _dense(message, shape, dtype=np.float32):
    """The student's (indices, values) as a dense array; TypeError/ValueError for a malformed message."""
    if not (isinstance(message, tuple) and len(message) == 2):
        raise TypeError(f"compress() must return a tuple (indices, values), got {type(message).__name__}")
    idx, values = (np.asarray(x) for x in message)
    n = math.prod(shape)
    if idx.ndim != 1 or values.shape != idx.shape:
        raise ValueError(f"compress() returned indices of shape {idx.shape} and values of shape {values.shape}; "
                         "expected two 1-D arrays of the same length")
    if idx.size and (not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"compress() returned indices {idx[:SHOWN].tolist()}...; expected flat integer indices "
                         f"in 0..{n - 1}")
    out = np.zeros(n, dtype)
    out[idx] = values
    return out.reshape(shape), idx


def _ef_gradients(size, steps: int, rng) -> list[np.ndarray]:
    """Random gradients that are multiples of 1/8 below 2^6: every sum of them is exact in float32, so the
    error-feedback invariant must hold with ``==``, whatever the order of additions."""
    shape = size if isinstance(size, tuple) else (size,)
    return [(rng.integers(-64, 65, shape) / 8).astype(np.float32) for _ in range(steps)]
