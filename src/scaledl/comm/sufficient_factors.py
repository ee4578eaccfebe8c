"""Sufficient factors: send a fully connected layer's gradient as the two matrices whose product it is.

For a fully connected layer ``y = W x`` (W is m x n) on a batch of B examples, the weight gradient is

    dW = delta^T X = sum over b of outer(delta_b, x_b),

with ``delta`` (B x m) the gradients of the outputs and ``X`` (B x n) the inputs. dW has m n numbers; its
*sufficient factors* ``(delta, X)`` have B (m + n). A worker can send the factors and let the receiver form
dW (NVIDIA's 2018 slides: "send FC factors, compute dW on parameter server; broadcast factors to not receive
full w"). It pays while B (m + n) < m n, i.e. below the batch :func:`crossover_batch` = m n / (m + n).

Xie et al. built this as Sufficient Factor Broadcasting: every worker broadcasts its factors to every other
and each forms the summed update itself ("Distributed Machine Learning via Sufficient Factor Broadcasting",
arXiv:1511.08486, 2015; UAI 2016 as "Lighter-Communication Distributed Machine Learning via Sufficient Factor
Broadcasting"). Poseidon (Zhang et al., USENIX ATC 2017) chooses per layer between a parameter server and
factor broadcasting, whichever moves fewer bytes (:func:`per_worker_bytes`).

>>> crossover_batch(4096, 4096)          # a 4096 x 4096 layer: factors win below 2048 examples
2048.0
>>> per_worker_bytes("ps", 4096, 4096, batch=256, workers=8) / per_worker_bytes("sfb", 4096, 4096, batch=256,
...                                                                             workers=8)
1.1428571428571428
"""

from __future__ import annotations


import numpy as np

from scaledl._args import count

__all__ = ["SCHEMES", "dense_gradient_bytes", "factor_bytes", "crossover_batch", "per_worker_bytes",
           "sfb_crossover_batch", "weight_gradient", "gradient_from_factors", "rounding_bound"]

SCHEMES = ("ps", "ps_factors", "sfb")


def dense_gradient_bytes(m: int, n: int, *, bytes_per_value: int = 4) -> int:
    """Bytes of an m x n weight gradient (FP32 by default)."""
    return count("m", m) * count("n", n) * count("bytes_per_value", bytes_per_value)


def factor_bytes(m: int, n: int, batch: int, *, bytes_per_value: int = 4) -> int:
    """Bytes of its sufficient factors for ``batch`` examples: batch x (m + n) values."""
    return count("batch", batch) * (count("m", m) + count("n", n)) * count("bytes_per_value", bytes_per_value)


def crossover_batch(m: int, n: int) -> float:
    """The batch at which factors and the dense gradient are the same size: m n / (m + n).

    Below it the factors are smaller. It is at most min(m, n) and at least half of it (m n / (m + n) is half
    the harmonic mean of m and n), so a layer must be wide in both dimensions for the factors to pay.
    """
    m, n = count("m", m), count("n", n)
    return m * n / (m + n)


def per_worker_bytes(scheme: str, m: int, n: int, *, batch: int, workers: int, bytes_per_value: int = 4) -> int:
    """Bytes one worker sends plus receives per step for one m x n layer, ``batch`` examples per worker.

    - ``"ps"``: send dW to a parameter server, receive the new W: 2 m n values.
    - ``"ps_factors"``: send the factors, the server forms dW; receive the new W: B (m + n) + m n.
    - ``"sfb"``: send one's factors to each of the other ``workers - 1`` and receive theirs; each worker forms
      the summed dW itself: 2 (P - 1) B (m + n).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme={scheme!r}; expected one of {', '.join(SCHEMES)}")
    p = count("workers", workers)
    dense = dense_gradient_bytes(m, n, bytes_per_value=bytes_per_value)
    factors = factor_bytes(m, n, batch, bytes_per_value=bytes_per_value)
    if scheme == "ps":
        return 2 * dense
    if scheme == "ps_factors":
        return factors + dense
    return 2 * (p - 1) * factors


def sfb_crossover_batch(m: int, n: int, workers: int) -> float:
    """Per-worker batch below which broadcasting factors moves fewer bytes than a parameter server:
    2 (P - 1) B (m + n) < 2 m n, i.e. B < m n / ((P - 1)(m + n)). Infinite for one worker (nothing to send)."""
    p = count("workers", workers)
    return float("inf") if p == 1 else crossover_batch(m, n) / (p - 1)


def _factors(delta, x):
    d, xx = np.asarray(delta), np.asarray(x)
    if d.ndim != 2 or xx.ndim != 2 or d.shape[0] != xx.shape[0]:
        raise ValueError(f"delta and x must be (batch, m) and (batch, n) with one batch, got shapes {d.shape} and "
                         f"{xx.shape}")
    return d, xx


def weight_gradient(delta, x) -> np.ndarray:
    """What a worker computes and would send without factors: dW = delta^T x, shape (m, n)."""
    d, xx = _factors(delta, x)
    return d.T @ xx


def gradient_from_factors(factors) -> np.ndarray:
    """What the receiver forms from the factors ``[(delta_1, x_1), (delta_2, x_2), ...]`` of several workers:
    the sum over workers and examples of the rank-1 outer products, one example at a time."""
    factors = list(factors)
    if not factors:
        raise ValueError("factors must hold at least one (delta, x) pair, got none")
    d0, x0 = _factors(*factors[0])
    total = np.zeros((d0.shape[1], x0.shape[1]), dtype=np.result_type(d0, x0))
    for delta, x in factors:
        d, xx = _factors(delta, x)
        if d.shape[1:] != d0.shape[1:] or xx.shape[1:] != x0.shape[1:]:
            raise ValueError(f"every worker's factors must have the layer's widths {d0.shape[1]} and {x0.shape[1]}, "
                             f"got {d.shape[1]} and {xx.shape[1]}")
        for b in range(d.shape[0]):
            total += np.outer(d[b], xx[b])
    return total


def rounding_bound(factors) -> np.ndarray:
    """Elementwise bound on the difference between two orders of summing the same B products:
    2 gamma_B sum |delta_b| |x_b|^T, gamma_B = B u / (1 - B u), u the unit roundoff of the dtype (Higham,
    *Accuracy and Stability of Numerical Algorithms*, 2nd ed., 2002, section 3.1: each order is within gamma_B
    of the exact sum)."""
    factors = [_factors(*f) for f in factors]
    dtype = np.result_type(*[a for f in factors for a in f])
    u = np.finfo(dtype).eps / 2
    count = sum(d.shape[0] for d, _ in factors)
    gamma = count * u / (1 - count * u)
    return 2 * gamma * sum(np.abs(d).T @ np.abs(x) for d, x in factors)
