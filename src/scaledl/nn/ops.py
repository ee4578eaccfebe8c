"""Fixed-order CPU kernels: the arithmetic of :mod:`scaledl.nn`, bit for bit the same on every CPU.

Why this module exists. NumPy hands ``x @ W`` to OpenBLAS, which picks a GEMM kernel for the CPU it finds
(Haswell, SkylakeX, Zen, ...); each kernel adds the products of a dot product in its own order, so the last
bit of a float32 result depends on the machine. NumPy's float32 ``exp`` and ``log`` likewise change with the
SIMD path (AVX2, AVX-512 or scalar libm). One last bit is harmless in one product, but training amplifies it:
after a few hundred SGD steps two CPUs print different accuracies in the third digit. A book whose text
quotes the numbers its cells print cannot allow that.

So every product, column sum and transcendental function the training substrate uses goes through the
kernels below. Each output is accumulated in one fixed order (over the reduction index, first to last), and
only IEEE-754 basic operations (+, -, *, /), which are correctly rounded everywhere, are used: no fused
multiply-add (Numba contracts nothing without ``fastmath``), no library ``exp``. The compiler may still
vectorise, but only *across* outputs, which does not change any output's order of additions. Results are
therefore identical with ``NUMBA_CPU_NAME=generic``, on an AVX2 and on an AVX-512 machine; tests compare the
kernels with NumPy within float rounding and the test tier ``tests/notebooks/test_emulated_cpu.py`` re-executes
the training chapters as another CPU would.

The price is speed, measured on a 2-core AMD EPYC (AVX2) against OpenBLAS's kernel for it: a 32x256 by
256x256 product runs at about 54 GFLOP/s against 77-92, and one epoch of the 64-256-256-10 MLP at batch 32
takes 1.34x as long (Chapter 02 prints the epoch time on the reader's machine).

>>> import numpy as np
>>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> matmul(a, a.T).tolist()
[[5.0, 14.0], [14.0, 50.0]]
>>> import math
>>> abs(float(exp(1.0)) - math.e) <= 2 * math.ulp(math.e), float(log(math.e))   # within 2 ulp, not exact
(True, 1.0)
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# fdlibm's split of ln 2: LN2_HI has 21 trailing zero bits, so k * LN2_HI is exact for |k| < 2**21
# (Cody and Waite's argument reduction; Sun Microsystems' fdlibm, e_exp.c, 1993).
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
_EXP_OVERFLOW = 709.782712893384        # log(largest double)
_EXP_UNDERFLOW = -745.1332191019412     # log(smallest subnormal double) - a little
_SQRT_HALF = 0.7071067811865476


def _as_float(a, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype in (np.float32, np.float64):
        return a
    if a.dtype.kind in "biu" or a.dtype == np.float16:
        return a.astype(np.float64 if a.dtype.kind in "biu" else np.float32)
    raise TypeError(f"{name}: expected a real floating-point or integer array, got dtype {a.dtype}")


# -- products -----------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _matmul_into(a, b, out):
    """out[i, j] = sum_p a[i, p] * b[p, j], added in order p = 0, 1, ...; b and out C-contiguous.

    Blocked two rows of ``a`` by four steps of ``p``: each loaded b[p:p+4, j] serves two outputs and each
    output is loaded and stored once per four products, but every output still adds its products one at
    a time in order p, p+1, p+2, p+3. The innermost loop runs over j (independent outputs), the only loop
    the compiler vectorises.
    """
    m, k = a.shape
    n = b.shape[1]
    out[:, :] = 0
    i = 0
    while i < m:
        rows = 2 if i + 2 <= m else 1
        p = 0
        while p + 4 <= k:
            if rows == 2:
                a00, a01, a02, a03 = a[i, p], a[i, p + 1], a[i, p + 2], a[i, p + 3]
                a10, a11, a12, a13 = a[i + 1, p], a[i + 1, p + 1], a[i + 1, p + 2], a[i + 1, p + 3]
                for j in range(n):
                    b0, b1, b2, b3 = b[p, j], b[p + 1, j], b[p + 2, j], b[p + 3, j]
                    out[i, j] = (((out[i, j] + a00 * b0) + a01 * b1) + a02 * b2) + a03 * b3
                    out[i + 1, j] = (((out[i + 1, j] + a10 * b0) + a11 * b1) + a12 * b2) + a13 * b3
            else:
                a00, a01, a02, a03 = a[i, p], a[i, p + 1], a[i, p + 2], a[i, p + 3]
                for j in range(n):
                    out[i, j] = (((out[i, j] + a00 * b[p, j]) + a01 * b[p + 1, j]) + a02 * b[p + 2, j]) \
                        + a03 * b[p + 3, j]
            p += 4
        while p < k:
            for r in range(i, i + rows):
                ar = a[r, p]
                for j in range(n):
                    out[r, j] += ar * b[p, j]
            p += 1
        i += rows


# Below this many output columns the vectorised loop is too short to pay; the transposed product
# (out.T = b.T @ a.T) adds exactly the same products in the same order, so it is used instead.
_NARROW = 32


def matmul(a, b) -> np.ndarray:
    """``a @ b`` for 2-D arrays, each output summed over the inner index in order (see the module text).

    The result has NumPy's result dtype of the two inputs (float32 with float32, float64 otherwise;
    integers are computed in float64, float16 in float32).

    Raises:
        ValueError: not 2-D, or inner dimensions that differ (both shapes are named).
        TypeError: a complex or non-numeric dtype.
    """
    a, b = _as_float(a, "a"), _as_float(b, "b")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul: expected 2-D arrays, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: inner dimensions differ, shapes {a.shape} and {b.shape} "
                         f"(expected a of shape (m, k) and b of shape (k, n))")
    dtype = np.result_type(a.dtype, b.dtype)
    m, n = a.shape[0], b.shape[1]
    if n < _NARROW and m > n:
        return np.ascontiguousarray(_product(b.T, a.T, dtype).T)
    return _product(a, b, dtype)


def _product(a, b, dtype):
    a = a.astype(dtype, copy=False)
    b = np.ascontiguousarray(b, dtype=dtype)  # rows of b are streamed; a is read one scalar at a time
    out = np.empty((a.shape[0], b.shape[1]), dtype)
    if out.size:
        _matmul_into(a, b, out)
    else:
        out[...] = 0
    return out


@njit(cache=True, nogil=True)
def _sum_rows_into(a, out):
    out[:] = 0
    for i in range(a.shape[0]):
        row = a[i]
        for j in range(a.shape[1]):
            out[j] += row[j]


def sum_rows(a) -> np.ndarray:
    """``a.sum(axis=0)`` of a 2-D array, row 0 first, then row 1, ... (a bias gradient)."""
    a = _as_float(a, "a")
    if a.ndim != 2:
        raise ValueError(f"sum_rows: expected a 2-D array, got shape {a.shape}")
    out = np.empty(a.shape[1], a.dtype)
    _sum_rows_into(a, out)
    return out


# -- exp and log from basic operations ------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _exp1(x):
    """e**x in float64 from +, -, *, / and an exact scaling by 2**k; about 1 ulp."""
    if x != x:
        return x
    if x > _EXP_OVERFLOW:
        return math.inf
    if x < _EXP_UNDERFLOW:
        return 0.0
    k = math.floor(x * _INV_LN2 + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO           # |r| <= ln(2)/2
    # Taylor series of e**r to r**13 / 13!: the first omitted term is below 2**-60 for |r| <= 0.35.
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    return math.ldexp(p, int(k))


@njit(cache=True, nogil=True)
def _log1(x):
    """ln x in float64 from +, -, *, / and an exact split x = m * 2**e; about 1 ulp."""
    if x != x or x < 0.0:
        return math.nan
    if x == 0.0:
        return -math.inf
    if x == math.inf:
        return math.inf
    m, e = math.frexp(x)                          # x = m * 2**e, m in [0.5, 1)
    if m < _SQRT_HALF:
        m *= 2.0
        e -= 1                                    # m in [sqrt(1/2), sqrt(2))
    s = (m - 1.0) / (m + 1.0)                     # ln m = 2 atanh(s), |s| <= 0.1716
    s2 = s * s
    # 2 atanh(s) = 2 (s + s**3/3 + s**5/5 + ...): terms to s**25 leave an error below 2**-60.
    q = 1.0 / 25.0
    for d in (23.0, 21.0, 19.0, 17.0, 15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0, 1.0):
        q = q * s2 + 1.0 / d
    return e * _LN2_HI + (e * _LN2_LO + 2.0 * s * q)


@njit(cache=True, nogil=True)
def _exp_into(x, out):
    for i in range(x.size):
        out[i] = _exp1(np.float64(x[i]))


@njit(cache=True, nogil=True)
def _log_into(x, out):
    for i in range(x.size):
        out[i] = _log1(np.float64(x[i]))


def _elementwise(kernel, x, name):
    x = _as_float(x, name)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, x.dtype)  # float64 inside, one rounding to float32 at the end
    kernel(flat, out)
    return out.reshape(x.shape) if x.ndim else out.reshape(())[()]


def exp(x):
    """``e**x`` element-wise, computed in float64 from basic operations; returns the input's dtype."""
    return _elementwise(_exp_into, x, "x")


def log(x):
    """Natural logarithm element-wise (``-inf`` at 0, NaN below), computed like :func:`exp`."""
    return _elementwise(_log_into, x, "x")


# -- another CPU, emulated ---------------------------------------------------------------------------------
def plain_cpu_env() -> dict[str, str]:
    """Environment variables that make this x86-64 machine compute like a plainer one (for tests).

    ``OPENBLAS_CORETYPE=Prescott`` (OpenBLAS's SSE3 kernels instead of the ones it picks for this CPU),
    ``NPY_DISABLE_CPU_FEATURES`` naming every NumPy dispatch target above its compiled baseline,
    ``NUMBA_CPU_NAME=generic`` (Numba code for any x86-64), and ``GLIBC_TUNABLES`` hiding AVX2, FMA and
    AVX-512 from glibc's libm. Each is safe on any x86-64; they must be set before the process starts.
    """
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__
    hidden = ("AVX512F", "AVX2", "FMA", "FMA4", "AVX512F_Usable", "AVX2_Usable", "FMA_Usable")  # both spellings
    return {
        "OPENBLAS_CORETYPE": "Prescott",
        "NPY_DISABLE_CPU_FEATURES": " ".join(__cpu_dispatch__),
        "NUMBA_CPU_NAME": "generic",
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=" + ",".join("-" + h for h in hidden),
    }


# -- the classifier's loss -------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _softmax_xent(z, labels, dlogits):
    """Per-row log-sum-exp in float64; returns the summed loss; dlogits = softmax - onehot (unscaled)."""
    n, c = z.shape
    total = 0.0
    p = np.empty(c)
    for i in range(n):
        zmax = z[i, 0]
        for j in range(1, c):
            if z[i, j] > zmax:
                zmax = z[i, j]
        s = 0.0
        for j in range(c):
            p[j] = _exp1(np.float64(z[i, j]) - np.float64(zmax))
            s += p[j]
        log_s = _log1(s)
        total += log_s - (np.float64(z[i, labels[i]]) - np.float64(zmax))
        for j in range(c):
            dlogits[i, j] = p[j] / s
        dlogits[i, labels[i]] -= 1.0
    return total


def softmax_cross_entropy_rows(z: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy and (softmax - onehot) / n for checked float logits ``z`` (n, c) and int labels.

    Used by :func:`scaledl.nn.loss.softmax_cross_entropy`, which checks its arguments; the softmax is
    evaluated in float64 with this module's ``exp`` and ``log`` and the gradient returned in ``z``'s dtype.
    """
    n = z.shape[0]
    dlogits = np.empty(z.shape, z.dtype)
    total = _softmax_xent(np.ascontiguousarray(z), np.ascontiguousarray(labels, dtype=np.int64), dlogits)
    if n:
        dlogits /= np.asarray(n, z.dtype)
    return (total / n if n else math.nan), dlogits


def precompile() -> int:
    """Compile every kernel of this module for float32 and float64, with ``a`` C-, F- (a transpose) and
    A-ordered (a slice), as :mod:`scaledl.nn` calls them, so that a Numba cache (``NUMBA_CACHE_DIR``) holds them
    all; returns how many kernels were called. The grader runs it once per batch and copies the cache into
    every student's sandbox, instead of compiling the same code once per student."""
    calls = 0
    for dtype in (np.float32, np.float64):
        c = np.arange(12, dtype=dtype).reshape(3, 4) / 8
        b = np.ascontiguousarray(c.T)
        for a in (c, np.ascontiguousarray(b).T, (np.arange(24, dtype=dtype).reshape(3, 8) / 8)[:, ::2]):
            _matmul_into(a, b, np.empty((3, 3), dtype))
            _sum_rows_into(a, np.empty(4, dtype))
            calls += 2
        _exp_into(c.ravel(), np.empty(12, dtype))
        _log_into(c.ravel() + 1, np.empty(12, dtype))
        _softmax_xent(c, np.array([0, 1, 2], np.int64), np.empty_like(c))
        calls += 3
    return calls
