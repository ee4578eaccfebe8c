"""The 2:4 GEMM's traffic model (scaledl.kernels.nm_traffic) equals what its kernels issue, counted on the simulator.

Each variant runs with counting arrays at odd sizes (not multiples of a tile, K not a multiple of 4 or of v3's
64-column tile), its product checked against the reference first; the counts of value, word and B loads and of
stores must equal the closed form. A kernel that loaded a tile twice, or read B's rows outside its tile, fails.
"""

import pytest

from scaledl.kernels.nm_traffic import count_nm_gemm_traffic, nm_gemm_traffic

pytestmark = pytest.mark.sim


@pytest.mark.parametrize("variant,tile", [("naive", None), ("tiled", 8), ("tiled", 4), ("decoded", 8),
                                          ("decoded", 4)])
@pytest.mark.parametrize("M,N,K", [(13, 11, 37), (9, 17, 137), (5, 3, 1)])
def test_counted_equals_the_model(variant, tile, M, N, K):
    kw = {} if tile is None else {"tile": tile}
    assert count_nm_gemm_traffic(M, N, K, variant, **kw) == nm_gemm_traffic(M, N, K, variant, **kw)


def test_too_large_to_count():
    with pytest.raises(ValueError, match="too large to count on the simulator"):
        count_nm_gemm_traffic(200, 200, 200, "tiled")
