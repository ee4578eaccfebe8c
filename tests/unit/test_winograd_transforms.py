"""Winograd F(m, r) matrices: exact against Lavin and Gray's F(2, 3), and correct for any m by construction."""

from fractions import Fraction

import numpy as np
import pytest

from scaledl.kernels.winograd import (LAVIN_F2x3, conv2d_direct_in, conv2d_winograd_in, multiplies_per_tile,
                                      winograd_matrices)


def test_f2x3_is_lavin_up_to_the_sign_of_the_infinity_term():
    BT, G, AT = (np.array(M, float) for M in winograd_matrices(2, 3))
    assert np.array_equal(G, LAVIN_F2x3["G"])
    flip = np.diag([1, 1, 1, -1.0])  # the row of the point at infinity may carry either sign
    assert np.array_equal(flip @ BT, LAVIN_F2x3["BT"])
    assert np.array_equal(AT @ flip, LAVIN_F2x3["AT"])


@pytest.mark.parametrize("scaling", ["integer", "fractional", "none"])
@pytest.mark.parametrize("m,r", [(1, 3), (2, 3), (3, 2), (4, 3), (6, 3), (2, 5)])
def test_1d_identity_exact_in_rationals(m, r, scaling):
    # y = A^T[(G g) * (B^T d)] must equal the direct correlation for every g, d: check it on unit vectors
    # (the bilinear form is then exact), with Fractions so no rounding hides an error
    BT, G, AT = winograd_matrices(m, r, scaling=scaling)
    n = m + r - 1
    for k in range(r):
        for j in range(n):
            g = np.array([1 if i == k else 0 for i in range(r)], object)
            d = np.array([1 if i == j else 0 for i in range(n)], object)
            y = AT.dot(G.dot(g) * BT.dot(d))
            direct = [1 if j == i + k else 0 for i in range(m)]
            assert list(y) == direct


def test_f6x3_scalings_largest_entries():
    # points 0, +-1, +-2, +-1/2: integer rows of B^T reach 160; monic ("fractional") rows stop at 21/4
    BT_int = winograd_matrices(6, 3, scaling="integer")[0]
    BT_frac = winograd_matrices(6, 3, scaling="fractional")[0]
    assert max(abs(v) for v in BT_int.ravel()) == 160
    assert max(abs(v) for v in BT_frac.ravel()) == Fraction(21, 4)
    # the point-0 row is x^6 - 21/4 x^4 + 21/4 x^2 - 1 (up to sign), the textbook F(6, 3) row
    assert [abs(v) for v in BT_frac[0]] == [1, 0, Fraction(21, 4), 0, Fraction(21, 4), 0, 1, 0]
    # F(4, 3) with 0, +-1, +-2 needs no rescaling beyond integers: both scalings coincide
    for a, b in zip(winograd_matrices(4, 3, scaling="integer"), winograd_matrices(4, 3, scaling="fractional")):
        assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="scaling must be one of .* got 'monic'"):
        winograd_matrices(6, 3, scaling="monic")


def test_multiply_counts():
    assert (multiplies_per_tile(2, 3), multiplies_per_tile(2, 3, direct=True)) == (16, 36)
    assert (multiplies_per_tile(4, 3), multiplies_per_tile(4, 3, direct=True)) == (36, 144)
    with pytest.raises(ValueError, match="m and r must be >= 1, got m=0"):
        multiplies_per_tile(0, 3)
    with pytest.raises(ValueError, match="needs 3 distinct finite points"):
        winograd_matrices(2, 3, points=[0, 1, 1])


@pytest.mark.parametrize("m", [2, 4])
def test_conv_in_float64_matches_direct(m):
    rng = np.random.default_rng(m)
    x, w = rng.standard_normal((3, 10, 7)), rng.standard_normal((2, 3, 3, 3))
    assert np.allclose(conv2d_winograd_in(x, w, m, np.float64), conv2d_direct_in(x, w, np.float64),
                       rtol=0, atol=1e-12)


def test_error_grows_with_tile_in_float16():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 18, 18)), rng.standard_normal((2, 4, 3, 3))
    ref = conv2d_direct_in(x, w, np.float64)
    err = {m: np.abs(conv2d_winograd_in(x, w, m, np.float16) - ref).max() for m in (2, 4)}
    assert err[4] > err[2]


def test_transform_costs_match_lavin_and_gray():
    from scaledl.kernels.winograd import winograd_ops_per_output

    # F(2x2, 3x3): data transform 32 additions, output transform 24 (Lavin and Gray 2016, section 4.1)
    ops = winograd_ops_per_output(2, 3, C=1, K=1)
    assert ops["multiplies"] == 4.0 and ops["direct"] == 18.0
    assert ops["transform_ops"] == (32 + 24) / 4
    big = winograd_ops_per_output(2, 3, C=10**6, K=10**6)
    assert abs(big["total"] - 8.0) < 1e-4  # 16 multiplies + 16 adds per 4 outputs once transforms amortise
    with pytest.raises(ValueError, match="C=0"):
        winograd_ops_per_output(2, 3, C=0, K=1)
