"""Chapter 15's experiments, tables and widget views: compressed data-parallel training measured in accuracy,
bytes and seconds.

:func:`train_compressed` trains one model with ``workers`` simulated workers whose gradients go through a
:class:`~scaledl.comm.compression.reducer.CompressedReducer`, and keeps everything later cells need: the
per-epoch test accuracy, every step's encoded bytes, and the compression ratio over the whole run and over
its last epoch. Unlike :func:`~scaledl.comm.compression.study.accuracy_vs_compression` it counts an epoch in
*reducer calls*: :func:`scaledl.nn.train` skips a trailing batch smaller than ``workers`` (the digits'
1,347 training images leave 3 after 21 batches of 64), so an epoch has 21 exchanges, not 22, and DGC's
warm-up and the last-epoch ratio must count 21.

:func:`time_to_accuracy` prices a run on a network with the alpha-beta model: every exchange costs what
:meth:`~scaledl.comm.compression.reducer.CompressedReducer.exchange_time_s` (an all-gather of the messages)
or, for the uncompressed baseline, a ring all-reduce costs, plus an assumed compute time per step.

>>> from scaledl.nn import teacher_student
>>> data = teacher_student(200, 100, seed=0)
>>> r = train_compressed("topk", data, sizes=(16, 8, 4), workers=2, epochs=2, batch_size=20, ratio=0.1)
>>> r.calls_per_epoch, len(r.step_nbytes), round(r.ratio_run, 2), round(r.ratio_last, 2)
(10, 20, 4.53, 4.53)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from scaledl.comm.compression.reducer import compressed_reducer
from scaledl.comm.cost import allgather_time, allreduce_time
from scaledl.comm.topology import NVLINK4_H100_Bps, NVLINK_HOP_LATENCY_s

__all__ = ["Trained", "Summary", "calls_per_epoch", "train_compressed", "compare", "format_table",
           "NETWORKS", "step_times", "time_to_accuracy", "break_even_compute_s", "sparse_fill_in",
           "dgc_fill_in", "ALEXNET_LAYERS", "SQUEEZENET_FIRE", "alexnet_parameters", "squeezenet_parameters",
           "time_view", "fill_in_view"]

# The two networks of the chapter, as (alpha seconds per message, beta seconds per byte).
# 1 GbE: 10^9 bit/s = 125 MB/s; 50 us per message is an ASSUMPTION (a TCP round through the kernel on a
# commodity switch is tens of microseconds), exposed as a widget parameter.
# NVLink: one H100's 18 links x 25 GB/s per direction (scaledl.comm.topology), two hops of 0.25 us (GPU to
# NVSwitch to GPU), as chapter 14 prices its networks.
NETWORKS = {
    "1 GbE": (50e-6, 8 / 1e9),
    "NVLink (H100)": (2 * NVLINK_HOP_LATENCY_s, 1 / NVLINK4_H100_Bps),
}


@dataclass(frozen=True)
class Trained:
    """One compressed data-parallel run (see :func:`train_compressed`)."""
    label: str
    name: str                 # the compressor
    seed: int
    workers: int
    eval_step: tuple          # training steps after which the test set was evaluated (once per epoch)
    test_accuracy: tuple      # the accuracy at those steps
    calls_per_epoch: int      # exchanges (reducer calls) per epoch
    steps_per_epoch: int      # training steps per epoch (a skipped trailing batch included)
    step_nbytes: tuple        # per exchange, the largest message any worker sent (bytes)
    sent_nbytes: tuple        # per exchange, bytes all workers sent together
    dense_nbytes: int         # one worker's float32 gradient
    ratio_run: float          # dense bytes / sent bytes over the whole run
    ratio_last: float         # the same over the last epoch only

    @property
    def accuracy(self) -> float:
        """The final test accuracy."""
        return self.test_accuracy[-1]


@dataclass(frozen=True)
class Summary:
    """Mean and spread (sample standard deviation) over seeds of one configuration."""
    label: str
    accuracy_mean: float
    accuracy_std: float
    ratio_run: float          # mean over seeds
    ratio_last: float         # mean over seeds
    runs: tuple


def calls_per_epoch(n_train: int, batch_size: int, workers: int) -> int:
    """Exchanges per epoch: the full batches, plus the trailing one if it has at least ``workers`` samples
    (:func:`scaledl.nn.train` skips a smaller one).

    >>> calls_per_epoch(1347, 64, 8), calls_per_epoch(1347, 64, 2), calls_per_epoch(128, 64, 8)
    (21, 22, 2)
    """
    full, rest = divmod(int(n_train), int(batch_size))
    return full + (1 if rest >= workers else 0)


def _model(net: str, sizes, seed: int, data):
    from scaledl.nn import mlp, small_cnn

    if net == "mlp":
        return mlp(list(sizes), seed=seed), data
    if net == "cnn":
        return small_cnn(seed=seed), data.as_images()
    raise ValueError(f"net: expected 'mlp' or 'cnn', got {net!r}")


def train_compressed(name: str, data, *, label: str | None = None, net: str = "mlp", sizes=(64, 128, 10),
                     workers: int = 8, seed: int = 0, epochs: int = 10, batch_size: int = 64, lr: float = 0.05,
                     momentum: float = 0.9, **options) -> Trained:
    """Train a fresh ``net`` ("mlp" of ``sizes`` or "cnn", :func:`scaledl.nn.small_cnn`) on ``data`` with
    ``workers`` simulated workers exchanging ``make_compressor(name, **options)`` messages.

    DGC with momentum correction carries the momentum itself, so the optimizer then runs without it; every
    other configuration uses momentum SGD. DGC's warm-up is given the epoch's exchanges unless set.

    Raises:
        ValueError: workers < 2 (:func:`scaledl.nn.train` calls no reducer for one worker, so nothing would
            be compressed), an unknown net, or a compressor's own errors.
    """
    from scaledl.nn import SGD, evaluate, train

    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 2:
        raise ValueError(f"workers must be an integer >= 2 (with one worker nn.train calls no reducer and "
                         f"nothing is compressed), got {workers!r}")
    model, data = _model(net, sizes, seed, data)
    n = data.n_train
    batch_size = min(int(batch_size), n)
    calls = calls_per_epoch(n, batch_size, workers)
    options = dict(options)
    if name == "dgc":
        options.setdefault("steps_per_epoch", calls)
        options.setdefault("momentum", momentum)
    reducer = compressed_reducer(name, workers, seed=seed, **options)
    own_momentum = name == "dgc" and options.get("momentum_correction", True)
    opt = SGD(lr=lr, momentum=0.0 if own_momentum else momentum)
    steps_per_epoch = -(-n // batch_size)
    evals, accs = [], []

    def at_epoch_end(step, model, history):
        # nn.train evaluates at step % steps_per_epoch == 0, which a skipped trailing batch never reaches
        # (it then evaluates only once, at the end): evaluate after each epoch's last exchange instead.
        if (step - 1) % steps_per_epoch + 1 == calls:
            evals.append(step)
            accs.append(evaluate(model, data.x_test, data.y_test)[1])

    train(model, data, epochs=epochs, batch_size=batch_size, workers=workers, reducer=reducer, optimizer=opt,
          seed=seed, eval_every=10**9, callback=at_epoch_end)
    sent = [sum(s) for s in reducer.step_nbytes]
    dense = reducer.dense_nbytes[0]
    return Trained(label or name, name, seed, int(workers), tuple(evals), tuple(accs), calls, steps_per_epoch,
                   tuple(max(s) for s in reducer.step_nbytes), tuple(sent), dense,
                   workers * dense * len(sent) / sum(sent), workers * dense * calls / sum(sent[-calls:]))


def compare(configs: dict, data, *, seeds=(0, 1), **kwargs) -> list[Summary]:
    """:func:`train_compressed` for every ``label: options`` of ``configs`` (``"name"`` among the options,
    "none" when absent) and every seed; ``kwargs`` go to every run."""
    out = []
    for label, cfg in configs.items():
        cfg = dict(cfg)
        name = cfg.pop("name", "none")
        runs = tuple(train_compressed(name, data, label=label, seed=s, **kwargs, **cfg) for s in seeds)
        accs = [r.accuracy for r in runs]
        out.append(Summary(label, statistics.fmean(accs), statistics.stdev(accs) if len(accs) > 1 else 0.0,
                           statistics.fmean(r.ratio_run for r in runs),
                           statistics.fmean(r.ratio_last for r in runs), runs))
    return out


def format_table(rows: list[Summary], baseline: str | None = None) -> str:
    """A text table: accuracy (mean +- spread over seeds, in %), the change from ``baseline`` (a label) in
    points, and both compression ratios (whole run and last epoch)."""
    base = next((r for r in rows if r.label == baseline), None)
    width = max(len(r.label) for r in rows) + 2
    vs = max(14, len(baseline or "") + 6)
    head = f"{'':{width}s}{'accuracy %':>15s}" + (f"{'vs ' + baseline:>{vs}s}" if base else "")
    lines = [head + f"{'ratio (run)':>13s}{'ratio (last)':>14s}"]
    for r in rows:
        acc = f"{100 * r.accuracy_mean:.2f} +- {100 * r.accuracy_std:.2f}"
        line = f"{r.label:{width}s}{acc:>15s}"
        if base:
            line += f"{100 * (r.accuracy_mean - base.accuracy_mean):+{vs}.2f}"
        lines.append(line + f"{r.ratio_run:12.1f}x{r.ratio_last:13.1f}x")
    return "\n".join(lines)


def step_times(run: Trained, *, alpha: float, beta: float) -> np.ndarray:
    """Seconds of each exchange of ``run``: a ring all-reduce of the dense gradient for "none", else a ring
    all-gather of the messages, each padded to that step's largest (as
    :meth:`~scaledl.comm.compression.reducer.CompressedReducer.exchange_time_s`)."""
    p = run.workers
    if run.name == "none":
        t = allreduce_time("ring", p, run.dense_nbytes, alpha=alpha, beta=beta)
        return np.full(len(run.step_nbytes), float(t))
    return np.asarray(allgather_time("ring", p, p * np.asarray(run.step_nbytes, float), alpha=alpha, beta=beta),
                      dtype=float)


def time_to_accuracy(run: Trained, target: float, *, alpha: float, beta: float,
                     compute_s: float) -> tuple[float | None, int | None]:
    """(seconds, exchanges) until the first evaluation at which ``run`` reached ``target`` accuracy, each
    exchange costing ``compute_s`` plus its alpha-beta time; (None, None) if it never did.

    Raises:
        ValueError: a negative compute time or a target outside (0, 1].
    """
    if not (compute_s >= 0 and math.isfinite(compute_s)):
        raise ValueError(f"compute_s must be a finite time >= 0 (seconds per step), got {compute_s!r}")
    if not (0 < target <= 1):
        raise ValueError(f"target must be an accuracy in (0, 1], got {target!r}")
    for step, acc in zip(run.eval_step, run.test_accuracy):
        if acc >= target:
            epochs, rest = divmod(step, run.steps_per_epoch)
            calls = epochs * run.calls_per_epoch + min(rest, run.calls_per_epoch)
            t = step_times(run, alpha=alpha, beta=beta)[:calls]
            return float(calls * compute_s + t.sum()), calls
    return None, None


def break_even_compute_s(dense: Trained, compressed: Trained, target: float, *, alpha: float,
                         beta: float) -> float | None:
    """The compute time per step below which ``compressed`` reaches ``target`` sooner than ``dense``.

    With s steps and total exchange time E, the time is s c + E; compression pays while
    s_c c + E_c < s_d c + E_d. If it needs no more steps it pays for every c (inf) or none (0.0); None if
    either run never reaches the target.
    """
    td, sd = time_to_accuracy(dense, target, alpha=alpha, beta=beta, compute_s=0.0)
    tc, sc = time_to_accuracy(compressed, target, alpha=alpha, beta=beta, compute_s=0.0)
    if td is None or tc is None:
        return None
    if sc <= sd:
        return math.inf if tc < td else 0.0
    return max(0.0, (td - tc) / (sc - sd))


def sparse_fill_in(n: int, ranks, densities, *, seed: int = 0) -> list[tuple]:
    """SparCML's recursive-doubling sparse all-reduce of random supports (each rank ``density * n`` distinct
    uniformly chosen elements), against the dense all-reduces: rows of (p, density, sparse bytes,
    dense recursive-doubling bytes, dense ring bytes, density of the result, rounds sent dense), bytes summed
    over all ranks."""
    from scaledl.comm.compression.sparse_allreduce import sparse_allreduce

    rng = np.random.default_rng(seed)
    rows = []
    for p in ranks:
        for d in densities:
            k = max(1, round(d * n))
            xs = []
            for _ in range(p):
                x = np.zeros(n, np.float32)
                x[rng.choice(n, k, replace=False)] = rng.standard_normal(k).astype(np.float32) + 4
                xs.append(x)
            out = sparse_allreduce(xs)
            ring = 2 * (p - 1) * n * 4  # every rank sends 2 (p-1)/p of the vector
            dense_rounds = sum(1 for rnd in out.rounds if all(dense for *_, dense in rnd))
            rows.append((p, d, out.nbytes, out.dense_nbytes, ring, float((out.result != 0).mean()), dense_rounds))
    return rows


def dgc_fill_in(data, *, workers: int = 8, ratio: float = 0.01, epochs: int = 2, seed: int = 0,
                sizes=(64, 128, 10), batch_size: int = 64) -> dict:
    """Fill-in of *real* DGC messages against random supports of the same size.

    Trains the MLP with DGC (no warm-up) and keeps the messages of the last exchange; each worker's
    messages, concatenated over the tensors, is one sparse vector. Returns the nonzeros per worker, and for
    the real vectors and for random supports with the same nonzeros per worker: the nonzeros of the sum and
    the bytes of :func:`~scaledl.comm.compression.sparse_allreduce.sparse_allreduce`.
    """
    from scaledl.comm.compression.sparse_allreduce import sparse_allreduce
    from scaledl.nn import SGD, mlp, train

    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 2:
        raise ValueError(f"workers must be an integer >= 2, got {workers!r}")
    reducer = compressed_reducer("dgc", workers, seed=seed, ratio=ratio, warmup_epochs=0)
    last: dict[int, dict] = {}
    for w, c in enumerate(reducer.compressors):
        def compress(g, key="", _orig=c.compress, _w=w):
            msg = _orig(g, key=key)
            last.setdefault(_w, {})[key] = msg
            return msg
        c.compress = compress
    model = mlp(list(sizes), seed=seed)
    train(model, data, epochs=epochs, batch_size=batch_size, workers=workers, reducer=reducer,
          optimizer=SGD(lr=0.05, momentum=0.0), seed=seed)
    real = [np.concatenate([m.decode().ravel() for m in last[w].values()]).astype(np.float64) for w in range(workers)]
    n = real[0].size
    nnz = [int(np.count_nonzero(v)) for v in real]
    rng = np.random.default_rng(seed)
    rand = []
    for k in nnz:
        v = np.zeros(n)
        v[rng.choice(n, k, replace=False)] = 1.0
        rand.append(v)
    a, b = sparse_allreduce(real), sparse_allreduce(rand)
    return {"n": n, "nnz_per_worker": nnz, "real_result_nnz": int(np.count_nonzero(a.result)),
            "real_nbytes": a.nbytes, "random_result_nnz": int(np.count_nonzero(b.result)),
            "random_nbytes": b.nbytes, "dense_ring_nbytes": 2 * (workers - 1) * n * 4}


# AlexNet as Krizhevsky et al. 2012 trained it (the two-GPU grouping of conv2, conv4 and conv5), as
# (name, out, in per group, kernel): 60,965,224 parameters.
ALEXNET_LAYERS = (("conv1", 96, 3, 11), ("conv2", 256, 48, 5), ("conv3", 384, 256, 3), ("conv4", 384, 192, 3),
                  ("conv5", 256, 192, 3), ("fc6", 4096, 256 * 6 * 6, 1), ("fc7", 4096, 4096, 1),
                  ("fc8", 1000, 4096, 1))
# SqueezeNet v1.0 (Iandola et al. 2016, Table 1): conv1 96 7x7, eight fire modules (squeeze 1x1, expand 1x1,
# expand 3x3 channels), conv10 1x1 to 1000 classes: 1,248,424 parameters.
SQUEEZENET_FIRE = ((16, 64, 64), (16, 64, 64), (32, 128, 128), (32, 128, 128), (48, 192, 192), (48, 192, 192),
                   (64, 256, 256), (64, 256, 256))


def alexnet_parameters() -> int:
    """Weights and biases of :data:`ALEXNET_LAYERS`."""
    return sum(out * cin * k * k + out for _, out, cin, k in ALEXNET_LAYERS)


def squeezenet_parameters() -> int:
    """Weights and biases of SqueezeNet v1.0 (:data:`SQUEEZENET_FIRE`)."""
    total, cin = 96 * 3 * 7 * 7 + 96, 96
    for s, e1, e3 in SQUEEZENET_FIRE:
        total += cin * s + s + s * e1 + e1 + s * 9 * e3 + e3
        cin = e1 + e3
    return total + cin * 1000 + 1000


def time_view(summaries: list[Summary], *, bandwidth_Gbit_s: float = 1.0, latency_us: float = 50.0,
              compute_us: float = 1000.0, target: float = 0.95):
    """Bar chart: seconds to ``target`` accuracy (mean over the seeds that reach it) per configuration, on a
    network of ``bandwidth_Gbit_s`` gigabit/s and ``latency_us`` per message, with ``compute_us`` of compute per
    step; the split into compute and communication is drawn."""
    import matplotlib.pyplot as plt

    if not (bandwidth_Gbit_s > 0 and latency_us >= 0 and compute_us >= 0):
        raise ValueError(f"bandwidth_Gbit_s must be > 0 and latency_us, compute_us >= 0, got "
                         f"{bandwidth_Gbit_s!r}, {latency_us!r}, {compute_us!r}")
    alpha, beta = latency_us * 1e-6, 8 / (bandwidth_Gbit_s * 1e9)
    labels, comp, comm = [], [], []
    for s in summaries:
        got = [time_to_accuracy(r, target, alpha=alpha, beta=beta, compute_s=compute_us * 1e-6) for r in s.runs]
        got = [(t, c) for t, c in got if t is not None]
        labels.append(s.label if got else f"{s.label} (never)")
        c = statistics.fmean(c * compute_us * 1e-6 for _, c in got) if got else 0.0
        comp.append(c)
        comm.append(statistics.fmean(t for t, _ in got) - c if got else 0.0)
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * len(labels) + 1.2))
    y = np.arange(len(labels))
    ax.barh(y, comp, color="0.6", label="compute")
    ax.barh(y, comm, left=comp, color="C0", label="communication")
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel(f"seconds to {100 * target:g} % test accuracy")
    ax.set_title(f"{bandwidth_Gbit_s:g} Gb/s, {latency_us:g} us/message, {compute_us:g} us compute/step", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    plt.close(fig)
    return fig


def fill_in_view(ranks: int = 8, density_percent: float = 1.0, n: int = 100_000) -> str:
    """Text: bytes of one sparse all-reduce of random supports (SparCML recursive doubling) against the dense
    ring, round by round."""
    from scaledl.comm.compression.sparse_allreduce import break_even_density, sparse_allreduce

    if not (0 < density_percent <= 100):
        raise ValueError(f"density_percent must be in (0, 100], got {density_percent!r}")
    rng = np.random.default_rng(0)
    k = max(1, round(density_percent / 100 * n))
    xs = []
    for _ in range(int(ranks)):
        x = np.zeros(n, np.float32)
        x[rng.choice(n, k, replace=False)] = 1.0
        xs.append(x)
    out = sparse_allreduce(xs)
    lines = [f"{ranks} ranks, {n:,} float32 elements, {density_percent:g} % each; "
             f"dense past {100 * break_even_density():g} %"]
    for i, rnd in enumerate(out.rounds):
        nb = max(b for _, _, b, _ in rnd)
        kind = "dense" if all(d for *_, d in rnd) else "sparse"
        lines.append(f"round {i + 1}: {nb:>9,d} B per message ({kind})")
    ring = 2 * (ranks - 1) * n * 4
    lines.append(f"total {out.nbytes:,} B sparse vs {ring:,} B dense ring ({ring / out.nbytes:.2f}x); "
                 f"result {100 * (out.result != 0).mean():.1f} % nonzero")
    return "\n".join(lines)
