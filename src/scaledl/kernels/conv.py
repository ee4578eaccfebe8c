"""2-D convolution (a CNN layer's valid cross-correlation), float32: direct, then Winograd F(2x2, 3x3).

``y[k, p, q] = sum_c sum_r sum_s w[k, c, r, s] x[c, p + r, q + s]`` for x of shape ``(C, H, W)`` and w of
shape ``(K, C, R, S)``; y is ``(K, H - R + 1, W - S + 1)``.

* ``v1 direct``: one thread per output value; ``C R S`` multiplies each (9 C for a 3 x 3 filter).
* ``v2 winograd``: what changed: one thread per 2 x 2 output tile. The 4 x 4 input patch is transformed
  with additions only (``V = B^T d B``), multiplied elementwise with the pre-transformed filter
  ``U = G g G^T`` (16 multiplies per channel instead of 36), and the sum over channels is transformed back
  (``Y = A^T M A``), as in Lavin and Gray (2016). The filter transform runs once on the host, as a
  framework does once per set of weights.

>>> import numpy as np
>>> x = np.ones((1, 4, 4), np.float32); w = np.ones((1, 1, 3, 3), np.float32)
>>> conv2d(x, w, variant="winograd")[0]
array([[9., 9.],
       [9., 9.]], dtype=float32)
"""

from __future__ import annotations

import numpy as np

import scaledl.device
from numba import cuda, float32
from scaledl.kernels.winograd import LAVIN_F2x3

VARIANTS = ("direct", "winograd")


def conv2d_reference(x, w) -> np.ndarray:
    """The specification in float64 (a sum of shifted slices)."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    C, H, W = x.shape
    K, _, R, S = w.shape
    P, Q = H - R + 1, W - S + 1
    y = np.zeros((K, P, Q))
    for r in range(R):
        for s in range(S):
            y += np.einsum("kc,cpq->kpq", w[:, :, r, s], x[:, r:r + P, s:s + Q])
    return y


def winograd_filter_transform(w) -> np.ndarray:
    """``U = G g G^T`` for every (k, c): ``(K, C, 3, 3) -> (K, C, 4, 4)`` float32 (exact: G has 0, +-1/2, 1
    entries, so U is g's sums scaled by powers of two, rounded once to float32)."""
    G = LAVIN_F2x3["G"]
    return (G @ np.asarray(w, np.float64) @ G.T).astype(np.float32)


# ------------------------------------------------------------------------------------------------ v1
@cuda.jit
def conv2d_v1_direct(x, w, y):
    """v1: one thread per y[k, p, q]: C x R x S multiply-adds read straight from global memory."""
    q, p = cuda.grid(2)
    k = cuda.blockIdx.z
    C = x.shape[0]
    R, S = w.shape[2], w.shape[3]
    if p < y.shape[1] and q < y.shape[2]:
        acc = float32(0.0)
        for c in range(C):
            for r in range(R):
                for s in range(S):
                    acc += w[k, c, r, s] * x[c, p + r, q + s]
        y[k, p, q] = acc


# ------------------------------------------------------------------------------------------------ v2
@cuda.jit
def conv2d_v2_winograd(x, U, y):
    """v2: one thread per 2 x 2 output tile; per channel a 4 x 4 transform (adds), 16 multiplies."""
    tj, ti = cuda.grid(2)  # tile column, tile row
    k = cuda.blockIdx.z
    C, H, W = x.shape
    P, Q = y.shape[1], y.shape[2]
    if 2 * ti >= P or 2 * tj >= Q:
        return
    d = cuda.local.array((4, 4), float32)
    t = cuda.local.array((4, 4), float32)
    m = cuda.local.array((4, 4), float32)
    for a in range(4):
        for b in range(4):
            m[a, b] = float32(0.0)
    for c in range(C):
        for a in range(4):  # the 4 x 4 input patch; past the edge (odd P or Q) it is zero padded
            for b in range(4):
                r = 2 * ti + a
                s = 2 * tj + b
                d[a, b] = x[c, r, s] if (r < H and s < W) else float32(0.0)
        for b in range(4):  # t = B^T d  (rows of B^T: [1,0,-1,0] [0,1,1,0] [0,-1,1,0] [0,1,0,-1])
            t[0, b] = d[0, b] - d[2, b]
            t[1, b] = d[1, b] + d[2, b]
            t[2, b] = d[2, b] - d[1, b]
            t[3, b] = d[1, b] - d[3, b]
        for a in range(4):  # V = t B, then accumulate U * V over channels: the 16 multiplies
            v0 = t[a, 0] - t[a, 2]
            v1 = t[a, 1] + t[a, 2]
            v2 = t[a, 2] - t[a, 1]
            v3 = t[a, 1] - t[a, 3]
            m[a, 0] += U[k, c, a, 0] * v0
            m[a, 1] += U[k, c, a, 1] * v1
            m[a, 2] += U[k, c, a, 2] * v2
            m[a, 3] += U[k, c, a, 3] * v3
    for b in range(4):  # Y = A^T m A, A^T = [[1,1,1,0],[0,1,-1,-1]]
        t[0, b] = m[0, b] + m[1, b] + m[2, b]
        t[1, b] = m[1, b] - m[2, b] - m[3, b]
    for a in range(2):
        p = 2 * ti + a
        if p < P:
            y0 = t[a, 0] + t[a, 1] + t[a, 2]
            y1 = t[a, 1] - t[a, 2] - t[a, 3]
            y[k, p, 2 * tj] = y0
            if 2 * tj + 1 < Q:
                y[k, p, 2 * tj + 1] = y1


# -------------------------------------------------------------------------------------------- launcher
BLOCK = (8, 8)  # 64 threads along (q, p): small enough for the simulator, a whole number of warps on a GPU


def launch_conv2d(variant: str, x, w_or_U, out):
    """Launch one kernel over ``out (K, P, Q)``: the grid alone, no checks, no transfers.

    ``w_or_U`` is the filter ``w (K, C, R, S)`` for ``direct`` and the transformed filter ``U (K, C, 4, 4)``
    (:func:`winograd_filter_transform`) for ``winograd``. This is what a benchmark times: with device
    arrays on a GPU nothing is copied and nothing runs on the host but the launch.
    """
    K, P, Q = out.shape
    bx, by = BLOCK
    if variant == "direct":
        grid = ((Q + bx - 1) // bx, (P + by - 1) // by, K)
        conv2d_v1_direct[grid, BLOCK](x, w_or_U, out)
    else:
        tp, tq = (P + 1) // 2, (Q + 1) // 2
        grid = ((tq + bx - 1) // bx, (tp + by - 1) // by, K)
        conv2d_v2_winograd[grid, BLOCK](x, w_or_U, out)
    return out


def conv2d(x, w, variant: str = "direct", out=None):
    """Valid 2-D cross-correlation of ``x (C, H, W)`` with ``w (K, C, R, S)`` on the active backend.

    ``winograd`` needs 3 x 3 filters; its filter transform runs on the host (once per call; a benchmark
    transforms once and calls :func:`launch_conv2d`). NumPy arrays in and out; on a GPU, device arrays
    are accepted as well (``out`` must then be a device array or None).

    Raises:
        ValueError: unknown variant, shapes that do not fit, or a non-3x3 filter for winograd.
        TypeError: non-float32 inputs.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not a convolution variant; expected one of {VARIANTS}")
    for name, a, nd in (("x", x, 3), ("w", w, 4)):
        if len(getattr(a, "shape", ())) != nd:
            raise ValueError(f"{name} must be a {nd}-D array, got shape {getattr(a, 'shape', None)!r}")
        if np.dtype(a.dtype) != np.float32:
            raise TypeError(f"{name} must be float32, got dtype {a.dtype}")
    C, H, W = x.shape
    K, C2, R, S = w.shape
    if C2 != C:
        raise ValueError(f"w has {C2} input channels but x has {C} (expected w of shape (K, {C}, R, S))")
    if R > H or S > W:
        raise ValueError(f"the {R}x{S} filter is larger than the {H}x{W} input")
    if variant == "winograd" and (R, S) != (3, 3):
        raise ValueError(f"variant='winograd' implements F(2x2, 3x3); got a {R}x{S} filter")
    P, Q = H - R + 1, W - S + 1
    on_device = scaledl.device.on_gpu() and cuda.is_cuda_array(x)
    if out is None:
        out = cuda.device_array((K, P, Q), np.float32) if on_device else np.empty((K, P, Q), np.float32)
    elif tuple(out.shape) != (K, P, Q):
        raise ValueError(f"out must have shape {(K, P, Q)}, got {tuple(out.shape)}")
    filt = w
    if variant == "winograd":
        # simulator: no is_cuda_array
        host_w = w.copy_to_host() if scaledl.device.on_gpu() and cuda.is_cuda_array(w) else w
        filt = winograd_filter_transform(host_w)
        if on_device:
            filt = cuda.to_device(filt)
    return launch_conv2d(variant, x, filt, out)


def conv_multiplies(C: int, K: int, P: int, Q: int, variant: str, R: int = 3, S: int = 3) -> int:
    """Multiplies the kernel performs (the Winograd count excludes its transforms' additions)."""
    if variant == "direct":
        return K * P * Q * C * R * S
    if variant == "winograd":
        return K * ((P + 1) // 2) * ((Q + 1) // 2) * C * 16
    raise ValueError(f"variant={variant!r} is not a convolution variant; expected one of {VARIANTS}")
