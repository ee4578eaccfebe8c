"""Global-memory traffic of the GEMM kernels: a closed-form model from the tiling, and a counted run.

What is counted is *global-memory accesses issued by the kernel* (element loads of A and B, element stores
of C), the requests that the L1/L2 caches and DRAM must serve. A real GPU's caches absorb part of them, so
DRAM bytes can be lower; the count is what the kernel's structure guarantees, whatever the cache does.

The model, for ``C (M x N) = A (M x K) @ B (K x N)`` with every load guarded (out-of-range elements are
replaced by zero without a load):

* naive: each of the ``M N`` threads reads a row of A and a column of B: ``M N K`` loads of each.
* tiled (tile ``T``): the A row-panel of a block is read once per block column, ``ceil(N / T)`` times;
  the B column-panel once per block row: ``A: M K ceil(N/T)``, ``B: K N ceil(M/T)``.
* regblock and v4 to v8 (``block_m x block_n`` per block): ``A: M K ceil(N/block_n)``, ``B: K N
  ceil(M/block_m)``. v6 to v8 load four neighbours with one 128-bit instruction; the count is of elements, the
  same.

All of them store C once: ``M N`` stores. FLOPs are ``2 M N K`` (one multiply and one add per term).

:func:`shared_traffic` gives the shared-memory side: bytes each thread reads from and writes to shared memory
per FLOP, from the tiling (a naive kernel uses none).

>>> t = gemm_traffic(64, 64, 64, "tiled", tile=16)
>>> t.loads, t.stores, round(t.arithmetic_intensity_flop_per_byte, 2)
(32768, 4096, 3.56)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from scaledl.kernels.gemm import VARIANTS, kernel_for, launch_config, resolve_tiling
from scaledl.kernels.reference import gemm_reference, gemm_tolerance

FLOAT32_BYTES = 4


@dataclass(frozen=True)
class GemmTraffic:
    """Global loads and stores of one GEMM launch, in elements, with bytes, FLOPs and intensity derived."""

    M: int
    N: int
    K: int
    variant: str
    loads_A: int
    loads_B: int
    stores: int
    element_bytes: int = FLOAT32_BYTES

    @property
    def loads(self) -> int:
        return self.loads_A + self.loads_B

    @property
    def load_bytes(self) -> int:
        return self.loads * self.element_bytes

    @property
    def store_bytes(self) -> int:
        return self.stores * self.element_bytes

    @property
    def bytes(self) -> int:
        return self.load_bytes + self.store_bytes

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    @property
    def arithmetic_intensity_flop_per_byte(self) -> float:
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def compulsory_bytes(self) -> int:
        """Each input read once and C written once: what no tiling can go below."""
        return (self.M * self.K + self.K * self.N + self.M * self.N) * self.element_bytes


def _cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def _check_dims(M, N, K):
    for name, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {v!r}")


def gemm_traffic(M: int, N: int, K: int, variant: str, **tiling) -> GemmTraffic:
    """Global loads/stores of ``variant`` for an ``M x K @ K x N`` product, from its tiling.

    Args:
        M, N, K: the problem (C is M x N, the sum runs over K).
        variant: one of :data:`scaledl.kernels.gemm.VARIANTS`.
        **tiling: ``config=`` a config object (``DEFAULT_TILING["cuda"]["regblock"]``), or ``tile=`` (tiled) or
            ``block_m=, block_n=, block_k=, thread_m=, thread_n=`` (the others), missing ones defaulting to what
            :func:`scaledl.kernels.gemm.gemm` uses on the active backend (:func:`~scaledl.kernels.gemm.resolve_tiling`).

    Raises:
        ValueError: a negative or non-int size, or an unknown variant.
        TypeError: a tiling keyword the variant does not take.
    """
    _check_dims(M, N, K)
    config = resolve_tiling(variant, tiling)
    M, N, K = int(M), int(N), int(K)
    if variant == "naive":
        reuse_m, reuse_n = 1, 1
    elif variant == "tiled":
        reuse_m = reuse_n = config.tile
    else:
        reuse_m, reuse_n = config.block_m, config.block_n
    loads_A = M * K * _cdiv(N, reuse_n)  # A's panel is re-read by every block column
    loads_B = K * N * _cdiv(M, reuse_m)  # B's panel by every block row
    return GemmTraffic(M, N, K, variant, loads_A, loads_B, M * N)


class CountingArray:
    """A 2-D array stand-in that counts element reads and writes made by a simulated kernel.

    The simulator passes any argument that is not a NumPy array through unchanged, so a kernel indexing
    this object goes through :meth:`__getitem__` / :meth:`__setitem__`. Indices are checked strictly (no
    negative wrap-around), so a missing bounds guard raises IndexError instead of being miscounted.
    """

    def __init__(self, array: np.ndarray):
        self.array = array
        self.shape = array.shape
        self.ndim = array.ndim
        self.size = array.size
        self.dtype = array.dtype
        self.reads = 0
        self.writes = 0
        self._lock = threading.Lock()  # simulated CUDA threads are Python threads

    def _check(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        if len(idx) != self.ndim or any(not (0 <= int(i) < n) for i, n in zip(idx, self.shape)):
            raise IndexError(f"index {tuple(int(i) for i in idx)} out of range for shape {self.shape}")
        return idx

    def __getitem__(self, idx):
        idx = self._check(idx)
        with self._lock:
            self.reads += 1
        return self.array[idx]

    def __setitem__(self, idx, value):
        idx = self._check(idx)
        with self._lock:
            self.writes += 1
        self.array[idx] = value


def _simulated(kernel):
    """The kernel itself on the simulator; on a GPU, the simulator's version of its Python source."""
    import scaledl.device

    if scaledl.device.backend() == "simulator":
        return kernel
    try:  # the simulator's kernel class can run a kernel's Python function even when the GPU is active
        from numba.cuda.simulator.kernel import FakeCUDAKernel

        return FakeCUDAKernel(kernel.py_func, device=False, fastmath=False)
    except Exception as err:  # pragma: no cover - depends on the installed numba-cuda
        raise RuntimeError(f"counting accesses needs Numba's CUDA simulator, which could not be used here "
                           f"({type(err).__name__}: {err}); run with SCALEDL_BACKEND=simulator") from err


MAX_COUNTED_THREADS = 2_000_000  # one Python call per access: keep a counted run to seconds


def check_countable(M: int, N: int, K: int, example: str = "32 x 32 x 32") -> None:
    """Refuse a counted run too large for the simulator (``M N K`` over :data:`MAX_COUNTED_THREADS`)."""
    if M * N * max(K, 1) > MAX_COUNTED_THREADS:
        raise ValueError(f"M*N*K = {M * N * K} is too large to count on the simulator; keep it under "
                         f"{MAX_COUNTED_THREADS} (e.g. {example})")


def count_gemm_traffic(M: int, N: int, K: int, variant: str, *, seed: int = 0, **tiling) -> GemmTraffic:
    """Run ``variant`` on the simulator with counting arrays and return the accesses it actually made.

    The product is also checked against NumPy, so a count from a wrong kernel is never returned.

    Raises:
        ValueError: as :func:`gemm_traffic`, or a problem too large to count (``M N K`` over 2e6).
        RuntimeError: the kernel's result is wrong.
    """
    _check_dims(M, N, K)
    config = resolve_tiling(variant, tiling)
    M, N, K = int(M), int(N), int(K)
    check_countable(M, N, K)
    rng = np.random.default_rng(seed)
    A = CountingArray(rng.standard_normal((M, K)).astype(np.float32))
    B = CountingArray(rng.standard_normal((K, N)).astype(np.float32))
    C = CountingArray(np.full((M, N), np.nan, np.float32))  # poisoned: an unwritten element stays NaN
    if M and N:
        grid, block = launch_config(M, N, variant, config)
        _simulated(kernel_for(variant, config))[grid, block](A, B, C)
    expected, bound = gemm_reference(A.array, B.array), gemm_tolerance(A.array, B.array)
    if not np.all(np.abs(C.array - expected) <= bound):
        raise RuntimeError(f"the {variant} kernel computed a wrong product at {M}x{K} @ {K}x{N}")
    return GemmTraffic(M, N, K, variant, A.reads, B.reads, C.writes)


__all__ = ["GemmTraffic", "gemm_traffic", "count_gemm_traffic", "fma_share_bound", "SharedTraffic", "shared_traffic",
           "CountingArray", "VARIANTS"]

VECTOR_VARIANTS = ("vec4", "unroll_k", "prefetch")  # v6 to v8: 128-bit global and shared accesses


def fma_share_bound(variant: str, **tiling) -> float:
    """Upper bound on the fraction of a thread's issued instructions that are FMAs, from its inner loops.

    Counts, per thread and per ``k`` tile: FMAs, shared-memory loads, global loads and shared stores (the
    staging copy). Address arithmetic, loop control and barriers are left out, so the true share is lower.
    This is the ceiling that instruction mix puts on "percent of FMA peak" even when memory keeps up.

    >>> round(fma_share_bound("naive"), 3)   # 1 FMA per 2 global loads
    0.333
    """
    config = resolve_tiling(variant, tiling)
    if variant == "naive":
        fmas, mem = 1, 2
    elif variant == "tiled":
        T = config.tile
        fmas, mem = T, 2 * T + 2 + 2  # T FMAs read 2T shared values; 2 global loads + 2 shared stores
    else:
        c = config
        fmas = c.block_k * c.thread_m * c.thread_n
        staged_a = c.block_m * c.block_k / c.threads_per_block
        staged_b = c.block_k * c.block_n / c.threads_per_block
        if variant in VECTOR_VARIANTS:  # a shared read or global load moves 4 floats; A's stores stay scalar
            mem = c.block_k * (c.thread_m + c.thread_n) / 4 + (staged_a + staged_b) / 4 + staged_a + staged_b / 4
        else:
            mem = c.block_k * (c.thread_m + c.thread_n) + 2 * (staged_a + staged_b)
    return fmas / (fmas + mem)


@dataclass(frozen=True)
class SharedTraffic:
    """Shared-memory bytes a thread reads and writes per FLOP it computes (one FMA is two FLOPs)."""

    variant: str
    load_bytes_per_flop: float
    store_bytes_per_flop: float

    @property
    def bytes_per_flop(self) -> float:
        return self.load_bytes_per_flop + self.store_bytes_per_flop


def shared_traffic(variant: str, **tiling) -> SharedTraffic:
    """Shared-memory traffic per FLOP of ``variant``, from its tiling (the same for any problem size, edges aside).

    * tiled (tile T): each FMA reads one element of each tile; each thread stores one element of each per T
      FMAs.
    * regblock and v4 to v8: per k step a thread reads ``thread_m + thread_n`` elements for ``thread_m thread_n``
      FMAs, and the block stores ``(block_m + block_n) block_k`` elements per ``block_m block_n block_k`` FMAs.

    Bytes are counted per thread: a warp whose lanes read one address (a broadcast) costs the hardware less,
    one whose lanes collide on a bank costs it more.

    >>> round(shared_traffic("regblock", block_m=128, block_n=128, block_k=8, thread_m=8, thread_n=8).bytes_per_flop, 3)
    0.531
    """
    config = resolve_tiling(variant, tiling)
    b = FLOAT32_BYTES
    if variant == "naive":
        return SharedTraffic(variant, 0.0, 0.0)
    if variant == "tiled":
        T = config.tile
        return SharedTraffic(variant, 2 * b / 2, 2 * b / (2 * T))
    c = config
    loads = (c.thread_m + c.thread_n) * b / (2 * c.thread_m * c.thread_n)
    stores = (c.block_m + c.block_n) * c.block_k * b / (2 * c.block_m * c.block_n * c.block_k)
    return SharedTraffic(variant, loads, stores)
