"""Chapter 13's planner: memory, pipeline schedules and their bubble, tensor-parallel splits, step time."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from scaledl.comm import plan as P  # noqa: E402
from scaledl.nn import ops  # noqa: E402


def test_memory_and_gpu_count():
    assert P.training_bytes(1e9) == 16e9
    assert P.gpus_to_hold(1.2e12) == 240 and P.gpus_to_hold(5e9) == 1
    with pytest.raises(ValueError, match=r"params must be a positive finite number, got -1"):
        P.training_bytes(-1)


@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p, m", [(1, 1), (2, 3), (4, 4), (4, 12), (5, 7)])
def test_schedules_have_the_bubble_of_the_formula(kind, p, m):
    sched = P.pipeline_schedule(kind, p, m)
    assert len(sched) == 2 * p * m
    makespan = max(e[4] for e in sched)
    busy = m * (1.0 + 2.0)
    assert 1 - busy / makespan == pytest.approx(P.bubble_fraction(p, m), abs=1e-12)
    for s, op, j, start, end in sched:  # dependencies hold
        if op == "F" and s > 0:
            assert start >= next(e[4] for e in sched if e[:3] == (s - 1, "F", j))
        if op == "B" and s < p - 1:
            assert start >= next(e[4] for e in sched if e[:3] == (s + 1, "B", j))


def test_1f1b_keeps_fewer_activations():
    assert P.in_flight(P.pipeline_schedule("gpipe", 4, 8)) == [8, 8, 8, 8]
    assert P.in_flight(P.pipeline_schedule("1f1b", 4, 8)) == [4, 3, 2, 1]
    with pytest.raises(ValueError, match=r"unknown pipeline schedule 'zb'"):
        P.pipeline_schedule("zb", 2, 2)
    with pytest.raises(ValueError, match=r"microbatches must be >= 1, got 0"):
        P.bubble_fraction(2, 0)


def test_column_split_is_bitwise_and_row_split_within_rounding():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 37)).astype(np.float32)
    w = rng.standard_normal((37, 23)).astype(np.float32)
    full = ops.matmul(x, w)
    cols = P.column_parallel(x, w, 4, matmul=ops.matmul)
    assert np.array_equal(np.concatenate(cols, axis=1), full)  # each output computed in the same order
    rows = P.row_parallel(x, w, 4, matmul=ops.matmul)
    summed = rows[0] + rows[1] + rows[2] + rows[3]
    # a different order of 37 additions: within 37 eps sum|x w| (Higham's bound), far looser than what happens
    bound = 37 * np.finfo(np.float32).eps * ops.matmul(np.abs(x), np.abs(w))
    assert np.all(np.abs(summed - full) <= bound)


def test_step_time_terms():
    r = P.step_time(P.Layout(175e9, tp=8, pp=8, dp=16, microbatches=16))
    assert (r["layers"], r["hidden"], r["gpus"]) == (96, 12288, 1024)
    assert r["bubble_fraction"] == pytest.approx(7 / 23)
    assert r["bubble_s"] == pytest.approx(r["compute_s"] * 7 / 16)
    assert r["memory_per_gpu_B"] == pytest.approx(175e9 * 16 / 64)
    one = P.step_time(P.Layout(1e9))
    assert one["tp_comm_s"] == one["dp_comm_s"] == one["bubble_s"] == 0.0
    with pytest.raises(ValueError, match=r"tp must be <= 8"):
        P.step_time(P.Layout(1e9, tp=16))


def test_data_parallel_compute_halves_and_communication_does_not():
    g = np.array([16, 32, 64, 128])
    compute, comm = P.data_parallel_scaling(g, compute_1gpu_s=100.0, gradient_B=1e8)
    assert np.allclose(compute[1:] / compute[:-1], 0.5)
    # never falls: the bandwidth term tends to 2 n beta, the latency term grows with p
    assert np.all(np.diff(comm) > 0) and comm[-1] / comm[0] < 1.5


def test_layout_view():
    fig = P.layout_view(175, 8, 8, 16, 16)
    assert "1024 GPUs" in fig._suptitle.get_text()
    matplotlib.pyplot.close(fig)
    assert P.layout_view(175, 16, 1, 1).startswith("not a valid layout: tp must be <= 8")
