"""The GEMM traffic model's closed forms and its argument checking (no kernel launched)."""

import pytest
from hypothesis import given, strategies as st

from scaledl.kernels import gemm, gemm_traffic
from scaledl.kernels.gemm_traffic import fma_share_bound, shared_traffic
import numpy as np


def test_exact_table_64_cubed():
    # hand computed: naive 2*64^3 loads; tile 16 -> each input read 64/16 = 4 times
    assert gemm_traffic(64, 64, 64, "naive").loads == 2 * 64**3
    t = gemm_traffic(64, 64, 64, "tiled", tile=16)
    assert (t.loads_A, t.loads_B, t.stores) == (64 * 64 * 4, 64 * 64 * 4, 64 * 64)
    assert t.flops == 2 * 64**3
    assert t.bytes == 4 * (2 * 64 * 64 * 4 + 64 * 64)
    r = gemm_traffic(64, 64, 64, "regblock", block_m=32, block_n=16, block_k=8, thread_m=4, thread_n=4)
    assert (r.loads_A, r.loads_B) == (64 * 64 * 4, 64 * 64 * 2)


def test_ragged_edges_round_up():
    t = gemm_traffic(17, 33, 5, "tiled", tile=16)  # 2 block rows, 3 block columns
    assert (t.loads_A, t.loads_B) == (17 * 5 * 3, 5 * 33 * 2)


@given(M=st.integers(1, 300), N=st.integers(1, 300), K=st.integers(1, 300), tile=st.integers(1, 32))
def test_tiling_never_loads_more_than_naive_nor_less_than_compulsory(M, N, K, tile):
    naive = gemm_traffic(M, N, K, "naive")
    tiled = gemm_traffic(M, N, K, "tiled", tile=tile)
    assert tiled.bytes <= naive.bytes
    assert tiled.bytes >= tiled.compulsory_bytes
    assert tiled.arithmetic_intensity_flop_per_byte >= naive.arithmetic_intensity_flop_per_byte


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="variant='fast'"):
        gemm_traffic(4, 4, 4, "fast")
    with pytest.raises(ValueError, match="M must be a non-negative int, got -1"):
        gemm_traffic(-1, 4, 4, "naive")
    with pytest.raises(TypeError, match="takes no tiling"):
        gemm_traffic(4, 4, 4, "naive", tile=4)
    with pytest.raises(TypeError, match="tiling parameters"):
        gemm_traffic(4, 4, 4, "tiled", block_m=4)
    with pytest.raises(ValueError, match="multiples of"):
        gemm_traffic(4, 4, 4, "regblock", block_m=6, thread_m=4)


def test_gemm_argument_errors():
    A = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="inner dimensions differ: A is 3x4 but B is 5x2"):
        gemm(A, np.ones((5, 2), np.float32))
    with pytest.raises(TypeError, match="B must be float32, got dtype float64"):
        gemm(A, np.ones((4, 2)))
    with pytest.raises(ValueError, match="A must be a 2-D array"):
        gemm(np.ones(3, np.float32), np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"out must have shape \(3, 2\)"):
        gemm(A, np.ones((4, 2), np.float32), out=np.empty((2, 3), np.float32))


def test_ladder_moves_what_v3_moves():
    # v4 to v8 keep v3's tiling: the same global loads (elements, whatever their width) and shared traffic
    kw = dict(block_m=32, block_n=16, block_k=8, thread_m=4, thread_n=4)
    v3 = gemm_traffic(64, 48, 40, "regblock", **kw)
    for variant in ("fixed_loads", "index32", "vec4", "unroll_k", "prefetch"):
        t = gemm_traffic(64, 48, 40, variant, **kw)
        assert (t.loads_A, t.loads_B, t.stores) == (v3.loads_A, v3.loads_B, v3.stores)
        assert shared_traffic(variant, **kw).bytes_per_flop == shared_traffic("regblock", **kw).bytes_per_flop


def test_shared_traffic_per_flop():
    # v3 at the GPU shape: 16 floats read per 64 FMAs (0.5 B/FLOP); 2048 floats stored per 128x128x8 tile
    t = shared_traffic("regblock", block_m=128, block_n=128, block_k=8, thread_m=8, thread_n=8)
    assert (t.load_bytes_per_flop, t.store_bytes_per_flop) == (0.5, 2048 * 4 / (2 * 128 * 128 * 8))
    tiled = shared_traffic("tiled", tile=16)  # two floats read per FMA, two stored per 16 FMAs
    assert (tiled.load_bytes_per_flop, tiled.store_bytes_per_flop, tiled.bytes_per_flop) == (4.0, 0.25, 4.25)
    assert shared_traffic("naive").bytes_per_flop == 0


def test_fma_share_bound_of_the_128_bit_variants():
    kw = dict(block_m=128, block_n=128, block_k=8, thread_m=8, thread_n=8)
    # 512 FMAs per tile; 32 LDS.128, a float4 each of A and B loaded, 4 + 1 stores
    assert fma_share_bound("vec4", **kw) == pytest.approx(512 / (512 + 32 + 2 + 5))
    assert fma_share_bound("fixed_loads", **kw) == fma_share_bound("regblock", **kw)


def test_a_tiling_can_be_passed_as_its_config_object():
    """config= takes the launch numbers from a config object (what the chapters pass instead of spelling out
    128, 128, 8, 8, 8), checked as the variant's own class; mixing it with keywords is refused."""
    from scaledl.kernels.gemm import DEFAULT_TILING, RegBlockConfig, Vec4Config, resolve_tiling

    gpu = DEFAULT_TILING["cuda"]["regblock"]
    assert gemm_traffic(4097, 4095, 1001, "regblock", config=gpu) == \
        gemm_traffic(4097, 4095, 1001, "regblock", **gpu.__dict__)
    assert fma_share_bound("vec4", config=gpu) == fma_share_bound("vec4", **gpu.__dict__)
    assert shared_traffic("regblock", config=gpu) == shared_traffic("regblock", **gpu.__dict__)
    assert resolve_tiling("prefetch", {"config": gpu}) == Vec4Config(128, 128, 8, 8, 8)
    with pytest.raises(TypeError, match="config or tiling keywords, not both|not both"):
        resolve_tiling("regblock", {"config": gpu, "block_m": 64})
    with pytest.raises(TypeError, match="config for variant 'tiled' must be a TiledConfig"):
        resolve_tiling("tiled", {"config": gpu})
    with pytest.raises(TypeError, match="naive"):
        resolve_tiling("naive", {"config": gpu})
    with pytest.raises(ValueError, match="must be even"):
        resolve_tiling("prefetch", {"config": RegBlockConfig(16, 16, 8, 1, 1)})
