"""Learning curves and scaling laws: measure test error against training-set size, fit, extrapolate.

Hestness et al. (2017) found that past a small-data region the generalisation error of a well-sized model
falls as a power law of the training-set size m, eps(m) = a m^b, until it meets an irreducible error c.
This module measures such curves with :mod:`scaledl.nn`, fits ``a m^b + c`` with uncertainties, inverts
the fit ("how much data for this error") and turns a data factor into model and compute factors.

>>> law = PowerLaw(a=2.0, b=-0.5, c=0.01)
>>> round(float(law.predict(10_000)), 4)             # 2 / 100 + 0.01
0.03
>>> round(law.data_for_error(0.03), 6)
10000.0
>>> compute_factor(data_factor=256, model_factor=64)  # Dally's example: 2^8 x 2^6 = 2^14
16384
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from scaledl.nn import ops
from scaledl.nn.data import Dataset
from scaledl.nn.model import mlp
from scaledl.nn.optim import SGD, cosine
from scaledl.nn.train import train

# Hestness et al. 2017, "Deep Learning Scaling is Predictable, Empirically", arXiv:1712.00409: power-law
# exponents b of generalisation error vs training-set size (approximate values read from the paper).
HESTNESS_2017_EXPONENTS = {
    "word language model": -0.07,
    "machine translation": -0.13,
    "speech recognition": -0.30,
    "image classification (top-1)": -0.31,
}
# Dally, "Scaling ML with NVIDIA GPUs", ScaledML 2018 (seed 000): 256x more data calls for a 64x larger model.
DALLY_2018_DATA_FACTOR = 256
DALLY_2018_MODEL_FACTOR = 64


@dataclass(frozen=True)
class Recipe:
    """How one point of a learning curve is trained; the same recipe at every size keeps points comparable.

    Steps grow with the data (``epochs`` passes) between ``min_steps`` (tiny sets still converge) and
    ``max_steps`` (the runtime cap); the batch grows with the data between 8 and ``max_batch`` samples
    (about 16 steps per epoch), and the learning rate follows a cosine to zero so each run ends converged.
    """

    epochs: int = 40
    min_steps: int = 400
    max_steps: int = 4000
    max_batch: int = 256
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 1e-4

    def batch_and_steps(self, n: int) -> tuple[int, int]:
        batch = int(np.clip(n // 16, 8, self.max_batch))
        steps = int(np.clip(self.epochs * n / batch, self.min_steps, self.max_steps))
        return batch, steps


def train_error(data: Dataset, n: int, *, hidden: tuple[int, ...] = (64, 64), seed: int = 0,
                recipe: Recipe = Recipe(), make_model=None) -> float:
    """Test error of a model trained by ``recipe`` on the first ``n`` training samples of ``data``.

    The model is an MLP with ``hidden`` layers, or ``make_model(seed)`` when given (e.g.
    ``lambda s: nn.small_cnn(seed=s)`` on ``data.as_images()``).
    """
    if not isinstance(n, (int, np.integer)) or not (1 <= n <= data.n_train):
        raise ValueError(f"n: expected an integer in [1, {data.n_train}], got {n!r}")
    if make_model is not None and not callable(make_model):
        raise TypeError(f"make_model: expected a callable taking a seed, got {make_model!r}")
    subset = replace(data, x_train=data.x_train[:n], y_train=data.y_train[:n])
    if make_model is None:
        model = mlp([data.x_train.shape[1], *hidden, data.n_classes], seed=seed)
    else:
        model = make_model(seed)
    batch, steps = recipe.batch_and_steps(int(n))
    opt = SGD(lr=recipe.lr, momentum=recipe.momentum, weight_decay=recipe.weight_decay, schedule=cosine(steps))
    hist = train(model, subset, steps=steps, batch_size=batch, optimizer=opt, seed=seed, eval_every=10**9)
    return hist.test_error


def learning_curve(data: Dataset, sizes, seeds=(0,), **kw) -> np.ndarray:
    """Test errors, shape (len(seeds), len(sizes)), of :func:`train_error` at each size and seed."""
    return np.array([[train_error(data, int(n), seed=s, **kw) for n in sizes] for s in seeds])


def geometric_sizes(lo: int, hi: int, per_octave: int = 1) -> np.ndarray:
    """Integers from ``lo`` to ``hi`` spaced evenly in log2 (``per_octave`` per doubling), ``hi`` included."""
    if not (1 <= lo < hi):
        raise ValueError(f"lo, hi: expected 1 <= lo < hi, got lo={lo!r}, hi={hi!r}")
    k = int(round(math.log2(hi / lo) * per_octave))
    return np.unique(np.round(lo * 2.0 ** (np.arange(k + 1) / per_octave)).astype(int).clip(lo, hi))


@dataclass(frozen=True)
class PowerLaw:
    """eps(m) = a m^b + c, with standard errors of the fitted a, b, c (0 where not fitted)."""

    a: float
    b: float
    c: float = 0.0
    a_err: float = 0.0
    b_err: float = 0.0
    c_err: float = 0.0

    def predict(self, m):
        return self.a * np.asarray(m, float) ** self.b + self.c

    def data_for_error(self, target: float) -> float:
        """Training-set size at which the law reaches ``target`` error: ((target - c) / a)^(1/b)."""
        if not target > self.c:
            raise ValueError(f"target: {target!r} is not above the irreducible error c = {self.c:.4g}; "
                             f"no amount of data reaches it")
        return float(((target - self.c) / self.a) ** (1.0 / self.b))

    def __str__(self):
        s = f"eps(m) = {self.a:.3g} m^({self.b:.3f} +- {self.b_err:.3f})"
        return s + (f" + {self.c:.4f} +- {self.c_err:.4f}" if self.c else "")


def fit_power_law(m, err, *, irreducible: bool = True) -> PowerLaw:
    """Least-squares fit of log(err) by log(a m^b + c) (relative errors count equally at every scale).

    Args:
        m: training-set sizes; repeated sizes (several seeds) are fine.
        err: test errors, same shape as ``m``.
        irreducible: fit the floor c (>= 0) too; otherwise c = 0, a straight line in log-log.

    Returns:
        a :class:`PowerLaw` whose ``*_err`` are the fit's standard errors (square roots of the covariance
        diagonal, scaled by the residual variance).
    """
    from scipy.optimize import curve_fit

    m, err = np.asarray(m, float).ravel(), np.asarray(err, float).ravel()
    if m.shape != err.shape:
        raise ValueError(f"m has shape {m.shape} but err has shape {err.shape}: expected the same")
    if m.size < (4 if irreducible else 3) or np.any(m <= 0) or np.any(err <= 0):
        raise ValueError(f"m, err: need at least {4 if irreducible else 3} points with positive sizes and "
                         f"errors, got {m.size} points")
    # exp and log from scaledl.nn.ops: NumPy's change in the last bit with the CPU's SIMD path.
    x, log_err = ops.log(m), ops.log(err)
    slope, intercept = np.polyfit(x, log_err, 1)  # the straight-line fit starts the curved one
    if not irreducible:
        cov = np.polyfit(x, log_err, 1, cov=True)[1]
        return PowerLaw(math.exp(intercept), slope, 0.0, math.exp(intercept) * math.sqrt(cov[1, 1]),
                        math.sqrt(cov[0, 0]))

    def model(x, log_a, b, c):
        return ops.log(ops.exp(log_a + b * x) + c)

    p0 = (intercept, min(slope, -1e-3), 0.5 * err.min())
    p, cov = curve_fit(model, x, log_err, p0=p0, bounds=([-50, -5, 0], [50, 0, err.min()]), maxfev=20000)
    sd = np.sqrt(np.maximum(np.diag(cov), 0))
    a = math.exp(p[0])
    return PowerLaw(a, float(p[1]), float(p[2]), a * float(sd[0]), float(sd[1]), float(sd[2]))


def holdout_scores(sizes, errs, starts, *, holdout: int = 2) -> list[tuple[int, PowerLaw, float]]:
    """Score candidate fit windows by how well each predicts the largest sizes it did not see.

    For each ``start``, fit ``a m^b + c`` to the sizes from ``start`` up to all but the ``holdout`` largest,
    then measure the rms error in log(err) of its prediction at the held-out sizes. Choosing the window
    with the smallest score is a rule fixed in advance that needs no knowledge of the true floor; it spends
    the largest sizes on checking instead of fitting.

    Args:
        sizes: training-set sizes, increasing, shape (n,).
        errs: test errors, shape (seeds, n).
        starts: candidate first sizes (each must leave at least 4 sizes to fit).
        holdout: how many of the largest sizes to hold out, >= 1.

    Returns:
        [(start, law fitted on its window, held-out rms of log error)], in the order of ``starts``.
    """
    sizes = np.asarray(sizes, float)
    errs = np.atleast_2d(np.asarray(errs, float))
    if errs.shape[1] != sizes.size:
        raise ValueError(f"errs has shape {errs.shape}: expected (seeds, {sizes.size}) to match sizes")
    if not isinstance(holdout, (int, np.integer)) or not (1 <= holdout < sizes.size):
        raise ValueError(f"holdout={holdout!r}: expected an integer in [1, {sizes.size - 1}]")
    fit_until, test = sizes[-holdout - 1], sizes[-holdout:]
    out = []
    for start in starts:
        use = (sizes >= start) & (sizes <= fit_until)
        if use.sum() < 4:
            raise ValueError(f"start={start!r} leaves {int(use.sum())} sizes to fit before the held-out ones: "
                             f"expected at least 4")
        law = fit_power_law(np.tile(sizes[use], errs.shape[0]), errs[:, use].ravel())
        resid = ops.log(np.asarray(law.predict(test), float)) - ops.log(errs[:, -holdout:].mean(0))
        out.append((start, law, float(np.sqrt(np.mean(resid ** 2)))))
    return out


def round_sig(x: float, digits: int = 2) -> float:
    """``x`` rounded to ``digits`` significant digits, for extrapolations whose uncertainty is a factor.

    An extrapolated sample count printed as 364,629 claims six digits the fit cannot support; the last
    bits of a least-squares fit also differ between CPUs (LAPACK kernels), so only the leading digits
    reproduce.

    >>> round_sig(364_629), round_sig(0.012345, 3)
    (360000.0, 0.0123)
    """
    if not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits: expected a positive integer, got {digits!r}")
    return float(f"{float(x):.{digits}g}")


def compute_factor(data_factor: float, model_factor: float, epochs_factor: float = 1):
    """Growth of training compute: every sample costs FLOPs in proportion to the parameters, every epoch
    repeats all samples, so compute ~ data x parameters x epochs."""
    for arg, v in (("data_factor", data_factor), ("model_factor", model_factor), ("epochs_factor", epochs_factor)):
        if not v > 0:
            raise ValueError(f"{arg}: expected a positive factor, got {v!r}")
    return data_factor * model_factor * epochs_factor


def model_exponent(data_factor: float, model_factor: float) -> float:
    """beta in model ~ data^beta implied by two growth factors: log(model_factor) / log(data_factor)."""
    if not (data_factor > 1 and model_factor > 0):
        raise ValueError(f"data_factor, model_factor: expected data_factor > 1 and model_factor > 0, got "
                         f"{data_factor!r}, {model_factor!r}")
    return math.log(model_factor) / math.log(data_factor)


@dataclass(frozen=True)
class Requirements:
    """What reaching a target error costs, relative to a run with ``n_now`` samples."""

    target_error: float
    data: float
    data_factor: float
    model_factor: float
    compute_factor: float


def requirements(law: PowerLaw, target_error: float, n_now: float, beta: float) -> Requirements:
    """Data from the law's inverse; model ~ data^beta; compute ~ data x model (epochs unchanged)."""
    data = law.data_for_error(target_error)
    f = data / n_now
    return Requirements(target_error, data, f, f ** beta, compute_factor(f, f ** beta))
