"""Global and shared-memory traffic of the 2:4 GEMM kernels, counted as :mod:`~scaledl.kernels.gemm_traffic` counts
the dense GEMM: a closed-form model from the tiling, and a counted run on the simulator.

What is counted is the global loads the kernel issues, one per element a thread reads: kept values (float32),
metadata words (uint16, the 2-bit positions) and rows of B (float32), and the stores of C. For
``C (M x N) = A (M x K) @ B (K x N)`` with A compressed to ``kept = 2 ceil(K / 4)`` values a row, ``W =
ceil(K / 16)`` words a row, and a ``T x T`` block per ``T x T`` outputs (``gx = ceil(N / T)`` blocks along a row
of C, ``gy = ceil(M / T)`` along a column):

* v1 naive: each thread walks its row's kept values, reading each one's word (``M N kept`` word loads) and, for
  a position inside A, the value and B's row at it: ``M N kept_in`` of each, where ``kept_in = 2 (K // 4) +
  min(2, K % 4)`` (A's entries non-zero, as in random data: ``compress_nm`` then keeps the real columns of a
  padded last group).
* v2 tiled and v3 decoded: a block stages *every* row of B in its tile, ``K N gy`` loads as the dense twin (the
  book's tiled GEMM on the decompressed matrix) makes: the block's rows keep different positions, so between
  them they need all of B's rows, and the gather happens in shared memory. Only A's side shrinks: ``M kept gx``
  values (half the twin's ``M K gx``), and words: one per row and step in v2 (``M W gx``), one per value in v3
  (``M kept gx``: the thread that loads a value loads its word; a warp's eight lanes that read one word are
  served by one access, so this counts requests, not bytes that reach the cache).

FLOPs are the dense product's ``2 M N K``, as ``scaledl bench`` counts them, so a 2:4 kernel's rate compares with
its dense twin's directly; it does ``M N kept`` multiply-adds of them.

>>> t = nm_gemm_traffic(64, 64, 64, "tiled", tile=16)
>>> t.loads_values, t.loads_metadata, t.loads_B, t.stores
(8192, 1024, 16384, 4096)
>>> round(t.bytes / dense_twin_traffic(64, 64, 64, tile=16).bytes, 3)
0.792
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import scaledl.device
from scaledl.kernels.gemm_traffic import FLOAT32_BYTES, CountingArray, _check_dims, _simulated, gemm_traffic

__all__ = ["NmGemmTraffic", "nm_gemm_traffic", "count_nm_gemm_traffic", "dense_twin_traffic", "NmSharedTraffic",
           "nm_shared_traffic", "WORD_BYTES"]

WORD_BYTES = 2  # a uint16 metadata word: four groups' positions (scaledl.sparsity.nm)


@dataclass(frozen=True)
class NmGemmTraffic:
    """Global loads (by array) and stores of one 2:4 GEMM launch, in elements, with bytes and FLOPs derived."""

    M: int
    N: int
    K: int
    variant: str
    loads_values: int  # float32 kept values
    loads_metadata: int  # uint16 words
    loads_B: int  # float32 elements of B
    stores: int  # float32 elements of C

    @property
    def value_bytes(self) -> int:
        return self.loads_values * FLOAT32_BYTES

    @property
    def metadata_bytes(self) -> int:
        """The index bytes: what the positions cost on top of the values."""
        return self.loads_metadata * WORD_BYTES

    @property
    def B_bytes(self) -> int:
        return self.loads_B * FLOAT32_BYTES

    @property
    def load_bytes(self) -> int:
        return self.value_bytes + self.metadata_bytes + self.B_bytes

    @property
    def bytes(self) -> int:
        return self.load_bytes + self.stores * FLOAT32_BYTES

    @property
    def flops(self) -> int:
        """The dense product's FLOPs, ``2 M N K``: what a rate of the bench counts."""
        return 2 * self.M * self.N * self.K

    @property
    def multiply_adds(self) -> int:
        """What the kernel computes: one multiply-add per kept value per output, ``M N kept``."""
        return self.M * self.N * _kept(self.K)


def _kept(K: int) -> int:
    return -(-K // 4) * 2


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _tile(variant: str, tile):
    from scaledl.kernels import nm_gemm

    if variant not in nm_gemm.VARIANTS:
        raise ValueError(f"variant={variant!r} is not a 2:4 GEMM variant; expected one of {nm_gemm.VARIANTS}")
    if variant == "naive":
        if tile is not None:
            raise TypeError("tile: v1 naive has no tile")
        return None
    t = nm_gemm.TILE[scaledl.device.backend()] if tile is None else tile
    if not isinstance(t, (int, np.integer)) or isinstance(t, bool) or t < 1:
        raise ValueError(f"tile must be a positive int, got {t!r}")
    return int(t)


def nm_gemm_traffic(M: int, N: int, K: int, variant: str, *, tile: int | None = None) -> NmGemmTraffic:
    """Global loads and stores of ``variant`` (:data:`scaledl.kernels.nm_gemm.VARIANTS`) for an ``M x K @ K x N``
    product with A 2:4-compressed, from the tiling (see the module docstring); ``tile``: v2's and v3's ``T``
    (default: what :func:`~scaledl.kernels.nm_gemm.nm_gemm` uses on the active backend).

    Raises:
        ValueError: a negative or non-int size, an unknown variant or a bad tile. TypeError: a tile for v1.
    """
    _check_dims(M, N, K)
    T = _tile(variant, tile)
    M, N, K = int(M), int(N), int(K)
    kept, words = _kept(K), _cdiv(K, 16)
    if variant == "naive":
        kept_in = 2 * (K // 4) + min(2, K % 4)
        return NmGemmTraffic(M, N, K, variant, M * N * kept_in, M * N * kept, M * N * kept_in, M * N)
    gx, gy = _cdiv(N, T), _cdiv(M, T)
    per_row_words = words if variant == "tiled" else kept
    return NmGemmTraffic(M, N, K, variant, M * kept * gx, M * per_row_words * gx, K * N * gy, M * N)


def dense_twin_traffic(M: int, N: int, K: int, *, tile: int | None = None):
    """The dense twin's traffic: the book's tiled GEMM (:func:`~scaledl.kernels.gemm_traffic.gemm_traffic`, ``tiled``)
    with the same tile, on the decompressed matrix."""
    return gemm_traffic(M, N, K, "tiled", tile=_tile("tiled", tile))


def count_nm_gemm_traffic(M: int, N: int, K: int, variant: str, *, tile: int | None = None,
                          seed: int = 0) -> NmGemmTraffic:
    """Run ``variant`` on the simulator with counting arrays (random A pruned to 2:4, random B) and return the
    accesses it made. The product is checked against the reference first, so a count from a wrong kernel is
    never returned.

    Raises:
        ValueError: as :func:`nm_gemm_traffic`, or a problem too large to count (``M N K`` over 2e6).
        RuntimeError: the kernel's result is wrong.
    """
    from scaledl.kernels import nm_gemm
    from scaledl.kernels.gemm_traffic import check_countable
    from scaledl.sparsity import compress_nm

    _check_dims(M, N, K)
    T = _tile(variant, tile)
    M, N, K = int(M), int(N), int(K)
    check_countable(M, N, K, "32 x 64 x 32")
    rng = np.random.default_rng(seed)
    values, meta = compress_nm(rng.standard_normal((M, K)).astype(np.float32), axis=1, pad=True)
    arrays = [CountingArray(np.ascontiguousarray(a)) for a in
              (values, meta, rng.standard_normal((K, N)).astype(np.float32))]
    C = CountingArray(np.full((M, N), np.nan, np.float32))  # poisoned: an unwritten element stays NaN
    if M and N:
        if variant == "naive":
            kernel, (bx, by) = nm_gemm.kernel_and_block("naive")
        else:
            kernel = (nm_gemm.tiled_kernel if variant == "tiled" else nm_gemm.decoded_kernel)(T)
            bx = by = T
        _simulated(kernel)[(_cdiv(N, bx), _cdiv(M, by)), (bx, by)](*arrays, C)
    ref = nm_gemm.nm_gemm_reference(values, meta, arrays[2].array)
    bound = (values.shape[1] + 2) * np.finfo(np.float32).eps * nm_gemm.nm_gemm_reference(
        np.abs(values), meta, np.abs(arrays[2].array)) + 1e-30
    if not np.all(np.abs(C.array - ref) <= bound):
        raise RuntimeError(f"the 2:4 {variant} kernel computed a wrong product at {M}x{K} @ {K}x{N}")
    return NmGemmTraffic(M, N, K, variant, arrays[0].reads, arrays[1].reads, arrays[2].reads, C.writes)


@dataclass(frozen=True)
class NmSharedTraffic:
    """Shared-memory bytes a thread reads and writes per FLOP it computes (one of its multiply-adds is two)."""

    variant: str
    load_bytes_per_flop: float
    store_bytes_per_flop: float

    @property
    def bytes_per_flop(self) -> float:
        return self.load_bytes_per_flop + self.store_bytes_per_flop


def nm_shared_traffic(variant: str, *, tile: int | None = None) -> NmSharedTraffic:
    """Shared-memory traffic per FLOP the kernel computes (its own multiply-adds, not the dense product's), from
    its tiling, counted per thread as :func:`~scaledl.kernels.gemm_traffic.shared_traffic` counts the dense GEMM's
    (a read every lane of a warp makes of one word, a broadcast, counts for each lane):

    * v2: per multiply-add a value and a row of B (4 + 4 bytes) and an eighth of a word (the row's word, once per 8);
      per step a thread stores its share of 16 rows of B, 8 values and a word per row of the block.
    * v3: per multiply-add a value, its decoded position and a row of B (4 + 4 + 4 bytes); per tile a thread stores
      its share of 64 rows of B, 32 values and 32 positions per row of the block.

    >>> round(nm_shared_traffic("decoded", tile=16).bytes_per_flop, 3)
    6.5
    """
    from scaledl.kernels.nm_gemm import K_STEP, PER_WORD, TILE_WORDS

    T = _tile(variant, tile)
    b = FLOAT32_BYTES
    if variant == "naive":
        return NmSharedTraffic(variant, 0.0, 0.0)
    threads = T * T
    if variant == "tiled":
        per_fma = b + b + WORD_BYTES / PER_WORD
        stored = K_STEP * T * b + T * PER_WORD * b + T * WORD_BYTES  # bytes a block stores per step
        fmas = PER_WORD  # a thread's multiply-adds per step
    else:
        per_fma = 3 * b
        kept = TILE_WORDS * PER_WORD
        stored = TILE_WORDS * K_STEP * T * b + 2 * T * kept * b
        fmas = kept
    return NmSharedTraffic(variant, per_fma / 2, stored / threads / (2 * fmas))
