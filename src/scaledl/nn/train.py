"""The training loop every chapter shares: minibatch SGD with hooks for the book's later parts.

One step, in order:

1. forward and backward on the minibatch, or on its N shards when ``workers > 1`` (then ``reducer``
   combines the workers' gradients, see :mod:`scaledl.nn.parallel`), in the model's emulated precision;
2. divide out the precision policy's loss scale; if any gradient is not finite, skip the step (counted in
   ``History.skipped_steps``), as dynamic loss scaling does;
3. ``grad_transform(grads) -> grads`` (compression, clipping, noise, ...);
4. zero the masked gradient entries, SGD update of the float32 master weights, re-apply the masks.

>>> from scaledl.nn import digits, mlp, train, SGD
>>> h = train(mlp([64, 64, 10], seed=0), digits(), epochs=3, batch_size=32, optimizer=SGD(lr=0.05))
>>> h.steps, round(h.test_accuracy[-1], 3) > 0.9
(129, True)
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from scaledl.nn.data import Dataset
from scaledl.nn.loss import softmax_cross_entropy
from scaledl.nn.optim import SGD
from scaledl.nn.parallel import Reducer, check_workers, data_parallel_gradients, sum_reducer
from scaledl.nn.precision import as_precision


@dataclass
class History:
    """What a training run measured. Everything but ``wall_s`` is deterministic for a given seed."""

    step_loss: list[float] = field(default_factory=list)   # minibatch loss at every step
    eval_step: list[int] = field(default_factory=list)     # steps after which the test set was evaluated
    test_loss: list[float] = field(default_factory=list)
    test_accuracy: list[float] = field(default_factory=list)
    steps: int = 0
    skipped_steps: int = 0                                 # steps dropped for non-finite gradients
    loss_scale: list[float] = field(default_factory=list)  # the loss scale used at every step
    steps_to_target: int | None = None                     # first eval step reaching target_accuracy
    wall_s: float = 0.0

    @property
    def test_error(self) -> float:
        """1 - final test accuracy."""
        return 1.0 - self.test_accuracy[-1]


def evaluate(model, x, y, batch_size: int = 4096) -> tuple[float, float]:
    """(mean loss, accuracy) of ``model`` on (x, y)."""
    logits = model.predict(x, batch_size)
    loss, _ = softmax_cross_entropy(logits, y)
    return loss, float((logits.argmax(axis=1) == y).mean())


def train(model, data: Dataset, *, epochs: int | None = None, steps: int | None = None, batch_size: int = 32,
          optimizer: SGD | None = None, seed: int = 0, workers: int = 1, reducer: Reducer = sum_reducer,
          grad_transform: Callable | None = None, precision=None, eval_every: int | None = None,
          target_accuracy: float | None = None, callback: Callable | None = None,
          progress: bool = False, blas_threads: int | None = 1) -> History:
    """Train ``model`` on ``data.x_train`` with minibatch SGD; evaluate on ``data.x_test``.

    Args:
        model: a :class:`~scaledl.nn.model.Sequential` (trained in place).
        data: the :class:`~scaledl.nn.data.Dataset`.
        epochs, steps: how long; give exactly one. Each epoch reshuffles the training set.
        batch_size: samples per step (capped at the training-set size).
        optimizer: an :class:`~scaledl.nn.optim.SGD` (default: lr 0.05, momentum 0.9).
        seed: fixes the shuffling; same seed, same model, same data -> bitwise-identical result.
        workers: simulated data-parallel workers per minibatch (1: plain SGD).
        reducer: combines the workers' gradients (default: exact sum).
        grad_transform: ``grads -> grads`` applied to the reduced gradient before the update.
        precision: None (float32), "fp16", "bf16", a rounding callable or a Precision; set on the model.
        eval_every: evaluate the test set every this many steps (default: once per epoch, and at the end).
        target_accuracy: stop at the first evaluation reaching it (``History.steps_to_target``).
        callback: ``callback(step, model, history)`` after every step; returning True stops training.
        progress: show a tqdm progress bar (off by default, so notebooks validate deterministically).
        blas_threads: BLAS threads during training (None: leave as is). One by default: these matrices are
            so small that a second thread costs more in synchronisation than it gives, and on a busy
            2-core machine a multi-threaded 128x64 GEMM measured 10-20x slower than a single-threaded one.

    Raises:
        ValueError: bad epochs/steps/batch size/workers, or a learning rate that is not positive.
    """
    if (epochs is None) == (steps is None):
        raise ValueError(f"give exactly one of epochs and steps, got epochs={epochs!r}, steps={steps!r}")
    n = data.n_train
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size: expected a positive integer, got {batch_size!r}")
    batch_size = min(int(batch_size), n)
    workers = check_workers(workers, batch_size)
    steps_per_epoch = -(-n // batch_size)
    if epochs is not None:
        if not isinstance(epochs, (int, np.integer)) or epochs < 1:
            raise ValueError(f"epochs: expected a positive integer, got {epochs!r}")
        total = int(epochs) * steps_per_epoch
    else:
        if not isinstance(steps, (int, np.integer)) or steps < 1:
            raise ValueError(f"steps: expected a positive integer, got {steps!r}")
        total = int(steps)
    eval_every = eval_every or steps_per_epoch
    optimizer = optimizer or SGD(lr=0.05, momentum=0.9)
    if precision is not None:
        model.precision = as_precision(precision)
    quiet = "warn" if model.precision is None else "ignore"

    with _blas_threads(blas_threads):
        return _train(model, data, total, steps_per_epoch, batch_size, optimizer, seed, workers, reducer,
                      grad_transform, eval_every, target_accuracy, callback, progress, model.precision, quiet)


@contextmanager
def _blas_threads(n):
    try:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn
    except ImportError:  # pragma: no cover
        n = None
    if n is None:
        yield
    else:
        with threadpool_limits(limits=n, user_api="blas"):
            yield


def _train(model, data, total, steps_per_epoch, batch_size, optimizer, seed, workers, reducer, grad_transform,
           eval_every, target_accuracy, callback, progress, precision, quiet) -> History:
    n = data.n_train
    loss_scale = precision.loss_scale if precision is not None else 1.0
    dynamic = precision is not None and precision.dynamic
    good_steps = 0  # finite steps since the loss scale last changed
    rng = np.random.default_rng(seed)
    hist = History()
    params = model.parameters()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="training", unit="step")
    start = time.perf_counter()
    step, order = 0, np.empty(0, int)
    while step < total:
        if step % steps_per_epoch == 0:
            order = rng.permutation(n)
        i = (step % steps_per_epoch) * batch_size
        idx = order[i:i + batch_size]
        if len(idx) < workers:  # a trailing partial batch too small to shard: skip it
            step += 1
            continue
        xb, yb = data.x_train[idx], data.y_train[idx]
        # An emulated format may overflow to inf (the step is then skipped below): no warnings for that.
        with np.errstate(over=quiet, invalid=quiet):
            if workers == 1:
                loss, grads = model.loss_and_gradients(xb, yb, scale=loss_scale)
            else:
                loss, grads = data_parallel_gradients(model, xb, yb, workers, reducer, scale=loss_scale)
        if loss_scale != 1.0:
            grads = {k: g / np.float32(loss_scale) for k, g in grads.items()}
        hist.loss_scale.append(loss_scale)
        if not all(np.isfinite(g).all() for g in grads.values()):
            hist.skipped_steps += 1
            if dynamic:  # overflowed: back off and retry the next batch at a smaller scale
                loss_scale, good_steps = loss_scale * precision.backoff, 0
        else:
            good_steps += 1
            if dynamic and good_steps >= precision.growth_interval:  # a long calm: try a larger scale
                loss_scale, good_steps = loss_scale * precision.growth, 0
            if grad_transform is not None:
                grads = grad_transform(grads)
            if model.masks:
                grads = {k: g.copy() for k, g in grads.items()}
                model.apply_masks(grads)
            optimizer.step(params, grads)
            model.apply_masks()
        hist.step_loss.append(loss)
        step += 1
        hist.steps = step
        if bar is not None:
            bar.update(1)
        if step % eval_every == 0 or step == total:
            test_loss, acc = evaluate(model, data.x_test, data.y_test)
            hist.eval_step.append(step)
            hist.test_loss.append(test_loss)
            hist.test_accuracy.append(acc)
            if target_accuracy is not None and acc >= target_accuracy:
                hist.steps_to_target = step
                break
        if callback is not None and callback(step, model, hist):
            break
    if bar is not None:
        bar.close()
    if not hist.eval_step or hist.eval_step[-1] != hist.steps:  # stopped by the callback mid-epoch
        test_loss, acc = evaluate(model, data.x_test, data.y_test)
        hist.eval_step.append(hist.steps)
        hist.test_loss.append(test_loss)
        hist.test_accuracy.append(acc)
    hist.wall_s = time.perf_counter() - start
    return hist
