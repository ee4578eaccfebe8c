"""The training chapters' figures and widget views: compute and data a loss target requires (chapter 02), and
steps to a target against batch size (chapter 16). Each draws what :mod:`scaledl.nn`'s models and studies
compute and imports matplotlib inside the function (ARCHITECTURE.md, the views rule).
"""

from __future__ import annotations


import numpy as np

from scaledl.nn.batch_study import _digits, run
from scaledl.nn.scaling import PowerLaw, requirements


def plot_steps_vs_batch(best: dict, fit: tuple[float, float] | None = None, b_simple: float | None = None,
                        title: str = "steps to target vs batch size"):
    """Log-log steps to target (tuned lr) with the perfect-scaling line through the smallest batch, the
    fitted S_min (1 + B_noise/B) and the measured noise scale, if given. Returns the Figure."""
    import matplotlib.pyplot as plt

    B = np.array(sorted(best))
    S = np.array([best[b][1] for b in B])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.loglog(B, S, "o-", label="measured (lr tuned per batch)")
    for b in B:
        lo, hi = min(best[b][2]), max(best[b][2])
        ax.plot([b, b], [lo, hi], "-", color="C0", alpha=0.5)
    ax.loglog(B, S[0] * B[0] / B, "k--", lw=1, label="perfect scaling (steps x batch constant)")
    if fit is not None:
        s_min, b_noise = fit
        grid = np.geomspace(B[0], B[-1], 100)
        ax.loglog(grid, s_min * (1 + b_noise / grid), "C1-", lw=1,
                  label=f"S_min (1 + B_noise/B): S_min={s_min:.3g}, B_noise={b_noise:.2g}")
        ax.axhline(s_min, color="C1", ls=":", lw=1)
    if b_simple is not None:
        ax.axvline(b_simple, color="C2", ls="-.", lw=1, label=f"measured B_simple = {b_simple:.2g}")
    ax.set_xlabel("batch size B")
    ax.set_ylabel("steps to target")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def view_run(batch_size: int = 64, lr: float = 0.05, warmup_epochs: float = 0.0, target: float = 0.95,
             epochs: int = 30, max_steps: int = 2000, data=None):
    """Train the chapter's digits MLP once, live, for at most ``epochs`` epochs and ``max_steps`` steps,
    stopping at ``target``, and plot test accuracy against epochs (evaluated 4 times per epoch, or every
    step); the title gives steps and epochs to ``target`` and the final accuracy. About a second at most
    settings, a few seconds for a failing run at the smallest batch sizes."""
    import matplotlib.pyplot as plt

    data = data if data is not None else _digits()
    b = min(int(batch_size), data.n_train)
    r = run(data, batch_size=b, lr=float(lr), target=target, warmup_epochs=float(warmup_epochs),
            max_steps=min(max_steps, epochs * -(-data.n_train // b)), eval_every=max(1, -(-data.n_train // b) // 4))
    per_epoch = -(-data.n_train // b)  # steps per epoch, the last batch partial
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    ax.plot(np.array(r.eval_step) / per_epoch, np.array(r.test_accuracy) * 100, "o-", ms=3)
    ax.axhline(target * 100, color="k", ls=":", lw=1)
    ax.set_ylim(0, 100)
    ax.set_xlabel("epochs")
    ax.set_ylabel("test accuracy (%)")
    if r.diverged:
        what = f"diverged after {r.steps} steps"
    elif r.reached:
        what = f"{target:.0%} after {r.steps_to_target} steps = {r.steps_to_target / per_epoch:.1f} epochs"
    else:
        what = f"{target:.0%} not reached in {r.steps} steps ({r.steps / per_epoch:.1f} epochs)"
    ax.set_title(f"B={b}, lr={lr:.3g}, warm-up {warmup_epochs:g} ep: {what}; "
                 f"final {r.final_accuracy:.1%}", fontsize=9)
    fig.tight_layout()
    return fig


def requirements_view(target_error: float = 0.01, beta: float = 0.75, *, law: PowerLaw, n_now: float,
                      measured=None):
    """The widget's view: the fitted learning curve, the target, and the data/model/compute it needs.

    Args:
        target_error: the error to reach.
        beta: model-size exponent (model ~ data^beta).
        law: the fitted :class:`PowerLaw`.
        n_now: the training-set size the factors are relative to.
        measured: optional (sizes, errors) to draw as points.

    Returns:
        a matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    if measured is not None:
        ax.loglog(*measured, "o", ms=4, color="C0", alpha=0.6, label="measured")
    top = max(n_now * 1e4, 10.0)
    try:
        req = requirements(law, target_error, n_now, beta)
        top = max(top, req.data * 4)
        text = (f"target error {target_error:.3g}: {req.data:.3g} samples\n"
                f"data x{req.data_factor:.3g}, model x{req.model_factor:.3g} (beta={beta:.2f}), "
                f"compute x{req.compute_factor:.3g}")
        ax.plot([req.data], [target_error], "*", ms=14, color="C3", label="what the target needs")
    except ValueError as err:
        text = str(err)
    grid = np.geomspace(1, min(top, 1e15), 400)
    ax.loglog(grid, law.predict(grid), "-", color="C1", label=f"fit: {law}")
    if law.c > 1e-3 * target_error:  # a fitted floor of ~0 is no floor: drawing it would wreck the axis
        ax.axhline(law.c, ls=":", color="gray", label=f"irreducible error {law.c:.3g}")
    ax.axhline(target_error, ls="--", color="C3", lw=1)
    ax.set_ylim(max(min(target_error, float(law.predict(grid[-1]))) / 3, 1e-6), 1.5)
    ax.set_xlabel("training-set size m (samples)")
    ax.set_ylabel("test error (fraction)")
    ax.set_title(text, fontsize=9)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig
