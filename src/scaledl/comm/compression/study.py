"""Accuracy against the real compression ratio: data-parallel training with each compressor, over seeds.

One run trains a fresh model with ``workers`` simulated workers whose gradients go through
:func:`~scaledl.comm.compression.reducer.compressed_reducer`, and reports the final test accuracy and the
compression ratio measured from the messages' encoded bytes, over the whole run (warm-up epochs included)
and over the last epoch. Compressors with
momentum correction (DGC) carry the momentum themselves, so their optimizer runs without it; all others
use momentum SGD with the same learning rate.

>>> from scaledl.nn import teacher_student
>>> rows = accuracy_vs_compression({"none": {}, "topk 10%": {"name": "topk", "ratio": 0.1}},
...                                teacher_student(200, 100, seed=0), sizes=[16, 8, 4], workers=2,
...                                seeds=(0,), epochs=1, batch_size=20)
>>> [(r.label, round(r.compression_ratio, 2)) for r in rows]
[('none', 1.0), ('topk 10%', 4.53)]
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from scaledl.comm.compression.reducer import compressed_reducer

__all__ = ["Run", "Summary", "accuracy_vs_compression"]


@dataclass(frozen=True)
class Run:
    label: str
    seed: int
    test_accuracy: float
    compression_ratio: float  # float32 bytes / encoded bytes, over every step and worker
    last_epoch_ratio: float   # the same over the last epoch only (after DGC's warm-up)
    skipped_steps: int


@dataclass(frozen=True)
class Summary:
    """Mean and spread (sample standard deviation; 0 for one seed) over seeds."""
    label: str
    accuracy_mean: float
    accuracy_std: float
    compression_ratio: float  # mean over seeds
    last_epoch_ratio: float   # mean over seeds
    runs: tuple


def accuracy_vs_compression(configs: dict, data, *, sizes=(64, 128, 10), workers: int = 8, seeds=(0, 1),
                            epochs: int = 10, batch_size: int = 64, lr: float = 0.05,
                            momentum: float = 0.9) -> list[Summary]:
    """Train one model per (config, seed) and summarise; ``configs`` maps a label to the options of
    :func:`~scaledl.comm.compression.make_compressor` (``"name"`` among them, "none" when absent). DGC's
    warm-up is given the exchanges of an epoch unless the config sets it: :func:`scaledl.nn.train` skips a
    trailing batch smaller than ``workers``, so an epoch can have one exchange fewer than batches, and the
    last-epoch ratio counts exchanges too."""
    from scaledl.comm.compression.views import calls_per_epoch
    from scaledl.nn import SGD, mlp, train

    steps_per_epoch = calls_per_epoch(data.n_train, batch_size, workers)
    out = []
    for label, cfg in configs.items():
        cfg = dict(cfg)
        name = cfg.pop("name", "none")
        if name == "dgc":
            cfg.setdefault("steps_per_epoch", steps_per_epoch)
            cfg.setdefault("momentum", momentum)
        runs = []
        for seed in seeds:
            reducer = compressed_reducer(name, workers, seed=seed, **cfg)
            own_momentum = name == "dgc" and cfg.get("momentum_correction", True)
            opt = SGD(lr=lr, momentum=0.0 if own_momentum else momentum)
            h = train(mlp(list(sizes), seed=seed), data, epochs=epochs, batch_size=batch_size, workers=workers,
                      reducer=reducer, optimizer=opt, seed=seed)
            last = reducer.step_nbytes[-steps_per_epoch:]
            last_ratio = workers * sum(reducer.dense_nbytes[-steps_per_epoch:]) / sum(map(sum, last))
            runs.append(Run(label, seed, h.test_accuracy[-1], reducer.compression_ratio, last_ratio,
                            h.skipped_steps))
        accs = [r.test_accuracy for r in runs]
        out.append(Summary(label, statistics.fmean(accs), statistics.stdev(accs) if len(accs) > 1 else 0.0,
                           statistics.fmean(r.compression_ratio for r in runs),
                           statistics.fmean(r.last_epoch_ratio for r in runs), tuple(runs)))
    return out
