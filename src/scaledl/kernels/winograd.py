"""Winograd minimal filtering F(m, r): transform matrices, multiply counts and low-precision error (NumPy).

One output tile of ``m`` values of a 1-D correlation with an ``r``-tap filter, ``y_i = sum_k g_k d_{i+k}``,
needs ``m r`` multiplies done directly but only ``m + r - 1`` in Winograd's form

    y = A^T [ (G g) * (B^T d) ]        (* elementwise; the 2-D form nests it: Y = A^T [(G g G^T) * (B^T d B)] A)

The matrices come from Toom-Cook: evaluate the filter and the data polynomials at ``n = m + r - 1`` points
(here ``n - 1`` finite points and infinity), multiply pointwise, interpolate. :func:`winograd_matrices`
builds them exactly with fractions; with the points 0, 1, -1 it reproduces Lavin and Gray's F(2, 3)
(:data:`LAVIN_F2x3`). Larger ``m`` saves more multiplies but needs points like +-2, +-1/2 whose powers grow, so
the transforms amplify rounding error: :func:`conv2d_winograd_in` measures that in any float dtype.

>>> BT, G, AT = winograd_matrices(2, 3)
>>> [int(v) for v in BT[0]]
[1, 0, -1, 0]
>>> multiplies_per_tile(2, 3), multiplies_per_tile(2, 3, direct=True)
(16, 36)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

# Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016: F(2x2, 3x3).
LAVIN_F2x3 = {
    "BT": np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64),
    "G": np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64),
    "AT": np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64),
}

# Finite interpolation points by tile size (infinity is always the last point): the small integers first,
# then reciprocals, which keep the matrices' entries as small as possible (the choice used by Lavin's wincnn).
DEFAULT_POINTS = [Fraction(0), Fraction(1), Fraction(-1), Fraction(2), Fraction(-2), Fraction(1, 2),
                  Fraction(-1, 2), Fraction(3), Fraction(-3)]


def multiplies_per_tile(m: int, r: int, direct: bool = False) -> int:
    """Multiplies for an ``m x m`` output tile of an ``r x r`` filter: ``(m r)^2`` direct, ``(m+r-1)^2``
    Winograd (the transforms' additions and constant multiplies are not counted)."""
    if m < 1 or r < 1:
        raise ValueError(f"m and r must be >= 1, got m={m!r}, r={r!r}")
    return (m * r) ** 2 if direct else (m + r - 1) ** 2


SCALINGS = ("integer", "fractional", "none")


def winograd_matrices(m: int, r: int, points=None, scaling: str = "integer"
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact ``(B^T, G, A^T)`` of F(m, r) as object arrays of Fractions (n x n, n x r, m x n; n = m + r - 1).

    Derivation: linear convolution s = g (*) x of an r-tap and an m-tap sequence is the Toom-Cook product
    ``s = C [(V_r g) * (V_m x)]`` with ``V_k`` the n x k evaluation matrix at the points (row [0..0, 1] for
    infinity) and ``C = V_n^-1``. Correlation is the transpose of convolution, so
    ``y = V_m^T [(V_r g) * (C^T d)]``: ``A^T = V_m^T``, ``G = V_r``, ``B^T = C^T``. Each row j of B^T is then
    rescaled, and the factor divided into row j of G (y is unchanged; only the rounding changes):

    * ``scaling="integer"``: each row of B^T is multiplied by the common denominator of its entries, so B^T
      holds integers (Lavin and Gray's F(2, 3)). With points like +-1/2 this multiplies rows by 4 or 16 and
      F(6, 3)'s B^T reaches 160.
    * ``scaling="fractional"``: each row of B^T is scaled so that its last non-zero entry is +-1 (the row is
      then the coefficient list of a monic polynomial, ``M(x) / (x - p_j)`` with ``M`` the product of
      ``x - p`` over the finite points), the usual choice (Lavin's wincnn): F(6, 3)'s B^T has entries up to
      21/4 = 5.25. For F(2, 3) and F(4, 3) with the default points both scalings give the same B^T.

    Raises:
        ValueError: m or r below 1, not enough distinct points, or an unknown scaling.
    """
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    if m < 1 or r < 1:
        raise ValueError(f"m and r must be >= 1, got m={m!r}, r={r!r}")
    n = m + r - 1
    pts = list(points) if points is not None else DEFAULT_POINTS[: n - 1]
    if len(pts) != n - 1 or len(set(pts)) != n - 1:
        raise ValueError(f"F({m}, {r}) needs {n - 1} distinct finite points, got {pts!r}")
    pts = [Fraction(p) for p in pts]

    def vander(k):
        V = [[p**i for i in range(k)] for p in pts]
        V.append([Fraction(int(i == k - 1)) for i in range(k)])  # infinity: the leading coefficient
        return V

    C = _inverse(vander(n))
    BT = [[C[i][j] for i in range(n)] for j in range(n)]  # C^T
    G = vander(r)
    for j in range(n):  # move each row's scale factor from B^T into G (y is unchanged)
        if scaling == "none":
            break
        if scaling == "integer":
            scale = _lcm_denominators(BT[j])
        else:
            scale = 1 / abs(next(v for v in reversed(BT[j]) if v != 0))
        BT[j] = [v * scale for v in BT[j]]
        G[j] = [v / scale for v in G[j]]
    Vm = vander(m)
    AT = [[Vm[j][i] for j in range(n)] for i in range(m)]
    return np.array(BT, object), np.array(G, object), np.array(AT, object)


def _lcm_denominators(row) -> Fraction:
    from math import lcm

    out = 1
    for v in row:
        out = lcm(out, v.denominator)
    return Fraction(out)


def _inverse(M):
    """Gauss-Jordan inverse over the rationals (exact)."""
    n = len(M)
    a = [list(row) + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(M)]
    for col in range(n):
        piv = next(i for i in range(col, n) if a[i][col] != 0)
        a[col], a[piv] = a[piv], a[col]
        p = a[col][col]
        a[col] = [v / p for v in a[col]]
        for i in range(n):
            if i != col and a[i][col] != 0:
                f = a[i][col]
                a[i] = [vi - f * vc for vi, vc in zip(a[i], a[col])]
    return [row[n:] for row in a]


# --------------------------------------------------------------------------- convolution in a given dtype
def _mm(T, X, dtype):
    """T @ X over the last two axes of X, every product and partial sum rounded to dtype (T is small)."""
    T = np.asarray(T, np.float64).astype(dtype)
    out = np.zeros(X.shape[:-2] + (T.shape[0], X.shape[-1]), dtype)
    for i in range(T.shape[0]):
        acc = np.zeros(X.shape[:-2] + (X.shape[-1],), dtype)
        for k in range(T.shape[1]):
            if T[i, k] != 0:  # a real implementation skips the zeros too
                acc = (acc + T[i, k] * X[..., k, :]).astype(dtype)
        out[..., i, :] = acc
    return out


def conv2d_direct_in(x, w, dtype=np.float32) -> np.ndarray:
    """Valid 2-D cross-correlation ``y[k] = sum_c x[c] (*) w[k, c]``, every operation rounded to ``dtype``.

    Args: x: ``(C, H, W)``; w: ``(K, C, R, S)``. Returns ``(K, H-R+1, W-S+1)`` in dtype.
    """
    x, w = np.asarray(x).astype(dtype), np.asarray(w).astype(dtype)
    C, H, W = x.shape
    K, C2, R, S = w.shape
    if C2 != C:
        raise ValueError(f"w has {C2} input channels but x has {C}")
    P, Q = H - R + 1, W - S + 1
    y = np.zeros((K, P, Q), dtype)
    for k in range(K):
        for c in range(C):
            for r in range(R):
                for s in range(S):
                    y[k] = (y[k] + w[k, c, r, s] * x[c, r:r + P, s:s + Q]).astype(dtype)
    return y


def conv2d_winograd_in(x, w, m: int = 2, dtype=np.float32, scaling: str = "integer", points=None) -> np.ndarray:
    """The same convolution by F(m x m, r x r), with the transforms and the channel sum rounded to dtype.

    The filter transform ``G g G^T`` is computed in float64 and rounded once (it is done offline, once per
    filter); the data transform, the elementwise products, the channel sum and the output transform all
    run in ``dtype``. Output sizes that are not multiples of m are handled by zero padding. ``points`` and
    ``scaling`` choose the interpolation points and where the transforms' constants go
    (:func:`winograd_matrices`).
    """
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    C, H, W = x.shape
    K, C2, r, r2 = w.shape
    if C2 != C or r2 != r:
        raise ValueError(f"w must be (K, {C}, r, r) for x of {C} channels, got {w.shape}")
    BT, G, AT = (np.asarray(M, np.float64) for M in winograd_matrices(m, r, points, scaling))
    n = m + r - 1
    P, Q = H - r + 1, W - r + 1
    tp, tq = -(-P // m), -(-Q // m)
    xp = np.zeros((C, tp * m + r - 1, tq * m + r - 1))
    xp[:, :H, :W] = x
    # (C, tp, tq, n, n) input tiles overlapping by r - 1
    d = np.stack([np.stack([xp[:, i * m:i * m + n, j * m:j * m + n] for j in range(tq)], 1)
                  for i in range(tp)], 1).astype(dtype)
    U = (G @ w @ G.T).astype(dtype)  # (K, C, n, n)
    V = _mm(BT, d, dtype)  # B^T d
    V = np.swapaxes(_mm(BT, np.swapaxes(V, -1, -2), dtype), -1, -2)  # (B^T d) B
    Mk = np.zeros((K, tp, tq, n, n), dtype)
    for c in range(C):
        Mk = (Mk + U[:, c, None, None] * V[None, c]).astype(dtype)
    Y = _mm(AT, Mk, dtype)
    Y = np.swapaxes(_mm(AT, np.swapaxes(Y, -1, -2), dtype), -1, -2)  # (K, tp, tq, m, m)
    Y = Y.transpose(0, 1, 3, 2, 4).reshape(K, tp * m, tq * m)
    return Y[:, :P, :Q]


# ----------------------------------------------------------------------------------- arithmetic accounting
def _apply_cost(T) -> tuple[int, int]:
    """(additions, multiplications) of T @ v for one vector v: entries of +-1 cost no multiply, zeros nothing."""
    T = np.asarray(T, object)
    adds = sum(max(int(np.count_nonzero(row != 0)) - 1, 0) for row in T)
    mults = int(sum(1 for v in T.ravel() if v != 0 and abs(v) != 1))
    return adds, mults


def winograd_ops_per_output(m: int, r: int, C: int, K: int) -> dict[str, float]:
    """Arithmetic per output value per input channel of a C-in, K-out layer computed with F(m x m, r x r).

    The data transform ``B^T d B`` is done once per (tile, input channel) and shared by the K output
    channels; the output transform ``A^T M A`` once per (tile, output channel) after the sum over C; the
    filter transform is done once per layer and left out. Returns a dict with ``"multiplies"`` (elementwise
    products), ``"transform_ops"`` (adds and constant multiplies, amortised), ``"total"`` and ``"direct"``
    (``2 r^2``: a multiply and an add per filter tap).

    >>> round(winograd_ops_per_output(2, 3, C=64, K=64)["multiplies"], 2)
    4.0
    """
    if min(m, r, C, K) < 1:
        raise ValueError(f"m, r, C, K must all be >= 1, got m={m}, r={r}, C={C}, K={K}")
    BT, _, AT = winograd_matrices(m, r)
    n = m + r - 1
    a_b, m_b = _apply_cost(BT)
    a_a, m_a = _apply_cost(AT)
    data = 2 * n * (a_b + m_b)  # B^T applied to n columns, then to n rows
    out = (n + m) * (a_a + m_a)  # A^T applied to n columns (m x n result), then to its m rows
    per_tile_ck = n * n * 2 + data / K + out / C  # n^2 multiplies + n^2 channel-sum adds, amortised transforms
    return {"multiplies": n * n / (m * m), "transform_ops": (data / K + out / C) / (m * m),
            "total": per_tile_ck / (m * m), "direct": 2.0 * r * r}
