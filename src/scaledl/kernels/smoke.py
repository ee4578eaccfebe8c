"""The smallest useful kernel, launched by ``scaledl doctor`` to prove the active backend works.

Kernels name ``cuda`` as a module global (``from numba import cuda``), never through a closure or a local
variable: the simulator swaps the module's globals for its own fake ``cuda`` while a kernel runs.
"""

import numpy as np

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda


@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:  # the grid has more threads than elements: guard the tail
        out[i] = a * x[i] + y[i]


def smoke_test(n: int = 37) -> tuple[bool, str]:
    """Launch :func:`axpy` over ``n`` elements (not a multiple of the block) and compare with NumPy."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)  # poisoned: an element the kernel skips stays NaN
    threads = 32
    axpy[(n + threads - 1) // threads, threads](np.float32(2.0), x, y, out)
    ok = bool(np.allclose(out, 2 * x + y, rtol=1e-6, atol=1e-6))
    return ok, f"a {n}-element axpy kernel {'matched' if ok else 'did not match'} NumPy"


@cuda.jit
def axpy_unguarded(a, x, y, out):
    """The same kernel without its bounds guard: the classic bug. Chapter 00 shows what each backend does."""
    i = cuda.grid(1)
    out[i] = a * x[i] + y[i]


def simulator_rate(n: int = 2048, threads: int = 128) -> float:
    """Threads per second the active backend sustains on :func:`axpy` (a rough, machine-dependent figure)."""
    import time

    x = np.ones(n, dtype=np.float32)
    out = np.empty_like(x)
    blocks = (n + threads - 1) // threads
    axpy[blocks, threads](np.float32(1.0), x, x, out)  # compile / warm up
    start = time.perf_counter()
    axpy[blocks, threads](np.float32(1.0), x, x, out)
    return blocks * threads / (time.perf_counter() - start)
