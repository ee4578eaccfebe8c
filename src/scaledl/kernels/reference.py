"""The GEMM's specification in NumPy, shared by every check of a GEMM kernel: the float64 product
(:func:`gemm_reference`) and the float32 rounding bound a kernel's result must stay within
(:func:`gemm_tolerance`). NumPy only, so a lab's checks (:mod:`scaledl.labs.check`) import it without Numba."""

from __future__ import annotations

import numpy as np

__all__ = ["FLOAT32_EPS", "gemm_reference", "gemm_tolerance"]

FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 2^-23


def gemm_reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The specification: ``A @ B`` computed in float64 (then the caller compares with a float32 result)."""
    return np.asarray(A, np.float64) @ np.asarray(B, np.float64)


def gemm_tolerance(A, B) -> np.ndarray:
    """Absolute tolerance per element of ``A @ B`` computed in float32 in any summation order: the one bound
    every GEMM check uses (the labs' checks, ``scaledl bench``, the counted runs, chapter 04, the GPU tests).

    A K-term float32 dot product is off by at most about K u sum|a_k b_k| (u = eps / 2, Higham's bound
    gamma_K, "Accuracy and Stability of Numerical Algorithms", 2002, sec. 3.1); ``(K + 2) eps |A| @ |B|``,
    computed in float64, leaves a factor two of room plus the rounding of the inputs.

    >>> float(gemm_tolerance(np.ones((1, 10), np.float32), np.ones((10, 1), np.float32))[0, 0]) / FLOAT32_EPS
    120.0
    """
    A, B = np.abs(np.asarray(A, np.float64)), np.abs(np.asarray(B, np.float64))
    return (A.shape[-1] + 2) * FLOAT32_EPS * (A @ B) + np.finfo(np.float32).tiny
