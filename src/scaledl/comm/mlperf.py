"""Step times of MLPerf Training's ResNet-50 submissions, read from their result logs.

:mod:`scaledl.comm.mlperf_logs` holds what ``tools/mlperf_extract.py`` took from the logs in MLCommons'
``training_results_vX.Y`` repositories: per result log the global batch, the optimizer and, per block of epochs
between two evaluations, the training time (``block_start`` to ``eval_start``). A step here is one global
batch: the step time of a block is its training time x global batch / (epochs x 1,281,167 images), and a
submission's step time is the median over every block but each run's first (which holds start-up and the
first compilations) of every run at the submission's global batch.

Each log's ``run_stop`` carries a status: "success", or "aborted" (the run stopped without reaching the target
quality). An aborted run's blocks time real steps, but nothing vouches for the run, so its blocks are left out
of every median where a successful run exists at that batch; where none does (Dell's one XE8545 at 816), the
step comes from the aborted logs only and says so (:attr:`Submission.aborted_only`, ``step_s_at(...,
allow_aborted=True)``), and :mod:`scaledl.comm.record_calibrations` does not calibrate on it.

>>> s = submission("v1.1", "dgxa100_n8_ngc21.09_mxnet")
>>> s.gpus, s.per_gpu_batch, s.optimizer, round(s.step_s * 1e3, 2)
(64, 51, 'lars', 19.58)
>>> round(s.samples_per_s_per_gpu), s.runs, s.aborted   # one of its five logs is aborted: left out
(2605, 4, 1)
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from scaledl.comm import mlperf_logs
from scaledl.perf.progress import IMAGENET_TRAIN_IMAGES

__all__ = ["Submission", "submission", "submissions", "block_step_s", "step_s_at", "ABORTED"]


@dataclass(frozen=True)
class Submission:
    """One system's ResNet-50 result in one MLPerf Training round, as its logs give it."""

    round: str
    submitter: str
    system: str
    nodes: int
    gpus_per_node: int
    accelerator: str           # as the system description names it
    host_networking: str
    framework: str
    global_batch: int
    optimizer: str
    step_s: float              # median training step over the blocks used
    step_range_s: tuple[float, float]
    blocks: int                # how many blocks the median is over
    runs: int                  # result logs at global_batch whose blocks make the median
    source: str                # repository, commit and folder
    aborted: int = 0           # logs at global_batch whose run_stop status is "aborted", left out
    aborted_only: bool = False  # no successful log at global_batch: the median is over the aborted ones

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def per_gpu_batch(self) -> int:
        return self.global_batch // self.gpus

    @property
    def samples_per_s_per_gpu(self) -> float:
        return self.per_gpu_batch / self.step_s


def block_step_s(block, global_batch: int) -> float:
    """The step time of one block ``[first epoch, epochs, training ms, evaluation ms]``.

    >>> round(block_step_s([2, 4, 226980, 2231], 3264) * 1e3, 2)   # v0.7, one DGX A100, 4 epochs in 227 s
    144.57
    """
    _, epochs, train_ms, _ = block
    return train_ms / 1e3 * global_batch / (epochs * IMAGENET_TRAIN_IMAGES)


ABORTED = "aborted"


def _steps(rec: dict, batch: int) -> tuple[list[dict], list[float], int, bool]:
    """The runs at ``batch`` that make the median, their steps, how many aborted runs were left out, and
    whether only aborted runs exist (then they are the ones used)."""
    at = [r for r in rec["runs"] if r["global_batch"] == batch]
    ok = [r for r in at if r.get("status") != ABORTED]
    runs, aborted_only = (ok, False) if ok else (at, bool(at))
    return runs, [block_step_s(b, batch) for r in runs for b in r["blocks"][1:]], len(at) - len(ok), aborted_only


def _submission(rec: dict) -> Submission:
    batches = Counter(r["global_batch"] for r in rec["runs"])
    batch = batches.most_common(1)[0][0]
    runs, steps, aborted, aborted_only = _steps(rec, batch)
    optimizers = {r["optimizer"] for r in runs}
    if len(optimizers) != 1:
        raise ValueError(f"{rec['system']}: runs at one batch with different optimizers {sorted(optimizers)}")
    return Submission(rec["round"], rec["submitter"], rec["system"], rec["nodes"], rec["accelerators_per_node"],
                      rec["accelerator"], rec["host_networking"], rec["framework"], batch, optimizers.pop(),
                      statistics.median(steps), (min(steps), max(steps)), len(steps), len(runs),
                      f"{rec['repository']} at {rec['commit'][:12]}, {rec['path']}", 0 if aborted_only else aborted,
                      aborted_only)


_SUBMISSIONS = tuple(_submission(rec) for rec in mlperf_logs.SYSTEMS)


def submissions() -> tuple[Submission, ...]:
    """Every submission in the extracted logs, by round."""
    return _SUBMISSIONS


def submission(round: str, system: str) -> Submission:
    """The submission of ``system`` in ``round`` (e.g. "v2.0", "dgxa100_n8_ngc22.04_mxnet")."""
    for s in _SUBMISSIONS:
        if s.round == round and s.system == system:
            return s
    known = ", ".join(f"{s.round} {s.system}" for s in _SUBMISSIONS)
    raise ValueError(f"round, system must name an extracted submission ({known}); got {round!r}, {system!r}")


def step_s_at(round: str, system: str, global_batch: int, *, allow_aborted: bool = False) -> float:
    """The median step of ``system``'s successful runs in ``round`` at ``global_batch`` (a submission whose
    runs used two batches: Dell's one XE8545 in v2.0 ran four at 1,024 and one at 816, that one aborted).
    ``allow_aborted=True`` falls back on aborted runs where no successful one exists at that batch.

    >>> round(step_s_at("v2.0", "XE8545x4A100-SXM-40GB", 816, allow_aborted=True) * 1e3, 1)
    68.4

    Raises:
        ValueError: no run at ``global_batch``, or only aborted ones and ``allow_aborted`` False.
    """
    if not isinstance(allow_aborted, bool):
        raise TypeError(f"allow_aborted must be True or False, got {allow_aborted!r}")
    for rec in mlperf_logs.SYSTEMS:
        if rec["round"] == round and rec["system"] == system:
            _, steps, _, aborted_only = _steps(rec, global_batch)
            if not steps:
                batches = sorted({r["global_batch"] for r in rec["runs"]})
                raise ValueError(f"global_batch must be one of {batches} for {system}, got {global_batch!r}")
            if aborted_only and not allow_aborted:
                raise ValueError(f"{round} {system} at global_batch={global_batch}: every log's run_stop status "
                                 "is 'aborted'; pass allow_aborted=True to use them anyway")
            return statistics.median(steps)
    submission(round, system)        # raises, naming the known ones
    raise AssertionError("unreachable")
