"""Goyal et al.'s linear scaling rule with gradual warm-up, as a learning rate and a schedule.

Goyal, Dollar, Girshick, Noordhuis, Wesolowski, Kyrola, Tulloch, Jia and He, "Accurate, Large Minibatch SGD:
Training ImageNet in 1 Hour" (arXiv:1706.02677, 2017): when the minibatch grows k-fold, multiply the
learning rate by k (the rule: k small steps with rate lr move the weights about as far as one large step
with k lr, while the gradient changes slowly). Early in training it does change fast, so they ramp the rate
linearly from lr to k lr over the first 5 epochs ("gradual warm-up"), and report ResNet-50 top-1 error
23.74 % at batch 8k with it vs 24.84 % without (23.60 % at 256).

:class:`~scaledl.nn.optim.SGD` multiplies its ``lr`` by ``schedule(step)``; :func:`linear_scaling_rule`
returns the scaled rate and a schedule that starts at 1/k and reaches 1 after ``warmup_steps`` steps, which
is their ramp from lr to k lr. (:func:`scaledl.nn.optim.warmup` ramps from about 0 instead.)

>>> lr, schedule = linear_scaling_rule(0.1, batch_size=1024, base_batch_size=256, warmup_steps=4)
>>> lr, [round(lr * schedule(s), 3) for s in range(6)]
(0.4, [0.1, 0.175, 0.25, 0.325, 0.4, 0.4])
"""

from __future__ import annotations

import math

from scaledl.nn.optim import Schedule, constant

__all__ = ["GOYAL_BASE_BATCH", "GOYAL_WARMUP_EPOCHS", "scaled_lr", "gradual_warmup", "linear_scaling_rule"]

GOYAL_BASE_BATCH = 256     # Goyal et al. 2017: lr = 0.1 x batch / 256 for ResNet-50
GOYAL_WARMUP_EPOCHS = 5    # Goyal et al. 2017: gradual warm-up over the first 5 epochs


def scaled_lr(base_lr: float, batch_size: int, base_batch_size: int = GOYAL_BASE_BATCH) -> float:
    """The linear scaling rule: base_lr x batch_size / base_batch_size.

    Raises:
        ValueError: a learning rate that is not positive and finite, or batch sizes that are not positive
            integers.
    """
    if (isinstance(base_lr, bool) or not isinstance(base_lr, (int, float))
            or not (base_lr > 0 and math.isfinite(base_lr))):
        raise ValueError(f"base_lr must be a positive finite learning rate, got {base_lr!r}")
    for name, b in (("batch_size", batch_size), ("base_batch_size", base_batch_size)):
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"{name} must be a positive integer, got {b!r}")
    return base_lr * batch_size / base_batch_size


def gradual_warmup(k: float, steps: int, then: Schedule | None = None) -> Schedule:
    """Factor 1/k rising linearly to 1 over ``steps`` steps (1/k + (1 - 1/k) s/steps), then ``then``
    counted from the end of the warm-up. With k <= 1 there is nothing to warm up: the factor is 1."""
    if not (k > 0 and math.isfinite(k)):
        raise ValueError(f"k must be a positive finite scaling factor, got {k!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer number of warm-up steps, got {steps!r}")
    after = then or constant()
    start = min(1.0, 1.0 / k)
    return lambda s: start + (1.0 - start) * s / steps if s < steps else after(s - steps)


def linear_scaling_rule(base_lr: float, batch_size: int, *, base_batch_size: int = GOYAL_BASE_BATCH,
                        warmup_steps: int = 0, then: Schedule | None = None) -> tuple[float, Schedule]:
    """(scaled learning rate, schedule): pass them as ``SGD(lr=lr, schedule=schedule)``."""
    lr = scaled_lr(base_lr, batch_size, base_batch_size)
    return lr, gradual_warmup(batch_size / base_batch_size, warmup_steps, then)
