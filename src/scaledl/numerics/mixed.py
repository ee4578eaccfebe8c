"""Mixed-precision training, emulated: low-precision weights vs FP32 master weights, stochastic rounding of
the update, gradient underflow and (dynamic) loss scaling, and a softmax evaluated entirely in a narrow format.

The model, data and optimizer come from :mod:`scaledl.nn`; the forward and backward run in the emulated
compute format through its precision policy (inputs, weights, outputs and gradients rounded; products
accumulated in FP32). What this module adds is the *weight-update* side, which ``nn.train`` keeps in FP32:
:func:`train_mixed` can store the weights themselves in FP16/BF16 (no master copy), with round-to-nearest or
stochastic rounding of every update, and can scale the loss by a constant or a :class:`DynamicLossScaler`.

>>> import numpy as np
>>> w = np.float32([1.0, 1.0, 1000.0])
>>> lost_updates(w, np.float32([1e-4, 1e-3, 0.25]), "fp16").tolist()   # ulp(1) = 2**-10, ulp(1000) = 0.5
[True, False, True]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from scaledl.nn import ops
from scaledl.numerics import get_format, quantize

__all__ = ["half_ulp", "lost_updates", "repeated_add", "DynamicLossScaler", "MixedHistory", "train_mixed",
           "gradient_underflow", "softmax_cross_entropy_in", "reference_cross_entropy",
           "softmax_failure_table"]

_COMPUTE = ("fp32", "fp16", "bf16")


def _float_format(fmt):
    spec = get_format(fmt)
    if spec.kind != "float":
        raise ValueError(f"fmt must be a floating-point format such as 'fp16' or 'bf16', got {fmt!r}")
    return spec


def half_ulp(w, fmt) -> np.ndarray:
    """Half the spacing of ``fmt``'s grid at ``|w|``: an update smaller than this is rounded away.

    >>> half_ulp(np.float32([1.0, 0.1]), "bf16").tolist()   # bf16 keeps 8 significant bits
    [0.00390625, 0.000244140625]
    """
    spec = _float_format(fmt)
    a = np.maximum(np.abs(np.asarray(w, np.float64)), spec.min_normal)  # subnormals: fixed spacing
    return np.exp2(np.floor(np.log2(a))) * spec.epsilon / 2


def lost_updates(w, dw, fmt) -> np.ndarray:
    """Boolean mask: where ``w + dw``, rounded to nearest in ``fmt``, equals ``w`` although ``dw != 0``.

    ``w`` is taken as already on the grid (a stored low-precision weight)."""
    w = np.asarray(w, np.float32)
    dw = np.asarray(dw, np.float32)
    return (quantize(w + dw, fmt) == quantize(w, fmt)) & (dw != 0)


def repeated_add(w0: float, dw: float, steps: int, fmt, *, rounding: str = "nearest", replicas: int = 1,
                 seed: int = 0) -> np.ndarray:
    """Add ``dw`` to ``w0`` ``steps`` times, rounding to ``fmt`` after every addition.

    Returns:
        float64 array of shape (steps + 1, replicas): the trajectory of every replica (independent random
        streams under stochastic rounding). The exact answer is ``w0 + k * dw``.

    >>> float(repeated_add(1.0, 1e-4, 1000, "fp16")[-1, 0])   # each 1e-4 is below half an ulp of 1: lost
    1.0
    """
    if not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    if rounding not in ("nearest", "stochastic"):
        raise ValueError(f"rounding must be 'nearest' or 'stochastic', got {rounding!r}")
    rng = np.random.default_rng(seed)
    w = quantize(np.full(replicas, w0, np.float32), fmt)
    out = np.empty((steps + 1, replicas))
    out[0] = w
    d = np.float32(dw)
    for k in range(1, steps + 1):
        w = quantize(w + d, fmt, rounding=rounding, rng=rng)
        out[k] = w
    return out


@dataclass
class DynamicLossScaler:
    """The loss scale of dynamic loss scaling: halve on a non-finite gradient (and skip that step), double
    after ``growth_interval`` finite steps in a row. Defaults follow common practice (start at 2**15).

    >>> s = DynamicLossScaler(init_scale=8.0, growth_interval=2)
    >>> [s.update(ok) or s.scale for ok in (True, True, False, True)]
    [8.0, 16.0, 8.0, 8.0]
    """

    init_scale: float = 2.0 ** 15
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 200
    scale: float = field(init=False)
    good_steps: int = field(init=False, default=0)

    def __post_init__(self):
        if not (math.isfinite(self.init_scale) and self.init_scale > 0):
            raise ValueError(f"init_scale must be positive and finite, got {self.init_scale!r}")
        if not (self.growth_factor > 1 and 0 < self.backoff_factor < 1):
            raise ValueError(f"need growth_factor > 1 and 0 < backoff_factor < 1, got {self.growth_factor!r}, "
                             f"{self.backoff_factor!r}")
        if self.growth_interval < 1:
            raise ValueError(f"growth_interval must be >= 1, got {self.growth_interval!r}")
        self.scale = float(self.init_scale)

    def update(self, finite: bool) -> None:
        """Adjust the scale after a step whose (scaled) gradients were ``finite`` or not."""
        if not finite:
            self.scale *= self.backoff_factor
            self.good_steps = 0
            return
        self.good_steps += 1
        if self.good_steps >= self.growth_interval:
            self.scale *= self.growth_factor
            self.good_steps = 0


@dataclass
class MixedHistory:
    """What :func:`train_mixed` measured at each step (losses, scales, updates lost) and each evaluation."""

    step_loss: list = field(default_factory=list)
    loss_scale: list = field(default_factory=list)
    lost_fraction: list = field(default_factory=list)   # nonzero updates that left the stored weight unchanged
    zero_grad_fraction: list = field(default_factory=list)  # gradient entries exactly zero after unscaling
    eval_step: list = field(default_factory=list)
    test_accuracy: list = field(default_factory=list)
    skipped_steps: int = 0


def _round_fn(compute):
    from scaledl.nn.precision import FORMATS

    return FORMATS[compute]


def train_mixed(model, data, *, steps: int, batch_size: int = 32, lr: float = 0.05, momentum: float = 0.9,
                compute: str = "fp16", master_weights: bool = True, weight_rounding: str = "nearest",
                weight_format: str | None = None, loss_scale=None, loss_weight: float = 1.0,
                eval_every: int = 100, seed: int = 0) -> MixedHistory:
    """Minibatch SGD with an emulated compute format and a choice of where the weights live.

    Args:
        model: a :func:`scaledl.nn.mlp` (trained in place).
        data: a :class:`scaledl.nn.Dataset`.
        steps, batch_size, lr, momentum: the SGD run (momentum buffer kept in FP32 in every mode).
        compute: "fp32", "fp16" or "bf16": the format of the forward and backward passes.
        master_weights: True keeps FP32 weights (the compute format only sees rounded copies); False stores
            the weights in ``compute`` itself, so every update is rounded into it.
        weight_rounding: "nearest" or "stochastic": how updates are rounded when ``master_weights=False``.
        weight_format: the float format the weights are stored in when ``master_weights=False``; default
            ``compute``. A narrower one (``"e5m2"``, ``"e4m3"``: "quarter precision") stores 8-bit weights
            while the passes still run in ``compute``.
        loss_scale: None (1), a constant, or a :class:`DynamicLossScaler`.
        loss_weight: multiplies the loss and so every gradient, and is *not* divided out (unlike the loss
            scale): a controlled way to make gradients small, e.g. ``2**-12`` with ``lr`` times ``2**12``
            leaves FP32 training unchanged but pushes FP16 gradients into underflow.
    Returns:
        a :class:`MixedHistory`.
    Raises:
        ValueError: an unknown ``compute`` or ``weight_rounding``, a ``weight_format`` that is not a float
            format, or ``steps`` below 1.
    """
    from scaledl.nn import SGD, evaluate
    from scaledl.nn.precision import Precision

    if compute not in _COMPUTE:
        raise ValueError(f"compute must be one of {_COMPUTE}, got {compute!r}")
    if weight_rounding not in ("nearest", "stochastic"):
        raise ValueError(f"weight_rounding must be 'nearest' or 'stochastic', got {weight_rounding!r}")
    if not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if not (math.isfinite(loss_weight) and loss_weight > 0):
        raise ValueError(f"loss_weight must be positive and finite, got {loss_weight!r}")
    if weight_format is None:
        weight_format = compute
    elif get_format(weight_format).kind != "float":
        raise ValueError(f"weight_format must be a floating-point format such as 'fp16' or 'e5m2', "
                         f"got {weight_format!r}")
    scaler = loss_scale if isinstance(loss_scale, DynamicLossScaler) else None
    fixed_scale = 1.0 if loss_scale is None or scaler is not None else float(loss_scale)
    model.precision = None if compute == "fp32" else Precision(_round_fn(compute), compute)
    params = model.parameters()
    rng = np.random.default_rng(seed)
    round_rng = np.random.default_rng(seed + 1)
    store = not master_weights and weight_format != "fp32"
    if store:
        for w in params.values():
            w[...] = quantize(w, weight_format)
    opt = SGD(lr=lr, momentum=momentum)
    hist = MixedHistory()
    n = data.n_train
    order = rng.permutation(n)
    pos = 0
    for step in range(1, steps + 1):
        if pos + batch_size > n:
            order, pos = rng.permutation(n), 0
        idx = order[pos:pos + batch_size]
        pos += batch_size
        scale = scaler.scale if scaler is not None else fixed_scale
        with np.errstate(over="ignore", invalid="ignore"):
            loss, grads = model.loss_and_gradients(data.x_train[idx], data.y_train[idx],
                                                   scale=scale * loss_weight)
            grads = {k: g / np.float32(scale) for k, g in grads.items()}
        finite = all(np.isfinite(g).all() for g in grads.values())
        hist.step_loss.append(float(loss))
        hist.loss_scale.append(scale)
        total = sum(g.size for g in grads.values())
        if scaler is not None:
            scaler.update(finite)
        if not finite:
            hist.skipped_steps += 1
            hist.lost_fraction.append(float("nan"))
            hist.zero_grad_fraction.append(float("nan"))
        else:
            hist.zero_grad_fraction.append(sum(int((g == 0).sum()) for g in grads.values()) / total)
            before = {k: w.copy() for k, w in params.items()} if store else None
            opt.step(params, grads)
            if store:
                lost = moved = 0
                for k, w in params.items():
                    wanted = w != before[k]
                    w[...] = quantize(w, weight_format, rounding=weight_rounding, rng=round_rng)
                    moved += int(wanted.sum())
                    lost += int((wanted & (w == before[k])).sum())
                hist.lost_fraction.append(lost / max(moved, 1))
            else:
                hist.lost_fraction.append(0.0)
        if step % eval_every == 0 or step == steps:
            hist.eval_step.append(step)
            hist.test_accuracy.append(evaluate(model, data.x_test, data.y_test)[1])
    return hist


def gradient_underflow(grads: dict, fmt, *, scale: float = 1.0) -> dict[str, float]:
    """Fractions of nonzero FP32 gradient entries that become 0, or subnormal, in ``fmt`` after ``* scale``."""
    spec = _float_format(fmt)
    g = np.concatenate([np.abs(v).ravel() for v in grads.values()]).astype(np.float64) * scale
    g = g[g > 0]
    return {
        "zero": float(np.mean(g < spec.min_positive / 2)),  # below half the smallest subnormal: rounds to 0
        "subnormal": float(np.mean((g >= spec.min_positive / 2) & (g < spec.min_normal))),
        "overflow": float(np.mean(g > spec.max_value)),
    }


def softmax_cross_entropy_in(logits, labels, fmt, *, stable: bool = True, form: str = "prob") -> np.ndarray:
    """Per-example softmax cross-entropy with every intermediate rounded to ``fmt`` (accumulation included).

    Args:
        stable: subtract the row maximum before ``exp``; without it ``exp`` overflows past
            ``ln(max_value)`` (11.09 in FP16).
        form: ``"prob"`` computes the probabilities, then ``-log p[label]`` (a softmax layer followed by a
            loss layer): a badly wrong example has ``p[label]`` below the format's smallest number, so its
            loss is infinite. ``"logsumexp"`` computes ``log(sum exp z) - z[label]`` (a fused log-softmax),
            which never takes the log of a tiny number.
    The sum of exponentials is accumulated term by term in ``fmt``. ``exp`` and ``log`` are evaluated in
    float64 (``scaledl.nn.ops``: the same bits on every CPU, unlike NumPy's float32 SIMD paths) and then
    rounded to ``fmt``, as a correctly rounding library of that format would return them.
    """
    if form not in ("prob", "logsumexp"):
        raise ValueError(f"form must be 'prob' or 'logsumexp', got {form!r}")
    r = lambda a: quantize(a, fmt, saturate=False)  # noqa: E731  (overflow must show as inf here)
    z = r(np.asarray(logits, np.float32))
    labels = np.asarray(labels)
    if stable:
        z = r(z - z.max(axis=1, keepdims=True))
    rows = np.arange(len(labels))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e = r(ops.exp(z.astype(np.float64)))
        total = np.zeros(z.shape[0], np.float32)
        for j in range(z.shape[1]):
            total = r(total + e[:, j])
        if form == "prob":
            p = r(e[rows, labels] / total)
            return -r(ops.log(p.astype(np.float64)))
        return r(r(ops.log(total.astype(np.float64))) - z[rows, labels])


def reference_cross_entropy(logits, labels) -> np.ndarray:
    """Per-example softmax cross-entropy in float64 (log-sum-exp form): the yardstick of the above."""
    z = np.asarray(logits, np.float64)
    zs = z - z.max(axis=1, keepdims=True)
    return ops.log(ops.sum_rows(ops.exp(zs).T)) - zs[np.arange(len(labels)), np.asarray(labels)]


def softmax_failure_table(logits, labels, formats=("fp32", "bf16", "fp16")) -> list[dict]:
    """One row per (format, form, stable): the fraction of examples whose loss is inf/NaN, and the median
    and largest absolute error (nats) of the finite ones against float64."""
    ref = reference_cross_entropy(logits, labels)
    rows = []
    for fmt in formats:
        for form in ("prob", "logsumexp"):
            for stable in (False, True):
                got = softmax_cross_entropy_in(logits, labels, fmt, stable=stable, form=form)
                ok = np.isfinite(got)
                err = np.abs(got[ok] - ref[ok])
                rows.append({"format": fmt, "form": form, "max subtracted": stable,
                             "non-finite": float(1 - ok.mean()),
                             "median abs error": float(np.median(err)) if err.size else float("nan"),
                             "max abs error": float(err.max()) if err.size else float("nan")})
    return rows
