"""Emulated low-precision training: a rounding function for the forward and backward, FP32 master weights.

A :class:`Precision` names a format by the function that rounds a float32 array to it (and returns float32
again). The layers round their inputs, weights, outputs and gradients with it; products accumulate in
float32; the optimizer updates float32 master weights; the softmax runs in float32. ``loss_scale``
multiplies d loss / d logits before the backward pass and is divided out of the gradients in float32
before the update, so small gradients do not flush to zero in FP16.

Any callable works, so the number-format chapters can plug in their own quantizers; "fp16" and "bf16"
are built in through ml_dtypes casts (round to nearest even; FP16 overflows to inf beyond 65504).

>>> import numpy as np
>>> p = as_precision("bf16")
>>> p.round(np.float32([1.0, 1.00390625, 3.14159265])).tolist()   # bf16 keeps 8 significant bits
[1.0, 1.0, 3.140625]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np


def round_fp16(x: np.ndarray) -> np.ndarray:
    """Round to IEEE half precision (5 exponent, 10 mantissa bits) and back to float32."""
    with np.errstate(over="ignore"):  # overflow to inf is the behaviour being emulated
        return np.asarray(x).astype(np.float16).astype(np.float32)


def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round to bfloat16 (8 exponent, 7 mantissa bits) and back to float32."""
    return np.asarray(x).astype(ml_dtypes.bfloat16).astype(np.float32)


def round_fp32(x: np.ndarray) -> np.ndarray:
    """Float32 itself: the identity on float32 arrays."""
    return np.asarray(x, dtype=np.float32)


FORMATS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "fp32": round_fp32, "fp16": round_fp16, "bf16": round_bf16,
}


@dataclass(frozen=True)
class Precision:
    """An emulated compute format.

    Args:
        round: ``x -> x rounded to the format`` (float32 in, float32 out).
        name: a label for plots and messages.
        loss_scale: multiplies the loss gradient before backward; divided out before the update. With
            ``dynamic``, the starting scale.
        dynamic: adapt the scale while training (dynamic loss scaling, as in mixed-precision training
            frameworks): a step with a non-finite gradient is skipped and the scale multiplied by
            ``backoff``; after ``growth_interval`` finite steps in a row it is multiplied by ``growth``.
    """

    round: Callable[[np.ndarray], np.ndarray]
    name: str = "custom"
    loss_scale: float = 1.0
    dynamic: bool = False
    growth: float = 2.0
    backoff: float = 0.5
    growth_interval: int = 200

    def __post_init__(self):
        if not callable(self.round):
            raise TypeError(f"round: expected a callable x -> rounded x, got {self.round!r}")
        if not (np.isfinite(self.loss_scale) and self.loss_scale > 0):
            raise ValueError(f"loss_scale: expected a positive finite number, got {self.loss_scale!r}")
        if not (np.isfinite(self.growth) and self.growth >= 1):
            raise ValueError(f"growth: expected a finite factor >= 1, got {self.growth!r}")
        if not (0 < self.backoff < 1):
            raise ValueError(f"backoff: expected a factor in (0, 1), got {self.backoff!r}")
        if isinstance(self.growth_interval, bool) or not isinstance(self.growth_interval, (int, np.integer)) \
                or self.growth_interval < 1:
            raise ValueError(f"growth_interval: expected a positive int, got {self.growth_interval!r}")


def as_precision(spec, loss_scale: float = 1.0) -> Precision | None:
    """``None``, a format name ("fp32", "fp16", "bf16"), a rounding callable or a Precision -> Precision."""
    if spec is None or isinstance(spec, Precision):
        return spec
    if isinstance(spec, str):
        if spec not in FORMATS:
            raise ValueError(f"precision: unknown format {spec!r}; expected one of {sorted(FORMATS)} "
                             f"or a rounding callable")
        return Precision(FORMATS[spec], spec, loss_scale)
    if callable(spec):
        return Precision(spec, getattr(spec, "__name__", "custom"), loss_scale)
    raise TypeError(f"precision: expected None, a format name, a callable or a Precision, got {spec!r}")
