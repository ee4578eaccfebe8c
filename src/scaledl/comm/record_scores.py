"""The record runs (:mod:`scaledl.comm.record_runs`) scored against the strongest trivial baseline of each row.

Three baselines stand beside the cluster model, each with no more inputs than it has:

  - **perfect scaling**: 100 % efficiency, and the baseline's measured time per sample at the run's batch;
  - **communication only**: the baseline's time per sample plus every all-reduce in full (chapter 14's closed
    forms), no fixed part, no overlap (:func:`~scaledl.comm.cluster_model.communication_only`);
  - **the calibration alone**: the straight line t(b) = a + c b through the calibration's two logged steps, no
    network at all (:func:`~scaledl.comm.record_calibrations.calibration_alone`); its efficiency is its own
    throughput at the run's per-GPU batch against that at the baseline's. Where the baseline runs at the same
    per-GPU batch (weak scaling) it is perfect scaling.

Per row (:class:`Score`) the model's error and each baseline's, on the efficiency (points) and on the step
(relative), and the **skill**: the best baseline's absolute error minus the model's. Skill over the best is what
the network term adds; skill over perfect scaling alone would credit the model with what its calibration
already knows (the fixed cost per step that makes a small per-GPU batch slow).

A row is ``in-sample`` (shown, not scored) when it repeats a calibration point's configuration, and carries
marks: ``extrapolated`` (its per-GPU batch outside the span the calibration was fitted at), ``duplicate``
(the same configuration as another scored row: one model value for both, so a mean counts it twice) and
``aborted log`` (its calibration goes through a point whose only log ends in run_stop status "aborted").

>>> from scaledl.comm.record_runs import record
>>> s = score(record("MLPerf v2.0, Dell, 8 XE8545"))
>>> s.efficiency.best_baseline, round(100 * s.efficiency.skill), s.marks
('calibration alone', 4, ('extrapolated', 'aborted log'))
>>> score(record("MLPerf v2.0, NVIDIA, 8 DGX A100")).status
'in-sample'
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from scaledl.comm.cluster_model import predict
from scaledl.comm.record_calibrations import MLPERF_POINTS, NODES, calibration_alone, fitted_batches
from scaledl.comm.record_runs import GOALS, RECORD_RUNS, RecordRun, in_sample_point

__all__ = ["BASELINES", "Errors", "Score", "calibration_alone_prediction", "score", "scores", "summary",
           "strong_table", "weak_table", "details_table", "calibration_lines", "sources", "group", "verdict",
           "with_calibration", "curves", "curves_table"]

BASELINES = ("perfect scaling", "communication only", "calibration alone")


@dataclass(frozen=True)
class Errors:
    """The model's error and each baseline's (None where the row has no measurement for it): points of
    efficiency, or the step's relative error."""

    model: float | None
    perfect: float | None
    communication_only: float | None
    calibration_alone: float | None

    def baselines(self) -> dict[str, float]:
        """The baselines' errors that exist, by name (BASELINES)."""
        values = (self.perfect, self.communication_only, self.calibration_alone)
        return {n: v for n, v in zip(BASELINES, values) if v is not None}

    def skill_over(self, baseline: str) -> float:
        """|baseline's error| - |model's error|: positive where the model is closer."""
        b = self.baselines()
        if baseline not in b:
            raise ValueError(f"baseline must be one of {sorted(b)}, got {baseline!r}")
        return abs(b[baseline]) - abs(self.model)

    @property
    def best_baseline(self) -> str | None:
        """The baseline closest to the measurement (the first of BASELINES on a tie)."""
        b = self.baselines()
        return min(b, key=lambda n: abs(b[n])) if b and self.model is not None else None

    @property
    def skill(self) -> float | None:
        """Skill over the best baseline of the row."""
        best = self.best_baseline
        return None if best is None else self.skill_over(best)


@dataclass(frozen=True)
class Score:
    """One row scored: ``efficiency`` and ``step`` errors (None where not measured), ``status`` ("scored",
    "in-sample", "not scored"), ``marks`` ("extrapolated", "duplicate"), and for strong scaling the loss split:
    the model's loss to the smaller per-GPU batch and to communication, the measured loss, and what the
    calibration alone leaves to communication (its efficiency minus the measured one)."""

    run: RecordRun
    efficiency: Errors | None
    step: Errors | None
    status: str
    marks: tuple[str, ...]
    duplicate_of: str = ""
    loss_to_batch: float | None = None
    loss_to_communication: float | None = None
    measured_loss: float | None = None
    communication_left: float | None = None

    @property
    def name(self) -> str:
        return self.run.name


def calibration_alone_prediction(r: RecordRun) -> tuple[float, float]:
    """(step seconds, efficiency) of the calibration alone for row ``r``: its line's step at the run's per-GPU
    batch, and its throughput there against that at the baseline's per-GPU batch."""
    if not isinstance(r, RecordRun):
        raise TypeError(f"r must be a RecordRun, got {type(r).__name__}")
    line = calibration_alone(r.run.calibration)
    b, ref = r.run.batch, r.run.reference_batch or r.run.batch
    return line.compute_s(b), line.samples_per_s(b) / line.samples_per_s(ref)


def _errors(r: RecordRun) -> tuple[Errors | None, Errors | None]:
    alone_step, alone_eff = calibration_alone_prediction(r)
    m = r.measured
    eff = None if m.efficiency is None else Errors(r.efficiency_error, r.perfect_error, r.communication_only_error,
                                                   alone_eff - m.efficiency)
    step = None if m.step_s is None else Errors(r.step_error, r.perfect_step_error, r.communication_only_step_error,
                                                alone_step / m.step_s - 1)
    return eff, step


def _extrapolated(r: RecordRun) -> bool:
    span = fitted_batches(r.run.calibration)
    return span is not None and not span[0] <= r.run.batch <= span[1]


def score(r: RecordRun, runs=RECORD_RUNS) -> Score:
    """Row ``r`` scored; ``runs`` are the rows a duplicate is looked for among."""
    eff, step = _errors(r)
    status = "in-sample" if r.calibration else ("scored" if r.scored else "not scored")
    twin = next((o.name for o in runs if o.name != r.name and o.scored and o.run == r.run
                 and o.measured.efficiency is not None), "") if status == "scored" else ""
    aborted = any(pt.aborted for pt in MLPERF_POINTS.get(r.run.calibration, ()))
    marks = tuple(m for m, on in (("extrapolated", _extrapolated(r)), ("duplicate", bool(twin)),
                                  ("aborted log", aborted)) if on)
    split = {}
    if not r.weak_scaling and r.measured.efficiency is not None:
        p = r.prediction
        split = dict(loss_to_batch=p.loss_to_batch, loss_to_communication=p.loss_to_communication,
                     measured_loss=1 - r.measured.efficiency,
                     communication_left=calibration_alone_prediction(r)[1] - r.measured.efficiency)
    return Score(r, eff, step, status, marks, twin, **split)


def scores(runs=RECORD_RUNS) -> tuple[Score, ...]:
    """Every row of ``runs`` scored."""
    return tuple(score(r, runs) for r in runs)


def group(s: Score) -> str:
    """"weak scaling" for the papers, else the MLPerf submitter's nodes: "NVIDIA DGX" or "Dell XE8545"."""
    if s.run.weak_scaling:
        return "weak scaling"
    return "Dell XE8545" if ", Dell," in s.name else "NVIDIA DGX"


def summary(rows) -> dict:
    """Mean absolute errors over the scored ``rows`` (Scores): per family ("efficiency", "step") the row count,
    the model's and each baseline's mean error, and the mean skill over each row's best baseline."""
    out = {}
    for family in ("efficiency", "step"):
        errs = [getattr(s, family) for s in rows if s.status == "scored" and getattr(s, family) is not None]
        errs = [e for e in errs if e.best_baseline is not None]
        mean = (lambda xs: float(np.mean(np.abs(xs))) if xs else math.nan)
        out[family] = dict(rows=len(errs), model=mean([e.model for e in errs]),
                           **{b: mean([e.baselines().get(b, math.nan) for e in errs]) for b in BASELINES},
                           skill_over_best=float(np.mean([e.skill for e in errs])) if errs else math.nan)
    return out


def _short(name: str) -> str:
    return name.replace("MLPerf ", "").replace(",", "")


def _pts(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.0f}"


def _rel(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.0f}%"


def verdict(e: Errors | None, s: Score) -> str:
    """"skill" where the model beats the row's best baseline by GOALS["margin_points"] or more, "no skill"
    where it does not (within the margin of the best baseline, or behind it); the status for a row not scored."""
    if s.status != "scored":
        return s.status
    return "" if e is None or e.skill is None else ("skill" if e.skill >= GOALS["margin_points"] else "no skill")


def strong_table(rows=None) -> str:
    """MLPerf's rows (strong scaling against one node at a larger per-GPU batch): measured efficiency, the
    errors in points of the model and of the three baselines, skill over the best; the step's relative errors
    likewise; then the loss split. Marks: in-sample (not scored), extrapolated, duplicate."""
    rows = [s for s in (scores() if rows is None else rows) if not s.run.weak_scaling]
    head = (f"{'run':<24} {'GPUs':>4} {'b/GPU':>5} | {'meas':>4} {'model':>5} {'100%':>4} {'comm':>4} "
            f"{'alone':>5} {'skill':>5} | {'step':>7} {'model':>5} {'alone':>5} {'skill':>5} | marks")
    lines = ["Strong scaling (MLPerf): efficiency errors in points, step errors in %, skill over the best "
             "baseline", head]
    for s in rows:
        e, t, r = s.efficiency, s.step, s.run
        marks = ", ".join(((s.status,) if s.status != "scored" else ()) + s.marks)
        lines.append(f"{_short(s.name):<24} {r.run.gpus:>4} {r.run.batch:>5} | {100 * r.measured.efficiency:>3.0f}%"
                     f" {_pts(e.model):>5} {_pts(e.perfect):>4} {_pts(e.communication_only):>4} "
                     f"{_pts(e.calibration_alone):>5} {_pts(e.skill):>5} | {1e3 * r.measured.step_s:>4.1f} ms "
                     f"{_rel(t.model):>5} {_rel(t.calibration_alone):>5} {_pts(t.skill):>5} | {marks}")
    lines += ["", "Where the loss goes (points): measured loss; the model's loss to the smaller per-GPU batch and to "
              "communication; what the calibration alone leaves to communication",
              f"{'run':<24} {'measured':>8} {'batch':>6} {'comm':>5} {'left':>5}"]
    for s in rows:
        lines.append(f"{_short(s.name):<24} {100 * s.measured_loss:>8.0f} {100 * s.loss_to_batch:>6.0f} "
                     f"{100 * s.loss_to_communication:>5.0f} {_pts(s.communication_left):>5}")
    return "\n".join(lines)


def weak_table(rows=None) -> str:
    """The papers' rows (weak scaling: the baseline at the same per-GPU batch): measured efficiency, errors in
    points of the model, perfect scaling and communication only (the calibration alone is perfect scaling here),
    skill over the best; a step time where the row has one."""
    rows = [s for s in (scores() if rows is None else rows) if s.run.weak_scaling]
    lines = ["Weak scaling (the papers): errors in points, skill over the best baseline",
             f"{'run':<38} {'GPUs':>5} {'b/GPU':>5} | {'meas':>5} {'model':>5} {'100%':>5} {'comm':>5} "
             f"{'skill':>5} | verdict"]
    for s in rows:
        r = s.run
        if s.efficiency is not None:
            e = s.efficiency
            lines.append(f"{s.name:<38} {r.run.gpus:>5} {r.run.batch:>5} | {r.measured.efficiency:>5.0%} "
                         f"{_pts(e.model):>5} {_pts(e.perfect):>5} {_pts(e.communication_only):>5} "
                         f"{_pts(e.skill):>5} | {verdict(e, s)}")
        else:
            lines.append(f"{s.name:<38} {r.run.gpus:>5} {r.run.batch:>5} | step {1e3 * r.measured.step_s:.0f} ms, "
                         f"model {_rel(s.step.model)}, the calibration alone {_rel(s.step.calibration_alone)}")
    return "\n".join(lines)


def curves(rows=None) -> dict[str, list[Score]]:
    """MLPerf's rows as scaling curves: per round and submitter ("v2.0 NVIDIA"), its rows in GPU order. Each
    curve starts, implicitly, at its one-node baseline (efficiency 100 % by definition)."""
    out: dict[str, list[Score]] = {}
    for s in (scores() if rows is None else rows):
        if s.run.weak_scaling or not s.name.startswith("MLPerf "):
            continue
        round_, submitter = s.name.split(", ")[:2]
        out.setdefault(f"{round_.removeprefix('MLPerf ')} {submitter}", []).append(s)
    return {k: sorted(v, key=lambda s: s.run.run.gpus) for k, v in out.items()}


def curves_table(rows=None) -> str:
    """Each MLPerf curve end to end: per node count the measured step and efficiency, the model's, and the
    calibration alone's, from the one-node baseline (its measured step; the model's own at one node) on."""
    lines = [f"{'curve':<12} {'nodes':>5} {'b/GPU':>5} | {'step: measured':>14} {'model':>6} {'alone':>6} | "
             f"{'efficiency: measured':>20} {'model':>5} {'alone':>5}"]
    for key, ss in curves(rows).items():
        r0 = ss[0].run
        base = r0.run.baseline()
        line = calibration_alone(r0.run.calibration)
        lines.append(f"{key:<12} {1:>5} {base.batch:>5} | {1e3 * r0.measured.reference_step_s:>11.1f} ms "
                     f"{1e3 * predict(base).step_s:>6.1f} {1e3 * line.compute_s(base.batch):>6.1f} | "
                     f"{'100%':>20} {'100%':>5} {'100%':>5} (baseline)")
        for s in ss:
            r, m = s.run, s.run.measured
            mark = " (in-sample)" if s.status == "in-sample" else ""
            lines.append(f"{'':<12} {r.run.nodes:>5} {r.run.batch:>5} | {1e3 * m.step_s:>11.1f} ms "
                         f"{1e3 * r.prediction.step_s:>6.1f} {1e3 * calibration_alone_prediction(r)[0]:>6.1f} | "
                         f"{m.efficiency:>20.0%} {r.prediction.efficiency:>5.0%} "
                         f"{m.efficiency + s.efficiency.calibration_alone:>5.0%}{mark}")
    return "\n".join(lines)


def details_table(runs=RECORD_RUNS) -> str:
    """Every row with the model's predicted efficiency and step and the errors on the loss (1 - efficiency)
    relative to the measured loss, for the model and communication only; perfect scaling's is -100 % by
    construction and not shown."""
    lines = [f"{'run':<38} {'measured':>8} {'model':>6} {'loss error: model':>18} {'comm':>6} | "
             f"{'step':>8} {'model':>8}"]
    for r in runs:
        m, p = r.measured, r.prediction
        eff = "-" if m.efficiency is None else f"{m.efficiency:.0%}"
        if m.efficiency is not None:
            comm = r.loss_error(m.efficiency + r.communication_only_error)
            loss = f"{r.loss_error(p.efficiency):>+18.0%} {comm:>+6.0%}"
        else:
            loss = f"{'-':>18} {'-':>6}"
        step = "-" if m.step_s is None else f"{1e3 * m.step_s:.1f} ms"
        lines.append(f"{r.name:<38} {eff:>8} {p.efficiency:>6.0%} {loss} | {step:>8} {1e3 * p.step_s:>5.1f} ms")
    return "\n".join(lines)


def _aborted_note(p) -> str:
    if p.aborted:
        return ", its only log there, aborted"
    return f", {p.submission.aborted} aborted log left out" if p.submission.aborted else ""


def with_calibration(runs, old, new) -> tuple[RecordRun, ...]:
    """The rows of ``runs`` predicted with calibration ``old``, predicted with ``new`` instead (in-sample
    again by ``new``'s points): how much a row's score depends on its calibration's logs."""
    out = []
    for r in runs:
        if r.run.calibration != old:
            continue
        node = next(n for n in NODES.values() if all(getattr(r.run, k) == v for k, v in n.items()))
        pt = in_sample_point(new, node, r.run.gpus, r.run.batch)
        out.append(dataclasses.replace(r, run=r.run.replace(calibration=new), calibration=pt is not None,
                                       reason="calibration point" if pt else ""))
    return tuple(out)


def calibration_lines() -> list[str]:
    """One line per MLPerf calibration: its two logged points, and where an aborted log was left out or, at a
    point with no other log, used."""
    out = []
    for cal, points in MLPERF_POINTS.items():
        pts = "; ".join(f"{p.submission.round} {p.submission.system} ({p.gpus} GPUs at {p.batch} per GPU, "
                        f"{1e3 * p.step_s:.2f} ms{_aborted_note(p)})" for p in points)
        out.append(f"{cal.accelerator} ({cal.model}): {pts}")
    return out


def sources(runs=RECORD_RUNS) -> list[str]:
    """One line per row: where its measurement comes from and how it was checked."""
    return [f"[{i}] {r.name}: {r.measured.source}. Checked: {r.measured.verified}." for i, r in enumerate(runs, 1)]

