"""Bytes and time per RNN time step: a standard kernel re-reads W from DRAM, a persistent one keeps it on chip.

One step of ``h_t = f(W h_{t-1} + z_t)`` at hidden size ``H`` and batch ``B`` does ``2 H^2 B`` FLOPs. A standard
kernel (one launch per step) reads all ``H^2`` weights from DRAM every step, plus the small state (read
``h_{t-1}`` and ``z_t``, write ``h_t``: ``3 B H`` values), so its intensity is about ``2 B / e`` FLOP per byte
for ``e``-byte weights: at ``B = 4`` in fp32, 2 FLOP/byte, far below any GPU's ridge point. A persistent kernel
loads W once for all ``steps`` and then moves only the state, so the same step can be compute bound. Whether W
fits on chip is the catch: Bryan Catanzaro's slides ("Scaling Deep Learning", Baidu SVAIL, about 2016: "Supports
up to 1152 neurons on TitanX ... 5 MB of user data pinned in registers") put ``1152^2 x 4 B = 5.06 MiB`` of fp32
weights into the Titan X's 24 x 256 KiB = 6 MiB register file (Diamos et al., "Persistent RNNs: Stashing
Recurrent Weights On-Chip", ICML 2016, who report 2.8 TFLOP/s at mini-batch 4 on that GPU).

Intensities, with ``e``-byte elements and W spread over ``steps``: standard ``2 H B / (e (H + 3 B))``, about
``2 B / e``; persistent ``2 H B / (e (H / steps + 3 B))``, which grows as ``2 steps B / e`` at small batch and
tends to ``2 H / (3 e)`` (``H / 6`` in fp32) only once ``3 B`` outweighs ``H / steps``.

>>> round(PERSISTENT_RNN_HIDDEN_TITAN_X**2 * 4 / 2**20, 2), TITAN_X.register_file_bytes / 2**20  # MiB
(5.06, 6.0)
>>> max_hidden_on_chip(TITAN_X.register_file_bytes), max_hidden_on_chip(H100_SXM.register_file_bytes)
(1254, 2941)
>>> s = rnn_step_traffic(1152, 4, device="GTX Titan X")
>>> round(s.standard_time_s * 1e6, 1), round(s.persistent_time_s * 1e6, 2)     # microseconds per step
(15.9, 1.61)
>>> round(s.standard_TFLOPS, 2), round(s.persistent_TFLOPS, 2)                 # roofline bounds
(0.67, 6.6)
>>> round(rnn_step_traffic(1152, 1).persistent_intensity_FLOP_per_byte, 1)     # fp32, 100 steps: not H/6 = 192
39.7
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scaledl._args import positive

KiB = 1024


@dataclass(frozen=True)
class OnChip:
    """The on-chip storage of one GPU that a persistent kernel can pin weights in."""

    name: str
    sms: int
    register_file_per_sm_bytes: int
    shared_per_sm_bytes: int  # the most an SM can configure as shared memory
    citation: str

    @property
    def register_file_bytes(self) -> int:
        return self.sms * self.register_file_per_sm_bytes

    @property
    def shared_bytes(self) -> int:
        return self.sms * self.shared_per_sm_bytes


# Maxwell and Hopper SMs both hold 64 K 32-bit registers (CUDA C++ Programming Guide, table "Technical
# Specifications per Compute Capability", cc 5.2 and 9.0).
TITAN_X = OnChip("GTX Titan X", 24, 256 * KiB, 96 * KiB,
                 "GM200: 3072 CUDA cores in 24 SMMs of 128 (NVIDIA GeForce GTX TITAN X specifications, 2015); 64 K "
                 "registers and 96 KiB shared memory per SM (CUDA C++ Programming Guide, cc 5.2; Maxwell Tuning "
                 "Guide)")
H100_SXM = OnChip("H100 SXM", 132, 256 * KiB, 228 * KiB,
                  "132 SMs on H100 SXM5 (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022); 64 K registers "
                  "and up to 228 KiB shared memory per SM, 227 KiB per block (NVIDIA Hopper Tuning Guide)")
# Bryan Catanzaro, "Scaling Deep Learning" (slides, Baidu SVAIL, about 2016), on the persistent RNN kernel:
# "Supports up to 1152 neurons on TitanX".
PERSISTENT_RNN_HIDDEN_TITAN_X = 1152
DIAMOS_TFLOPS_BATCH_4 = 2.8  # Diamos et al., ICML 2016 (abstract): Titan X, mini-batch 4


def max_hidden_on_chip(capacity_bytes: float, bytes_per_element: int = 4) -> int:
    """Largest square ``H x H`` weight matrix of ``bytes_per_element`` that fits in ``capacity_bytes``."""
    c, e = positive("capacity_bytes", capacity_bytes), positive("bytes_per_element", bytes_per_element)
    return math.isqrt(int(c // e))


@dataclass(frozen=True)
class RnnStepTraffic:
    """One RNN step's work and DRAM traffic, standard vs persistent, and roofline times on one device."""

    hidden: int
    batch: int
    steps: int
    bytes_per_element: int
    flops: int
    weight_bytes: int
    state_bytes: int
    standard_time_s: float
    persistent_time_s: float

    @property
    def standard_bytes(self) -> int:
        """W from DRAM every step, plus the state."""
        return self.weight_bytes + self.state_bytes

    @property
    def persistent_bytes(self) -> float:
        """W once per sequence (spread over its steps), plus the state."""
        return self.weight_bytes / self.steps + self.state_bytes

    @property
    def standard_intensity_FLOP_per_byte(self) -> float:
        """``2 H^2 B / (e (H^2 + 3 B H))``: about ``2 B / e``."""
        return self.flops / self.standard_bytes

    @property
    def persistent_intensity_FLOP_per_byte(self) -> float:
        """``2 H^2 B / (e (H^2 / steps + 3 B H))``: see :func:`persistent_intensity`."""
        return self.flops / self.persistent_bytes

    @property
    def standard_TFLOPS(self) -> float:
        return self.flops / self.standard_time_s / 1e12

    @property
    def persistent_TFLOPS(self) -> float:
        return self.flops / self.persistent_time_s / 1e12


def persistent_intensity(hidden: int, batch, *, steps: int = 100, bytes_per_element: int = 4):
    """Closed form of the persistent kernel's FLOP per byte: ``2 H B / (e (H / steps + 3 B))``.

    From ``2 H^2 B`` FLOPs over ``e H^2 / steps`` bytes of W plus ``3 e B H`` of state. In fp32 with 100 steps,
    ``50 H B / (H + 300 B)``: about ``50 B`` while ``B << H / 300`` and ``H / 6`` only as ``B`` grows past it.
    ``batch`` may be an array.

    >>> round(persistent_intensity(1152, 1), 2), round(persistent_intensity(1152, 10**9), 1), 1152 / 6
    (39.67, 192.0, 192.0)
    """
    for name, v in (("hidden", hidden), ("steps", steps), ("bytes_per_element", bytes_per_element)):
        positive(name, v)
    b = np.asarray(batch, dtype=np.float64)
    if not np.all(b > 0):
        raise ValueError(f"batch must be > 0, got {batch!r}")
    out = 2 * hidden * b / (bytes_per_element * (hidden / steps + 3 * b))
    return float(out) if out.ndim == 0 else out


def rnn_step_traffic(hidden: int, batch: int, *, steps: int = 100, precision: str = "fp32",
                     device: str = "GTX Titan X", sync_s: float = 0.0) -> RnnStepTraffic:
    """Bytes and roofline time of one step, standard vs persistent.

    Args:
        hidden, batch: the step's sizes.
        steps: time steps per sequence, over which the persistent kernel's one load of W is spread.
        precision: of weights and state (``"fp32"``, ``"fp16"``, ...).
        device: a device of :mod:`scaledl.perf.hardware` whose roofline gives the times.
        sync_s: time added to every persistent step for the grid-wide barrier (0: the ideal).

    The model does not check that W fits on chip: compare ``weight_bytes`` with an :class:`OnChip`.
    """
    from scaledl.perf.roofline import BYTES_PER_ELEMENT, roofline_of

    for name, v in (("hidden", hidden), ("batch", batch), ("steps", steps)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if precision not in BYTES_PER_ELEMENT:
        raise ValueError(f"precision={precision!r}; expected one of {sorted(BYTES_PER_ELEMENT)}")
    if not (sync_s >= 0 and math.isfinite(sync_s)):
        raise ValueError(f"sync_s must be a finite number >= 0, got {sync_s!r}")
    e = BYTES_PER_ELEMENT[precision]
    roof = roofline_of(device, precision)
    flops = 2 * hidden * hidden * batch
    weight_bytes, state_bytes = hidden * hidden * e, 3 * batch * hidden * e
    standard_s = roof.time_s(flops, weight_bytes + state_bytes)
    persistent_s = roof.time_s(flops, weight_bytes / steps + state_bytes) + sync_s
    return RnnStepTraffic(hidden, batch, steps, e, flops, weight_bytes, state_bytes, standard_s, persistent_s)


ON_CHIP = {TITAN_X.name: TITAN_X, H100_SXM.name: H100_SXM}
