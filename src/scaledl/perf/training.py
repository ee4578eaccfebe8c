"""How long training takes: a FLOP count divided by what a set of GPUs sustains.

    time = flops / (count x peak x utilization)

``utilization`` (often called MFU, model FLOP utilization) is the share of the peak that the run actually
achieves: communication, memory-bound layers, input pipelines and restarts all eat into it. 0.3 to 0.5 is
typical of well-tuned large runs, which is why 0.4 is the default here; a naive single-GPU script can be far
lower. The model assumes perfect scaling with ``count``; Part IV shows where that breaks.

>>> round(training_time_days(8.64e19, "A100", count=1, utilization=0.4, precision="bf16"), 2)  # 1 PF-day
8.01
"""

from __future__ import annotations

import math
import numbers

from scaledl.perf import hardware
from scaledl.perf.hardware import Device
from scaledl._args import positive

__all__ = ["SECONDS_PER_DAY", "TWO_WEEKS_S", "PETAFLOP_DAY_FLOP", "sustained_FLOPS", "training_time_s",
           "training_time_days", "trainable_flops", "devices_needed", "format_duration"]

SECONDS_PER_DAY = 86_400
# Dally (seed 000): a "reasonable" training time, the threshold AlexNet crossed in 2012, is two weeks.
TWO_WEEKS_S = 14 * SECONDS_PER_DAY
# The unit of OpenAI's "AI and Compute" charts and of seed 002: a petaflop/s sustained for a day.
PETAFLOP_DAY_FLOP = 1e15 * SECONDS_PER_DAY  # 8.64e19 FLOP


def _check_count(count) -> int:
    if isinstance(count, bool) or not isinstance(count, numbers.Integral):
        raise TypeError(f"count must be a positive int (a number of GPUs), got {count!r} ({type(count).__name__})")
    if count < 1:
        raise ValueError(f"count must be a positive int (a number of GPUs), got {count!r}")
    return int(count)


def _check_utilization(utilization) -> float:
    if isinstance(utilization, bool) or not isinstance(utilization, numbers.Real):
        raise TypeError(f"utilization must be a number in (0, 1], got {utilization!r}")
    if not (0 < utilization <= 1):
        raise ValueError(f"utilization must be in (0, 1] (a fraction of peak), got {utilization!r}")
    return float(utilization)


def sustained_FLOPS(device: str | Device, count: int = 1, utilization: float = 0.4,
                    precision: str = "fp16") -> float:
    """FLOP/s that ``count`` devices sustain at ``utilization`` of their dense ``precision`` peak.

    Raises:
        ValueError: unknown device or precision, the device lacks that precision, count < 1, or
            utilization outside (0, 1].
        TypeError: count is not an int, or utilization not a number.
    """
    dev = hardware.get(device)
    count = _check_count(count)
    utilization = _check_utilization(utilization)
    return count * dev.peak_TFLOPS(precision) * 1e12 * utilization


def training_time_s(flops: float, device: str | Device, count: int = 1, utilization: float = 0.4,
                    precision: str = "fp16") -> float:
    """Seconds to do ``flops`` floating-point operations on ``count`` devices.

    Args:
        flops: total work of the training run (FLOP, not FLOP/s), > 0.
        device: a name from :func:`scaledl.perf.hardware.names` (or an alias such as "A100"), or a Device.
        count: number of devices, a positive int; scaling is assumed perfect.
        utilization: achieved fraction of the dense peak, in (0, 1].
        precision: "fp32", "tf32", "fp16", "bf16", "fp8", ...; the device must have a rate for it.

    Raises:
        ValueError: any argument out of range, or an unknown device/precision.

    >>> round(training_time_s(1e15, "K40", precision="fp32", utilization=1.0), 1)  # 1e15 / 4.29e12
    233.1
    """
    flops = positive("flops", flops, what="a positive number of floating-point operations")
    return flops / sustained_FLOPS(device, count, utilization, precision)


def training_time_days(flops: float, device: str | Device, count: int = 1, utilization: float = 0.4,
                       precision: str = "fp16") -> float:
    """:func:`training_time_s` in days."""
    return training_time_s(flops, device, count, utilization, precision) / SECONDS_PER_DAY


def trainable_flops(time_s: float, device: str | Device, count: int = 1, utilization: float = 0.4,
                    precision: str = "fp16") -> float:
    """The work (FLOP) that ``count`` devices finish in ``time_s`` seconds: the inverse of training_time_s."""
    time_s = positive("time_s", time_s, what="a positive duration in seconds")
    return time_s * sustained_FLOPS(device, count, utilization, precision)


def devices_needed(flops: float, device: str | Device, time_s: float, utilization: float = 0.4,
                   precision: str = "fp16") -> int:
    """The smallest number of devices that finishes ``flops`` within ``time_s`` seconds."""
    flops = positive("flops", flops, what="a positive number of floating-point operations")
    per_device = trainable_flops(time_s, device, 1, utilization, precision)
    # a hair of tolerance so that an exact fit (e.g. 8 devices for exactly 8 devices' work) is not rounded up
    return max(1, math.ceil(flops / per_device * (1 - 1e-12)))


def format_duration(time_s: float) -> str:
    """A duration in the unit a person would use: '45 s', '3.2 h', '12.5 days', '3.4 years'."""
    time_s = positive("time_s", time_s, what="a positive duration in seconds")
    for unit, seconds in (("years", 365.25 * SECONDS_PER_DAY), ("days", SECONDS_PER_DAY), ("h", 3600),
                          ("min", 60)):
        if time_s >= (2 * seconds if unit == "years" else seconds):
            return _count(time_s / seconds, unit)
    return f"{time_s:.3g} s"


def _count(value: float, unit: str) -> str:
    """'1 day', '1.5 days', '3 PF-days': the unit is singular when the printed number is exactly 1."""
    text = f"{value:.3g}"
    if text == "1" and unit.endswith("s") and unit not in ("s", "h", "min"):
        unit = unit[:-1]
    return f"{text} {unit}"
