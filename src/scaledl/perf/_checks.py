"""Argument checks shared by the performance models."""

from __future__ import annotations

import math

import numpy as np


def positive(name: str, value) -> float:
    """``value`` as a float, or a TypeError/ValueError naming ``name`` when it is not a positive finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)
