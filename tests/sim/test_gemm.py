"""GEMM kernels against a float64 NumPy reference at odd sizes, and their traffic model against counted runs."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scaledl.kernels import count_gemm_traffic, gemm, gemm_traffic
from scaledl.kernels.gemm import VARIANTS, gemm_reference

pytestmark = pytest.mark.sim

EPS32 = np.finfo(np.float32).eps


def _bound(A, B):
    # float32 accumulation of K products: |error| <= ~K eps |A||B| (plus each product's own rounding)
    K = A.shape[1]
    return (K + 2) * EPS32 * (np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64)))


def _check(variant, M, K, N, seed=0, **tiling):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    out = np.full((M, N), np.nan, np.float32)  # poisoned: an element the kernel skips stays NaN
    C = gemm(A, B, variant=variant, out=out, **tiling)
    assert C is out
    err = np.abs(C - gemm_reference(A, B))
    assert np.all(err <= _bound(A, B)), (f"max error {np.nanmax(err)} at "
                                         f"{np.unravel_index(np.nanargmax(err), err.shape)}")


# sizes that are not multiples of any tile (8, 16) and degenerate ones
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("M,K,N", [(19, 13, 11), (1, 1, 1), (3, 17, 2), (9, 0, 5)])
def test_variant_matches_reference(variant, M, K, N):
    _check(variant, M, K, N)


def test_regblock_rectangular_thread_tile_and_k_tail():
    # block_k=3 leaves a ragged k-step; thread_m != thread_n catches swapped strides
    _check("regblock", 21, 10, 23, block_m=8, block_n=16, block_k=3, thread_m=2, thread_n=4)


def test_tiled_other_tile():
    _check("tiled", 10, 7, 9, tile=4)


def test_naive_larger_odd():
    _check("naive", 37, 29, 41, seed=1)


@pytest.mark.parametrize("variant,tiling", [("naive", {}), ("tiled", {"tile": 4}), ("tiled", {}),
                                            ("regblock", {}),
                                            ("regblock", dict(block_m=8, block_n=4, block_k=5, thread_m=4,
                                                              thread_n=2))])
def test_counted_traffic_equals_model(variant, tiling):
    counted = count_gemm_traffic(13, 11, 9, variant, **tiling)
    assert counted == gemm_traffic(13, 11, 9, variant, **tiling)


@settings(max_examples=8, deadline=None)
@given(M=st.integers(1, 12), N=st.integers(1, 12), K=st.integers(0, 12))
def test_counted_regblock_traffic_any_shape(M, N, K):
    kw = dict(block_m=4, block_n=8, block_k=3, thread_m=2, thread_n=2)
    assert count_gemm_traffic(M, N, K, "regblock", **kw) == gemm_traffic(M, N, K, "regblock", **kw)


# ------------------------------------------------------------------------- the ladder v4 to v8 (gemm_ladder)
LADDER = ("fixed_loads", "index32", "vec4", "unroll_k", "prefetch")


@pytest.mark.parametrize("variant", LADDER)
@pytest.mark.parametrize("tiling", [
    dict(block_m=16, block_n=8, block_k=4, thread_m=4, thread_n=2),  # 16 threads, 2 float4s of A each
    dict(block_m=8, block_n=16, block_k=8, thread_m=2, thread_n=4),  # rectangular the other way, 2 k-steps
])
def test_ladder_other_tilings_at_odd_sizes(variant, tiling):
    # K = 13: a ragged last k-step, and rows that are not 16-byte aligned (v6 to v8 fall back to scalar loads)
    _check(variant, 21, 13, 19, seed=2, **tiling)


@pytest.mark.parametrize("variant", LADDER)
def test_ladder_aligned_rows(variant):
    # K and N multiples of 4: every row starts 16-byte aligned, the float4 path on a GPU
    _check(variant, 18, 24, 20, seed=3)


@pytest.mark.parametrize("variant", LADDER)
@pytest.mark.parametrize("tiling", [{}, dict(block_m=16, block_n=8, block_k=4, thread_m=4, thread_n=2)])
def test_ladder_counted_traffic_equals_model(variant, tiling):
    assert count_gemm_traffic(13, 11, 9, variant, **tiling) == gemm_traffic(13, 11, 9, variant, **tiling)


def test_vec4_tilings_are_checked():
    with pytest.raises(ValueError, match="block_k=3 and block_n=8 must be multiples of 4"):
        gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), variant="vec4", block_m=8, block_n=8,
             block_k=3, thread_m=2, thread_n=2)
    with pytest.raises(ValueError, match="thread_m=1 and thread_n=2 must be even"):
        gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), variant="prefetch", block_m=8, block_n=8,
             block_k=4, thread_m=1, thread_n=2)


BESIDE_A_GPU = r'''
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))  # no driver here
from scaledl.kernels.gemm import DEFAULT_TILING, LADDER
from scaledl.kernels.gemm_traffic import count_gemm_traffic, gemm_traffic
assert d.backend() == "cuda"
for v in LADDER:
    t = DEFAULT_TILING["simulator"][v].__dict__
    assert count_gemm_traffic(32, 32, 32, v, **t) == gemm_traffic(32, 32, 32, v, **t), v
print("COUNTED", len(LADDER))
'''


def test_ladder_counts_beside_a_gpu(ptx_script, python):
    """Chapter 04 counts v4 to v8 on the simulator also where the backend is "cuda" (a GPU run of the chapter):
    count_gemm_traffic runs the kernels' Python bodies (load4_guarded, uint32 indices) in the simulator's kernel
    class beside the real numba.cuda. Here the backend is forced to "cuda" in a fresh process, without a GPU."""
    r = python(ptx_script + BESIDE_A_GPU)
    assert r.returncode == 0 and "COUNTED 5" in r.stdout, r.stdout + r.stderr[-3000:]
