"""A simple RNN, h_t = f(W h_{t-1} + U x_t + b): a NumPy reference, a standard kernel and persistent kernels.

The input projection ``z_t = U x_t + b`` does not depend on the previous step, so it is one large GEMM over
all time steps, done before the recurrence (as in Diamos et al. and cuDNN); the kernels run only the
recurrent part ``h_t = f(W h_{t-1} + z_t)``, which must go step by step. All kernels read ``W`` transposed
(``WT[k, j] = W[j, k]``), so threads that compute neighbouring hidden units read neighbouring weights.

The variants:

* ``v1 standard``: one launch per time step, one thread per (sample, hidden unit); every step re-reads all
  of ``W`` from global memory, ``hidden^2`` weights for only ``2 hidden^2 batch`` FLOPs: at small batch the
  step is memory bound however fast the arithmetic.
* ``v2 persistent block``: what changed: one launch for all steps; one block loads the whole ``W`` into
  shared memory once and keeps it there, with ``syncthreads`` between steps. One block can hold only a small
  ``W`` (48 KiB of static shared memory: hidden <= 110 in fp32); it is the variant the simulator can run.
* ``v3 persistent grid``: what changed: the rows of ``W`` are split across many blocks, each keeping its
  slice in shared memory for all steps; the grid synchronises between steps (``cuda.cg.this_grid().sync()``,
  which makes Numba launch the kernel cooperatively, so all blocks must be resident at once). The new
  hidden state is exchanged through global memory (it is small: ``batch x hidden``, and stays in L2).
  Numba's simulator can synchronise a grid of one block only, so there it runs with a single block.

Diamos et al. ("Persistent RNNs: Stashing Recurrent Weights On-Chip", ICML 2016) keep ``W`` in the *register
file* instead, in hand-written assembly; shared memory is what a Numba kernel can pin, and the traffic
argument is the same (:mod:`scaledl.kernels.rnn_traffic`).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> W, U, b = rng.standard_normal((5, 5)) * 0.3, rng.standard_normal((5, 3)), np.zeros(5)
>>> x, h0 = rng.standard_normal((4, 2, 3)), np.zeros((2, 5))      # 4 steps, batch 2, 3 inputs
>>> ref = rnn_reference(W, U, b, x, h0)
>>> got = rnn_forward(W, U, b, x, h0, variant="persistent_block")
>>> got.shape, got.dtype, bool(np.allclose(got, ref, atol=1e-5))
((4, 2, 5), dtype('float32'), True)
"""

from __future__ import annotations

import functools
import math

import numpy as np

import scaledl.device
from numba import cuda, float32

VARIANTS = ("standard", "persistent_block", "persistent_grid")
ACTIVATIONS = ("tanh", "relu")
STATIC_SHARED_BYTES = 48 * 1024  # the most static shared memory one block may declare (CUDA, all GPUs)


# --------------------------------------------------------------------------------------------- reference
def rnn_reference(W, U, b, x, h0, activation: str = "tanh") -> np.ndarray:
    """The specification in float64: ``h_t = f(W h_{t-1} + U x_t + b)`` for ``t = 1..T``.

    Shapes: ``W`` (H, H), ``U`` (H, I), ``b`` (H,), ``x`` (T, B, I), ``h0`` (B, H); returns (T, B, H).
    """
    f = _activation_fn(activation)
    W, U, b, x = (np.asarray(a, np.float64) for a in (W, U, b, x))
    h = np.asarray(h0, np.float64)
    out = np.empty((x.shape[0],) + h.shape)
    for t in range(x.shape[0]):
        h = f(h @ W.T + x[t] @ U.T + b)  # (B, H)
        out[t] = h
    return out


def _activation_fn(activation):
    if activation == "tanh":
        return np.tanh
    if activation == "relu":
        return lambda v: np.maximum(v, 0.0)
    raise ValueError(f"activation={activation!r}; expected one of {ACTIVATIONS}")


# --------------------------------------------------------------------------------------------- kernels
# The activation is written out in each kernel (act 0: tanh, 1: relu) rather than called as a device function:
# compiling a kernel's device-function callee for PTX asks for a CUDA driver, which the CI compile test lacks.
@cuda.jit
def rnn_v1_standard(WT, z, states, t, act):
    """v1: one step; thread (b, j) reads row j of W (as column j of WT) from global memory, every step."""
    H = WT.shape[0]
    o = cuda.grid(1)
    if o < z.shape[1] * H:
        b = o // H
        j = o % H
        acc = z[t, b, j]
        for k in range(H):
            acc += WT[k, j] * states[t, b, k]
        states[t + 1, b, j] = math.tanh(acc) if act == 0 else max(acc, float32(0.0))


@functools.lru_cache(maxsize=None)
def persistent_block_kernel(hidden: int):
    """v2 for one ``hidden`` size (the shared array's shape must be a compile-time constant)."""
    H = hidden

    @cuda.jit
    def rnn_v2_persistent_block(WT, z, states, act):
        """v2: all T steps in one block; W loaded into shared memory once; syncthreads between steps."""
        Wsh = cuda.shared.array((H, H), float32)  # Wsh[j, k] = W[j, k]
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        for idx in range(tid, H * H, nt):
            Wsh[idx % H, idx // H] = WT[idx // H, idx % H]  # coalesced read of WT
        cuda.syncthreads()
        B = z.shape[1]
        for t in range(z.shape[0]):
            for o in range(tid, B * H, nt):
                b = o // H
                j = o % H
                acc = z[t, b, j]
                for k in range(H):
                    acc += Wsh[j, k] * states[t, b, k]
                states[t + 1, b, j] = math.tanh(acc) if act == 0 else max(acc, float32(0.0))
            cuda.syncthreads()  # step t + 1 reads every unit of step t

    return rnn_v2_persistent_block


@functools.lru_cache(maxsize=None)
def persistent_grid_kernel(rows_per_block: int, hidden: int):
    """v3 for one slice shape: each block keeps ``rows_per_block`` rows of a ``hidden x hidden`` W."""
    R, H = rows_per_block, hidden

    @cuda.jit
    def rnn_v3_persistent_grid(WT, z, states, act):
        """v3: block g keeps rows [g R, g R + R) of W in shared memory for all steps; grid sync between steps."""
        Wsh = cuda.shared.array((R, H), float32)
        grid = cuda.cg.this_grid()
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        row0 = cuda.blockIdx.x * R
        for idx in range(tid, R * H, nt):
            r = idx % R
            k = idx // R
            Wsh[r, k] = WT[k, row0 + r] if row0 + r < H else float32(0.0)
        cuda.syncthreads()
        B = z.shape[1]
        for t in range(z.shape[0]):
            for o in range(tid, B * R, nt):
                b = o // R
                r = o % R
                j = row0 + r
                if j < H:
                    acc = z[t, b, j]
                    for k in range(H):
                        acc += Wsh[r, k] * states[t, b, k]
                    states[t + 1, b, j] = math.tanh(acc) if act == 0 else max(acc, float32(0.0))
            grid.sync()  # every block's slice of h_t is written before any block starts step t + 1

    return rnn_v3_persistent_grid


# --------------------------------------------------------------------------------------------- launcher
def _threads() -> int:
    return 128 if scaledl.device.on_gpu() else 16  # tiny on the simulator: one Python thread per CUDA thread


def grid_slice_rows(hidden: int) -> int:
    """Rows of W each v3 block keeps: as many as fit in 48 KiB of static shared memory (fp32).

    >>> grid_slice_rows(1152), -(-1152 // grid_slice_rows(1152))   # rows per block, blocks for Seed 001's RNN
    (10, 116)
    """
    return max(1, min(hidden, STATIC_SHARED_BYTES // (4 * hidden)))


def _check(W, U, b, x, h0):
    H = np.shape(W)[0] if np.ndim(W) == 2 else None
    if H is None or np.shape(W) != (H, H):
        raise ValueError(f"W must be square (hidden, hidden), got shape {np.shape(W)}")
    if np.ndim(x) != 3:
        raise ValueError(f"x must have shape (steps, batch, inputs), got shape {np.shape(x)}")
    T, B, I = np.shape(x)
    for name, arr, want in (("U", U, (H, I)), ("b", b, (H,)), ("h0", h0, (B, H))):
        if np.shape(arr) != want:
            raise ValueError(f"{name} must have shape {want} for hidden={H}, batch={B}, inputs={I}, got shape "
                             f"{np.shape(arr)}")
    return H, T, B


def rnn_forward(W, U, b, x, h0, activation: str = "tanh", variant: str = "standard") -> np.ndarray:
    """Run the RNN on the active backend; returns all hidden states, float32 (T, B, H).

    The input projection ``z = x U^T + b`` is computed once for all steps in float64 (one big GEMM, off the
    recurrent path), then rounded to float32 like the weights.

    Raises:
        ValueError: bad shapes, activation or variant; a W too large for the variant's shared memory; more
            v3 blocks than can be resident at once. RuntimeError: v3 with more than one block on the simulator.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not an RNN variant; expected one of {VARIANTS}")
    _activation_fn(activation)
    H, T, B = _check(W, U, b, x, h0)
    act = ACTIVATIONS.index(activation)
    z = (np.asarray(x, np.float64) @ np.asarray(U, np.float64).T + np.asarray(b, np.float64)).astype(np.float32)
    WT = np.ascontiguousarray(np.asarray(W, np.float32).T)
    states = np.full((T + 1, B, H), np.nan, np.float32)  # poisoned: every state the kernel skips stays NaN
    states[0] = h0
    on_gpu = scaledl.device.on_gpu()
    if on_gpu:
        WT, z, states = cuda.to_device(WT), cuda.to_device(z), cuda.to_device(states)
    _launch(variant, WT, z, states, act, on_gpu)
    out = states.copy_to_host() if on_gpu else states
    return out[1:]


def _launch(variant, WT, z, states, act, on_gpu):
    """Launch ``variant`` on prepared (device) arrays: ``T`` launches for v1, one for v2 and v3."""
    T, B, H = z.shape
    threads = _threads()
    if variant == "standard":
        blocks = (B * H + threads - 1) // threads
        for t in range(T):
            rnn_v1_standard[blocks, threads](WT, z, states, t, act)
    elif variant == "persistent_block":
        if 4 * H * H > STATIC_SHARED_BYTES:
            raise ValueError(f"hidden={H}: W takes {4 * H * H} bytes, more than one block's "
                             f"{STATIC_SHARED_BYTES} bytes of static shared memory; use 'persistent_grid'")
        persistent_block_kernel(H)[1, threads](WT, z, states, act)
    else:
        rows = grid_slice_rows(H)
        blocks = (H + rows - 1) // rows
        kernel = persistent_grid_kernel(rows, H)
        if not on_gpu and blocks > 1:
            raise RuntimeError(f"hidden={H} needs {blocks} blocks of {rows} rows, but Numba's simulator can "
                               f"synchronise a grid of one block only; use hidden <= {rows} or "
                               f"'persistent_block' on the simulator")
        if on_gpu:
            from numba import types as T_

            sig = (T_.float32[:, ::1], T_.float32[:, :, ::1], T_.float32[:, :, ::1], T_.int64)
            resident = kernel.compile(sig).max_cooperative_grid_blocks(threads)
            if blocks > resident:
                raise ValueError(f"hidden={H} needs {blocks} co-resident blocks for a grid sync, but only "
                                 f"{resident} fit on this GPU")
        kernel[blocks, threads](WT, z, states, act)


def time_per_step_s(hidden: int, batch: int, variant: str, *, steps: int = 64, repeats: int = 3,
                    seed: int = 0) -> float:
    """Best-of-``repeats`` wall time of one recurrent step of ``variant`` (seconds), data already on the device.

    The kernel is launched once untimed (compilation), then ``repeats`` times over ``steps`` steps with the
    device synchronised around each; the input projection and the copies are not timed. Meaningful on a GPU
    only: on the simulator it measures Python threads (the chapter prints it only on a GPU).
    """
    import time

    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not an RNN variant; expected one of {VARIANTS}")
    for name, v in (("hidden", hidden), ("batch", batch), ("steps", steps), ("repeats", repeats)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((hidden, hidden)) / math.sqrt(hidden)
    WT = np.ascontiguousarray(W.T, np.float32)
    z = rng.standard_normal((steps, batch, hidden)).astype(np.float32)
    states = np.zeros((steps + 1, batch, hidden), np.float32)
    on_gpu = scaledl.device.on_gpu()
    if on_gpu:
        WT, z, states = cuda.to_device(WT), cuda.to_device(z), cuda.to_device(states)
    _launch(variant, WT, z, states, 0, on_gpu)  # compile
    best = math.inf
    for _ in range(repeats):
        cuda.synchronize()
        t0 = time.perf_counter()
        _launch(variant, WT, z, states, 0, on_gpu)
        cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best / steps
