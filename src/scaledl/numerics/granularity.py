"""Scale granularity: one scale per tensor, per channel, per vector of 32 (VS-Quant), OCP MX and NVFP4 blocks.

Every function returns a :class:`Quantized`: ``values`` (the dequantized float32 array, ``x``'s shape) and
``scales`` (one per group, shaped like ``x`` with the grouped axis replaced by the number of groups), so that
``values`` is what a matrix multiply would see and ``scales`` is what would be stored beside the codes.

* :func:`quantize_per_tensor`, :func:`quantize_per_channel`: a chooser from :mod:`scaledl.numerics.scaling`
  (``"max"``, ``"percentile"``, ``"mse"``, ``"octav"``) for the whole tensor or each slice along ``axis``.
* :func:`quantize_per_vector`: max scaling of each ``block``-element vector along ``axis`` (Dally's lecture,
  2023: scaling each 32-element vector independently). With ``scale_fmt`` (e.g. ``"uint6"``), the per-vector scales are
  themselves quantized against one float per tensor: the two-level scheme of VS-Quant (Dai et al., MLSys 2021).
* :func:`mx_quantize`: OCP Microscaling v1.0 (REFERENCES.md): blocks of 32 share an E8M0 power of two,
  ``2**(floor(log2 max|v|) - emax_elem)``; elements are ``v / 2**shared`` rounded to the element format with
  saturation. MXFP8 (e4m3/e5m2), MXFP6 (e3m2/e2m3), MXFP4 (e2m1), MXINT8 (int8 elements with 6 fractional bits).
* :func:`nvfp4_quantize`: NVIDIA's NVFP4: blocks of 16 E2M1 values, an E4M3 block scale ``amax_block / 6``
  encoded against an FP32 tensor scale ``6 * 448 / amax(tensor)``.

A block size that does not divide the axis raises ValueError unless ``pad=True`` (zeros pad the last block;
they never change a block's maximum, so the scales are those of the unpadded data).

>>> import numpy as np
>>> x = np.array([[0.1, -3.0, 0.02, 1.0]])
>>> mx_quantize(x, element="e2m1", block=4).values.tolist()
[[0.0, -3.0, 0.0, 1.0]]
>>> mx_quantize(x, element="e2m1", block=4).scales.tolist()
[[0.5]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scaledl.numerics.formats import FloatFormat, get_format
from scaledl.numerics.quantize import quantize
from scaledl.numerics.scaling import choose_scale

__all__ = ["Quantized", "quantize_per_tensor", "quantize_per_channel", "quantize_per_vector", "mx_quantize",
           "nvfp4_quantize", "MX_FORMATS", "E8M0_EXP_RANGE", "NVFP4_BLOCK", "MX_BLOCK"]

MX_BLOCK = 32  # OCP MX v1.0: elements per shared scale
NVFP4_BLOCK = 16  # NVIDIA NVFP4: elements per E4M3 block scale
E8M0_EXP_RANGE = (-127, 127)  # E8M0 encodes 2**-127 .. 2**127 (0xFF is NaN)
MXINT8_FRAC_BITS = 6  # MXINT8 elements: two's complement with an implicit 2**-6 (largest 127/64 = 1.984375)
MX_FORMATS = {"mxfp8_e4m3": "e4m3", "mxfp8_e5m2": "e5m2", "mxfp6_e3m2": "e3m2", "mxfp6_e2m3": "e2m3",
              "mxfp4": "e2m1", "mxint8": "int8"}


@dataclass(frozen=True)
class Quantized:
    """Dequantized values and the scales that produced them (one per group, along the grouped axis)."""

    values: np.ndarray
    scales: np.ndarray
    block: int | None = None
    axis: int | None = None


def _finite(x, name="x") -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0:
        a = a.reshape(1)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite for block scaling; it holds "
                         f"{np.count_nonzero(~np.isfinite(a))} NaN/inf value(s)")
    return a


def _blocks(a: np.ndarray, block: int, axis: int, pad: bool):
    """Move ``axis`` last and split it into (n_blocks, block); return the view and how to undo it."""
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"block must be a positive int, got {block!r}")
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"axis {axis} is out of range for x with {a.ndim} dimension(s)")
    moved = np.moveaxis(a, axis, -1)
    n = moved.shape[-1]
    extra = (-n) % block
    if extra and not pad:
        raise ValueError(f"x: size {n} along axis {axis} is not divisible by block size {block}; pass pad=True "
                         "to pad the last block with zeros")
    if extra:
        moved = np.concatenate([moved, np.zeros(moved.shape[:-1] + (extra,))], axis=-1)
    grouped = moved.reshape(moved.shape[:-1] + (moved.shape[-1] // block, block))

    def undo(values, scales):
        v = values.reshape(moved.shape)[..., :n]
        return np.moveaxis(v, -1, axis).astype(np.float32), np.moveaxis(scales, -1, axis).astype(np.float32)

    return grouped, undo


def _apply(grouped, scales, fmt, **kw):
    """Quantize each block with its scale; a zero scale (an all-zero block) gives zeros."""
    safe = np.where(scales > 0, scales, 1.0)[..., None]
    q = quantize(grouped, fmt, scale=safe, **kw).astype(np.float64)
    return np.where(scales[..., None] > 0, q, 0.0)


def quantize_per_tensor(x, fmt, *, method: str = "max", **kw) -> Quantized:
    """One scale for the whole tensor, chosen by ``method`` (see :func:`scaledl.numerics.scaling.choose_scale`)."""
    a = _finite(x)
    s = choose_scale(a, fmt, method, **kw)
    return Quantized(quantize(np.asarray(x, dtype=np.float64), fmt, scale=s), np.array(s, dtype=np.float32))


def quantize_per_channel(x, fmt, *, axis: int = 0, method: str = "max", **kw) -> Quantized:
    """One scale per index along ``axis`` (e.g. per output channel of a weight matrix)."""
    a = _finite(x)
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"axis {axis} is out of range for x with {a.ndim} dimension(s)")
    moved = np.moveaxis(a, axis, 0)
    scales = np.array([choose_scale(ch, fmt, method, **kw) for ch in moved])
    shape = [1] * a.ndim
    shape[axis] = -1
    s = scales.reshape(shape)
    return Quantized(quantize(a, fmt, scale=s), s.astype(np.float32), axis=axis)


def quantize_per_vector(x, fmt="int4", *, block: int = 32, axis: int = -1, scale_fmt=None,
                        pad: bool = False) -> Quantized:
    """Max scaling of each ``block``-element vector along ``axis``; optionally quantized scales (VS-Quant).

    Args:
        scale_fmt: None keeps the per-vector scales in float32. A format (``"uint4"``, ``"uint6"``, ``"e4m3"``)
            quantizes them as ``gamma * q`` with one float32 ``gamma = max(scale) / scale_fmt.max_value`` per
            tensor. Scales are rounded *up* to the scale grid, so no element of a vector clips because its
            scale shrank.
    """
    a = _finite(x)
    spec = get_format(fmt)
    grouped, undo = _blocks(a, block, axis, pad)
    scales = np.abs(grouped).max(axis=-1) / spec.max_value
    if scale_fmt is not None:
        sspec = get_format(scale_fmt)
        if sspec.kind == "log":
            raise ValueError(f"scale_fmt: use an integer or float format, got {sspec.name!r}")
        top = scales.max()
        if top > 0:
            gamma = top / sspec.max_value
            grid = sspec.magnitudes() * gamma
            idx = np.clip(np.searchsorted(grid, scales * (1 - 1e-12), side="left"), 0, grid.size - 1)
            scales = grid[idx]
    return Quantized(*undo(_apply(grouped, scales, spec), scales), block=block, axis=axis)


def _shared_exponent(amax, emax_elem):
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - emax_elem
    e = np.where(amax > 0, e, E8M0_EXP_RANGE[0])  # an all-zero block: any scale works; use the smallest
    return np.clip(e, *E8M0_EXP_RANGE)


def mx_quantize(x, element: str = "e2m1", *, block: int = MX_BLOCK, axis: int = -1, pad: bool = False) -> Quantized:
    """OCP MX: each block of ``block`` values shares the E8M0 scale ``2**(floor(log2 max|v|) - emax_elem)``.

    Args:
        element: ``"e4m3"``, ``"e5m2"`` (MXFP8), ``"e3m2"``, ``"e2m3"`` (MXFP6), ``"e2m1"`` (MXFP4), ``"int8"``
            (MXINT8), or an MX name such as ``"mxfp4"``.
    Returns:
        :class:`Quantized` with the dequantized values and the power-of-two block scales.
    Raises:
        ValueError: an element format MX does not define; a block that does not divide the axis (without pad).
    """
    name = MX_FORMATS.get(str(element).lower(), element)
    spec = get_format(name)
    if spec.name not in MX_FORMATS.values():
        raise ValueError(f"element must be one of {sorted(set(MX_FORMATS.values()))} (or {sorted(MX_FORMATS)}), "
                         f"got {element!r}")
    a = _finite(x)
    grouped, undo = _blocks(a, block, axis, pad)
    amax = np.abs(grouped).max(axis=-1)
    if isinstance(spec, FloatFormat):
        emax_elem = spec.emax
        elem_scale = 1.0
    else:  # MXINT8: the element's largest power of two is 2**0 (values k / 64, k in [-128, 127])
        emax_elem = 0
        elem_scale = 2.0 ** -MXINT8_FRAC_BITS
    scales = np.exp2(_shared_exponent(amax, emax_elem))
    q = quantize(grouped / scales[..., None], spec, scale=elem_scale).astype(np.float64) * scales[..., None]
    return Quantized(*undo(q, scales), block=block, axis=axis)


NVFP4_E2M1_MAX = 6.0  # largest E2M1 value
NVFP4_E4M3_MAX = 448.0  # largest E4M3 value


def nvfp4_quantize(x, *, block: int = NVFP4_BLOCK, axis: int = -1, pad: bool = False) -> Quantized:
    """NVFP4: E2M1 elements in blocks of 16, each block scale in E4M3, one FP32 scale for the tensor.

    The tensor's encode scale ``6 * 448 / amax(x)`` maps the largest block's decode scale ``amax_block / 6``
    onto E4M3's largest value; each block's E4M3 code is ``quantize(amax_block / 6 * encode_scale, "e4m3")``
    and its effective scale is that code divided by the encode scale. ``scales`` holds the effective scales.
    """
    a = _finite(x)
    grouped, undo = _blocks(a, block, axis, pad)
    amax_t = np.abs(a).max() if a.size else 0.0
    if amax_t == 0:
        return Quantized(*undo(np.zeros_like(grouped), np.zeros(grouped.shape[:-1])), block=block, axis=axis)
    encode = NVFP4_E2M1_MAX * NVFP4_E4M3_MAX / amax_t
    block_decode = np.abs(grouped).max(axis=-1) / NVFP4_E2M1_MAX
    stored = quantize(block_decode * encode, "e4m3").astype(np.float64)  # the E4M3 block scale
    scales = stored / encode
    return Quantized(*undo(_apply(grouped, scales, "e2m1"), scales), block=block, axis=axis)
