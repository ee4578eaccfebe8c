"""Clipping and scale granularity, measured: noise split, equivalent bits, and int4 inference of an MLP.

Builds on :mod:`scaledl.numerics.scaling` (OCTAV) and :mod:`scaledl.numerics.granularity` (MX, NVFP4). The
groups of a tensor are always taken along its *reduction* axis (the axis a dot product sums over), so that
every scale can be applied once after the multiply-accumulate, as the accelerator in Dally's lecture (2023)
does (``SW * SA``):

* ``"tensor"``: one scale;
* ``"channel"``: one scale per index of the other axis (per output column of a weight, per example row of
  an activation);
* ``"vector"``: one scale per 32 consecutive elements along the reduction axis (VS-Quant, as in Dally's
  lecture);
* ``"mx"``: OCP MXFP4 (E2M1 elements, E8M0 scale per 32); ``"nvfp4"``: E2M1, E4M3 scale per 16, FP32 tensor.

>>> import numpy as np
>>> x = np.random.default_rng(0).standard_normal((64, 64))
>>> e_t = np.mean((fake_quant(x, bits=4, granularity="tensor", clipping="max") - x) ** 2)
>>> e_v = np.mean((fake_quant(x, bits=4, granularity="vector", clipping="max") - x) ** 2)
>>> bool(e_v < e_t)
True
"""

from __future__ import annotations

import functools
import math

import numpy as np

from scaledl.numerics import mx_quantize, nvfp4_quantize, quantize

__all__ = ["clip_noise_split", "model_noise", "equivalent_bits", "fake_quant", "GRANULARITIES", "CLIPPINGS",
           "SCHEMES", "scheme_label", "granularity_gains", "quantized_accuracy", "accuracy_over_seeds",
           "trained_digits_mlp", "mlp_quantization_summary", "VECTOR"]

GRANULARITIES = ("tensor", "channel", "vector", "mx", "nvfp4")
CLIPPINGS = ("max", "octav")
VECTOR = 32  # Dally's lecture (2023): scale each 32-element vector independently
# every (granularity, clipping) pair the chapter compares; MX and NVFP4 fix their own scales (max-based)
SCHEMES = (("tensor", "max"), ("tensor", "octav"), ("channel", "max"), ("channel", "octav"),
           ("vector", "max"), ("vector", "octav"), ("mx", "max"), ("nvfp4", "max"))


def scheme_label(granularity: str, clipping: str) -> str:
    """Short display name: ``"vector / octav"``, or ``"MXFP4"``/``"NVFP4"`` for the block float formats."""
    return {"mx": "MXFP4", "nvfp4": "NVFP4"}.get(granularity, f"{granularity} / {clipping}")


def _int_fmt(bits: int, signed: bool) -> str:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 2 <= bits <= 16:
        raise ValueError(f"bits must be an int in [2, 16], got {bits!r}")
    return f"{'' if signed else 'u'}int{bits}"


def clip_noise_split(x, bits: int, clips) -> dict[str, np.ndarray]:
    """MSE of a signed ``bits``-bit integer quantizer clipped at each of ``clips``, split in two.

    ``clipping``: squared error of the values with ``|x| > c`` (they saturate), ``quantization``: of the
    rest; both divided by the total count, so they add up to ``total``.
    """
    fmt = _int_fmt(bits, True)
    x = np.asarray(x, np.float64).ravel()
    a = np.abs(x)
    out = {k: np.empty(len(clips)) for k in ("clipping", "quantization", "total")}
    qmax = 2 ** (bits - 1) - 1
    for i, c in enumerate(clips):
        err2 = (quantize(x, fmt, scale=c / qmax).astype(np.float64) - x) ** 2
        over = a > c
        out["clipping"][i] = err2[over].sum() / x.size
        out["quantization"][i] = err2[~over].sum() / x.size
        out["total"][i] = err2.mean()
    return out


def model_noise(x, bits: int, clips) -> np.ndarray:
    """The noise model behind OCTAV (as Dally's lecture gives it, with a step of ``2c / 2**B``):
    ``c**2 4**-B / 3 * P(|X| <= c) + E[(|X| - c)**2 1{|X| > c}]``."""
    a = np.abs(np.asarray(x, np.float64).ravel())
    return np.array([c * c * 4.0 ** -bits / 3 * np.mean(a <= c) + np.mean(np.where(a > c, (a - c) ** 2, 0.0))
                     for c in clips])


def equivalent_bits(mse_before: float, mse_after: float) -> float:
    """Bits of precision an MSE reduction is worth: each bit divides a uniform quantizer's MSE by 4.

    >>> equivalent_bits(1.0, 1 / 16)
    2.0
    """
    if not (mse_before > 0 and mse_after > 0):
        raise ValueError(f"MSEs must be > 0, got {mse_before!r} and {mse_after!r}")
    return 0.5 * math.log2(mse_before / mse_after)


def _octav_rows(a: np.ndarray, bits: int, iters: int = 30) -> np.ndarray:
    """OCTAV's iteration run independently on every row of ``|a|`` (vectorized); rows all-zero give 0."""
    noise = 4.0 ** -bits / 3
    c = a.mean(axis=1)
    for _ in range(iters):
        over = a > c[:, None]
        num = np.where(over, a, 0).sum(axis=1)
        n_over = over.sum(axis=1)
        new = num / (noise * (a.shape[1] - n_over) + np.maximum(n_over, 1))
        c = np.where(n_over > 0, new, a.mean(axis=1))
    return np.minimum(c, a.max(axis=1))  # clipping above the maximum is never better


def _clip(a: np.ndarray, bits_eff: int, clipping: str) -> np.ndarray:
    """Clip points for each row of ``|a|`` (rows are groups)."""
    if clipping == "max":
        return a.max(axis=1)
    return _octav_rows(a, bits_eff)


def fake_quant(x, *, bits: int = 4, granularity: str = "vector", clipping: str = "max", reduce_axis: int = -1,
               signed: bool | None = None) -> np.ndarray:
    """Quantize and dequantize a 2-D tensor with the given bits, scale granularity and clipping rule.

    Args:
        x: 2-D array (weights ``(n_in, n_out)`` reduce over axis 0; activations ``(batch, n_in)`` over 1).
        bits: integer bits (ignored by "mx" and "nvfp4", which are 4-bit floats).
        granularity: one of :data:`GRANULARITIES`.
        clipping: "max" (nothing clips) or "octav" (OCTAV's optimal clip, per group).
        reduce_axis: the dot product's axis; groups run along it.
        signed: integer grid signed or unsigned; default unsigned when ``x >= 0`` (ReLU outputs, pixels),
            which gives nonnegative data one more bit of resolution. OCTAV then uses ``bits + 1``.
    Raises:
        ValueError: unknown granularity or clipping, ``x`` not 2-D, or a vector size not dividing the axis.
    """
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {GRANULARITIES}, got {granularity!r}")
    if clipping not in CLIPPINGS:
        raise ValueError(f"clipping must be one of {CLIPPINGS}, got {clipping!r}")
    x = np.asarray(x, np.float32)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D, got shape {x.shape}")
    if granularity == "mx":
        return mx_quantize(x, "e2m1", axis=reduce_axis, pad=True).values
    if granularity == "nvfp4":
        return nvfp4_quantize(x, axis=reduce_axis, pad=True).values
    if signed is None:
        signed = bool(x.min() < 0)
    fmt = _int_fmt(bits, signed)
    qmax = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    bits_eff = bits if signed else bits + 1
    m = np.moveaxis(x, reduce_axis, -1)  # (other, reduce)
    other, n = m.shape
    if granularity == "tensor":
        groups = m.reshape(1, -1)
    elif granularity == "channel":
        groups = m
    else:
        if n % VECTOR:
            raise ValueError(f"the reduction axis has {n} elements; per-vector scaling needs a multiple of {VECTOR}")
        groups = m.reshape(-1, VECTOR)
    c = _clip(np.abs(groups).astype(np.float64), bits_eff, clipping)
    scale = np.where(c > 0, c / qmax, 1.0)[:, None]
    q = quantize(groups, fmt, scale=scale).reshape(other, n)
    return np.moveaxis(q, -1, reduce_axis)


def granularity_gains(x, *, bits: int = 4, reduce_axis: int = -1, schemes=SCHEMES) -> dict:
    """Relative MSE of each scheme on the 2-D tensor ``x`` and the bits it gains over per-tensor max scaling.

    Returns:
        ``{(granularity, clipping): (relative_mse, bits_gained)}`` where ``relative_mse`` is
        ``mean((q - x)**2) / mean(x**2)`` and ``bits_gained`` is :func:`equivalent_bits` against
        ``("tensor", "max")`` (always computed, even when not among ``schemes``).

    >>> x = np.random.default_rng(0).standard_normal((64, 64)) * np.exp(np.linspace(-2, 2, 64))[:, None]
    >>> gains = granularity_gains(x, bits=4, reduce_axis=1, schemes=[("channel", "max")])
    >>> round(gains["channel", "max"][1], 1)   # rows 50x apart in size: per-row scales gain over a bit
    1.4
    """
    x = np.asarray(x, np.float32)
    power = float(np.mean(x.astype(np.float64) ** 2))
    if not power > 0:
        raise ValueError(f"x must have a nonzero entry, got all zeros of shape {x.shape}")

    def rel(g, c):
        q = fake_quant(x, bits=bits, granularity=g, clipping=c, reduce_axis=reduce_axis)
        return float(np.mean((q.astype(np.float64) - x) ** 2)) / power

    base = rel("tensor", "max")
    out = {}
    for g, c in schemes:
        r = base if (g, c) == ("tensor", "max") else rel(g, c)
        out[g, c] = (r, equivalent_bits(base, r))
    return out


@functools.lru_cache(maxsize=8)
def trained_digits_mlp(seed: int = 0, steps: int = 1200):
    """A 64-128-128-10 MLP trained on digits in FP32 (about two seconds), and the data; cached per process."""
    from scaledl.nn import SGD, digits, mlp, train

    data = digits()
    model = mlp([64, 128, 128, 10], seed=seed)
    train(model, data, steps=steps, batch_size=32, optimizer=SGD(lr=0.05, momentum=0.9), seed=seed)
    return model, data


def quantized_accuracy(model, data, *, bits: int = 4, granularity: str = "vector", clipping: str = "max",
                       activations: bool = True) -> float:
    """Test accuracy of ``model`` with fake-quantized weights (and activations, the inputs of every layer)."""
    from scaledl.nn import evaluate

    wq = lambda W: fake_quant(W, bits=bits, granularity=granularity, clipping=clipping,  # noqa: E731
                              reduce_axis=0, signed=True)
    aq = lambda a: fake_quant(a, bits=bits, granularity=granularity, clipping=clipping,  # noqa: E731
                              reduce_axis=1)
    model.set_fake_quant(weights=wq, activations=aq if activations else None)
    try:
        return evaluate(model, data.x_test, data.y_test)[1]
    finally:
        model.set_fake_quant(None, None)


def accuracy_over_seeds(seeds=(0, 1, 2, 3, 4), bits=(4, 3), schemes=SCHEMES) -> dict:
    """Test accuracy of the digits MLP trained from each seed, in FP32 and fake-quantized by each scheme.

    Returns:
        ``{"fp32": array(len(seeds)), (granularity, clipping, bits): array(len(seeds))}``. MX and NVFP4 are
        4-bit floats: they appear only under ``bits == 4``. One test image is ``1 / 450`` = 0.22 %.
    """
    from scaledl.nn import evaluate

    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must name at least one seed, got an empty list")
    out = {"fp32": np.empty(len(seeds))}
    for i, seed in enumerate(seeds):
        model, data = trained_digits_mlp(seed)
        out["fp32"][i] = evaluate(model, data.x_test, data.y_test)[1]
        for g, c in schemes:
            for b in bits:
                if g in ("mx", "nvfp4") and b != 4:
                    continue
                out.setdefault((g, c, b), np.empty(len(seeds)))[i] = quantized_accuracy(
                    model, data, bits=b, granularity=g, clipping=c)
    return out


def mlp_quantization_summary(model, data, *, bits: int = 4, granularity: str = "vector",
                             clipping: str = "octav") -> dict:
    """Relative weight MSE of every dense layer and the test accuracy of ``model``, quantized so.

    Returns:
        ``{"weight_mse": {layer_name: relative MSE}, "accuracy": float, "fp32_accuracy": float}``.
    """
    from scaledl.nn import evaluate

    mse = {}
    for name, W in model.parameters().items():
        if W.ndim == 2:
            q = fake_quant(W, bits=bits, granularity=granularity, clipping=clipping, reduce_axis=0, signed=True)
            mse[name] = float(np.mean((q.astype(np.float64) - W) ** 2) / np.mean(W.astype(np.float64) ** 2))
    return {"weight_mse": mse,
            "accuracy": quantized_accuracy(model, data, bits=bits, granularity=granularity, clipping=clipping),
            "fp32_accuracy": evaluate(model, data.x_test, data.y_test)[1]}
