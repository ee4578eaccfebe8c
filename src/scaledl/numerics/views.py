"""The number-format chapters' widget views: formats' relative error (chapter 07), logarithmic against
floating-point rounding (chapter 08), a quantized MLP (chapter 09), repeated addition in low precision
(chapter 10). Each draws what :mod:`scaledl.numerics`' models compute and imports matplotlib inside the
function (ARCHITECTURE.md, the views rule).
"""

from __future__ import annotations


import numpy as np

from scaledl.numerics.clipping_study import mlp_quantization_summary, scheme_label, trained_digits_mlp
from scaledl.numerics.logarithmic import NEAREST_VALUE, lns_quantize
from scaledl.numerics.logarithmic_compare import round_float_mantissa
from scaledl.numerics.formats import get_format
from scaledl.numerics.mixed import half_ulp, repeated_add
from scaledl.numerics.systems import error_envelope


def view_quantized_mlp(bits: int = 4, granularity: str = "vector", clipping: str = "octav"):
    """Explorer view: per-layer weight MSE and test accuracy of the digits MLP, quantized as chosen.

    Left, the relative weight MSE of each layer for the chosen scheme beside per-tensor max scaling at the
    same bits (log axis); right, the test accuracy of both beside FP32. Takes well under a second once the
    model is trained (cached).
    """
    import matplotlib.pyplot as plt

    model, data = trained_digits_mlp()
    chosen = mlp_quantization_summary(model, data, bits=bits, granularity=granularity, clipping=clipping)
    base = mlp_quantization_summary(model, data, bits=bits, granularity="tensor", clipping="max")
    label = scheme_label(granularity, clipping)
    bits_text = "4-bit float elements" if granularity in ("mx", "nvfp4") else f"{bits}-bit integers"
    names = list(chosen["weight_mse"])
    pos = np.arange(len(names))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [3, 2]})
    ax1.bar(pos - 0.2, [base["weight_mse"][n] for n in names], 0.4, color="tab:gray", label="tensor / max")
    ax1.bar(pos + 0.2, [chosen["weight_mse"][n] for n in names], 0.4, color="tab:blue", label=label)
    ax1.set_xticks(pos, names)
    ax1.set_yscale("log")
    ax1.set_ylabel("weight MSE / mean(W^2)")
    ax1.set_title(f"Weights, {bits_text}")
    # below the axes, where it cannot cover a bar whatever the bars' heights
    ax1.legend(fontsize=8, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    accs = [chosen["fp32_accuracy"], base["accuracy"], chosen["accuracy"]]
    bars = ax2.bar(["FP32", "tensor / max", label], [100 * a for a in accs],
                   color=["tab:green", "tab:gray", "tab:blue"])
    for bar, a in zip(bars, accs):
        ax2.annotate(f"{100 * a:.2f} %", (bar.get_x() + bar.get_width() / 2, 100 * a), ha="center",
                     va="bottom", fontsize=8)
    ax2.set_ylim(max(0.0, 100 * min(accs) - 10), 100)
    ax2.set_ylabel("test accuracy (%)")
    ax2.set_title(f"Whole MLP ({len(data.y_test)} test images)")
    fig.suptitle(f"Digits MLP: {label}, {bits_text}, weights and layer inputs quantized", fontsize=10)
    fig.tight_layout()
    return fig


def view_relative_error(frac_bits: int = 3, mantissa_bits: int = 3, log_scale_x: bool = True):
    """Figure: relative rounding error over [1/4, 4] of a log format with ``frac_bits`` and a float with
    ``mantissa_bits``, with each one's worst case, both rounding to the nearest value. The float's error saws
    within every binade; the log format's is the same everywhere."""
    import matplotlib.pyplot as plt

    r = 2.0 ** (2.0 ** -frac_bits)
    log_mid = np.exp2(np.arange(-2 << frac_bits, 2 << frac_bits) / (1 << frac_bits)) * (1 + r) / 2
    float_mid = np.exp2(np.arange(-2, 2)) * (1 + 2.0 ** -(mantissa_bits + 1))
    x = np.sort(np.concatenate([np.exp2(np.linspace(-2, 2, 8001)), log_mid, float_mid]))  # worst cases exact
    err_log = np.abs(lns_quantize(x, int_bits=8, frac_bits=frac_bits, rounding=NEAREST_VALUE) - x) / x
    err_fp = np.abs(round_float_mantissa(x, mantissa_bits) - x) / x
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.plot(x, 100 * err_fp, lw=0.8, color="tab:orange", label=f"float, {mantissa_bits} mantissa bits")
    ax.plot(x, 100 * err_log, lw=0.8, color="tab:blue", label=f"log, {frac_bits} fraction bits (nearest value)")
    ax.axhline(100 * err_fp.max(), color="tab:orange", ls="--", lw=1, label=f"worst {100 * err_fp.max():.2f} %")
    ax.axhline(100 * err_log.max(), color="tab:blue", ls="--", lw=1, label=f"worst {100 * err_log.max():.2f} %")
    if log_scale_x:
        ax.set_xscale("log", base=2)
    ax.set_xlabel("value x")
    ax.set_ylabel("relative error |q(x) - x| / x (%)")
    ax.set_title("Rounding error: logarithmic vs floating point")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def view_repeated_add(fmt: str = "fp16", log2_dw: float = -12.0, w0: float = 1.0, steps: int = 400):
    """Figure: ``w0 + k * dw`` accumulated in ``fmt`` with round-to-nearest and with stochastic rounding
    (every replica faint, their mean bold), against the exact line. ``dw = 2**log2_dw``."""
    import matplotlib.pyplot as plt

    dw = 2.0 ** log2_dw
    k = np.arange(steps + 1)
    near = repeated_add(w0, dw, steps, fmt)[:, 0]
    sr = repeated_add(w0, dw, steps, fmt, rounding="stochastic", replicas=32, seed=0)
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.plot(k, sr, color="tab:green", alpha=0.08, lw=0.8)
    ax.plot(k, w0 + k * dw, "k--", lw=1.2, label="exact w0 + k dw")
    ax.plot(k, near, color="tab:red", lw=2, label="round to nearest")
    ax.plot(k, sr.mean(axis=1), color="tab:green", lw=2, label="stochastic rounding (mean of 32 runs)")
    ax.set_xlabel("number of updates k")
    ax.set_ylabel("stored weight w")
    ax.set_title(f"{fmt}: adding dw = 2**{log2_dw:g} = {dw:.3g} to w0 = {w0:g} "
                 f"(half an ulp there: {float(half_ulp(np.float32([w0]), fmt)[0]):.3g})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def view_formats(fmt_a: str = "e4m3", fmt_b: str = "lns4.3", align_max: bool = True):
    """Figure: where each format's values lie (count per binade) and its relative error across the range.

    With ``align_max`` the second format is scaled by ``max_a / max_b`` so both share the same largest value, as
    a per-tensor scale would arrange.
    """
    import matplotlib.pyplot as plt

    specs = [get_format(fmt_a), get_format(fmt_b)]
    scales = [1.0, specs[0].max_value / specs[1].max_value if align_max else 1.0]
    fig, (ax0, ax1) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    lo = min(s.min_positive * k for s, k in zip(specs, scales))
    hi = max(s.max_value * k for s, k in zip(specs, scales))
    bins = np.arange(np.floor(np.log2(lo)) - 1, np.ceil(np.log2(hi)) + 2)
    for spec, k, color in zip(specs, scales, ("C0", "C3")):
        mags = spec.magnitudes()[1:] if spec.magnitudes()[0] == 0 else spec.magnitudes()
        ax0.hist(np.log2(mags * k), bins=bins, histtype="step", lw=2, color=color,
                 label=f"{spec.name}{'' if k == 1 else f' x {k:.3g}'} ({spec.bits} bits)")
        centres, worst = error_envelope(spec, lo / 2, hi, scale=k)
        ax1.plot(centres, 100 * worst, color=color, lw=1.5, label=spec.name)
    ax0.set_ylabel("representable values per binade")
    ax0.legend(loc="upper left")
    ax0.set_title("Where the values lie, and the worst relative error of rounding to nearest")
    ax1.set_yscale("log")
    ax1.set_ylim(0.01, 150)
    ax1.set_xlabel("log2 |x|")
    ax1.set_ylabel("worst relative error (%)\nper 1/8 binade")
    ax1.legend(loc="upper right")
    fig.tight_layout()
    return fig
