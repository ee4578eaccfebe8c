"""Every kernel variant at full sizes on a real GPU (skipped on the simulator by tests/gpu/conftest.py)."""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

EPS32 = float(np.finfo(np.float32).eps)


@pytest.mark.parametrize("variant", ["naive", "tiled", "regblock"])
@pytest.mark.parametrize("M,K,N", [(1000, 777, 1023), (4096, 1024, 2049), (129, 4097, 257)])
def test_gemm_full_size(variant, M, K, N):
    from numba import cuda

    from scaledl.kernels import gemm

    rng = np.random.default_rng(M + N)
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    out = cuda.to_device(np.full((M, N), np.nan, np.float32))  # poisoned
    C = gemm(cuda.to_device(A), cuda.to_device(B), variant=variant, out=out).copy_to_host()
    ref = A.astype(np.float64) @ B.astype(np.float64)
    bound = (K + 2) * EPS32 * (np.abs(A) @ np.abs(B)).astype(np.float64)  # float32 accumulation of K terms
    assert np.all(np.abs(C - ref) <= bound)
    host = gemm(A, B, variant=variant)  # NumPy in, NumPy out on a GPU too
    assert isinstance(host, np.ndarray) and np.all(np.abs(host - ref) <= bound)


@pytest.mark.parametrize("n", [2**24 + 3, 1_000_001])
def test_streams_and_sum(n):
    from scaledl.kernels import bandwidth as bw
    from scaledl.kernels.reduce import reduce_sum, sum_reference

    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    assert np.array_equal(bw.copy(np.full(n, np.nan, np.float32), a), a)
    assert np.array_equal(bw.scale(np.full(n, np.nan, np.float32), a, 2.0), 2 * a)  # x2 is exact
    want = bw.stream_reference("triad", a, b, s=3.0)
    got = bw.triad(np.full(n, np.nan, np.float32), a, b, 3.0)
    assert np.all(np.abs(got - want) <= EPS32 * (np.abs(want) + 3 * np.abs(b)))  # a GPU fuses it into one FMA
    for variant in ("shared", "warp"):
        s = float(reduce_sum(a, variant))
        assert abs(s - sum_reference(a)) <= 64 * EPS32 * float(np.abs(a).sum())  # tree depth ~ log2 n << 64


def test_fma_exact():
    from scaledl.kernels import bandwidth as bw

    out = bw.fma_throughput(100_003, 1000)
    assert np.array_equal(out, bw.fma_reference(100_003, 1000, 0.0, 1.0, 1.0))


@pytest.mark.parametrize("variant", ["direct", "winograd"])
def test_conv_full_size(variant):
    from scaledl.kernels.conv import conv2d, conv2d_reference

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 57, 63)).astype(np.float32)
    w = rng.standard_normal((32, 64, 3, 3)).astype(np.float32)
    y = conv2d(x, w, variant)
    mag = conv2d_reference(np.abs(x), np.abs(w))
    assert np.all(np.abs(y - conv2d_reference(x, w)) <= (9 * 64 + 16) * EPS32 * 4 * mag)
    from numba import cuda  # device arrays in, a device array out, nothing copied back implicitly

    dy = conv2d(cuda.to_device(x), cuda.to_device(w), variant)
    assert cuda.is_cuda_array(dy) and np.array_equal(dy.copy_to_host(), y)


def test_counting_runs_beside_the_gpu():
    # count_gemm_traffic uses the simulator's kernel class even while the GPU backend is active
    from scaledl.kernels import count_gemm_traffic, gemm_traffic

    assert count_gemm_traffic(13, 11, 9, "tiled", tile=4) == gemm_traffic(13, 11, 9, "tiled", tile=4)


def test_bench_quick_runs():
    import io

    pytest.importorskip("cupy")
    from scaledl.kernels.bench import main

    out = io.StringIO()
    assert main(["--quick"], out=out) == 0
    assert "gemm regblock" in out.getvalue()
