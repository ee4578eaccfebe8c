"""Chapter 15's experiment helpers: epochs counted in exchanges, time to accuracy, fill-in tables, the
parameter counts, the widget views, and the MPI run equal to the simulated one."""

import math

import matplotlib
import numpy as np
import pytest

from scaledl.comm import cost
from scaledl.comm.compression import views as V
from scaledl.comm.mpi import mpiexec_path
from scaledl.nn import teacher_student


@pytest.fixture(scope="module")
def data():
    return teacher_student(210, 100, seed=0)


def test_calls_per_epoch_counts_only_batches_that_can_be_sharded():
    assert V.calls_per_epoch(1347, 64, 8) == 21   # 21 x 64 = 1344, 3 left < 8 workers: skipped
    assert V.calls_per_epoch(1347, 64, 3) == 22
    assert V.calls_per_epoch(640, 64, 16) == 10


def test_train_compressed_evaluates_every_epoch_and_counts_bytes(data):
    # 210 = 10 x 20 + 10: the trailing batch of 10 is skipped with 16 workers, kept with 2
    for workers, calls in ((2, 11), (16, 10)):
        r = V.train_compressed("none", data, sizes=(16, 8, 4), workers=workers, epochs=3, batch_size=20)
        assert r.calls_per_epoch == calls and len(r.step_nbytes) == 3 * calls
        assert r.eval_step == tuple(e * 11 + calls for e in range(3)) and len(r.test_accuracy) == 3
        assert r.ratio_run == 1.0 and r.ratio_last == 1.0 and r.dense_nbytes == 4 * (16 * 8 + 8 + 8 * 4 + 4)
    d = V.train_compressed("dgc", data, sizes=(16, 8, 4), workers=2, epochs=3, batch_size=20, ratio=0.01,
                           warmup_epochs=2)
    assert d.ratio_last > d.ratio_run > 1  # the warm-up epochs send more
    with pytest.raises(ValueError, match=r"workers must be an integer >= 2"):
        V.train_compressed("topk", data, workers=1)
    with pytest.raises(ValueError, match=r"net: expected"):
        V.train_compressed("topk", data, net="rnn")


def _run(name="topk", acc=(0.5, 0.8, 0.9), nbytes=100, workers=4):
    return V.Trained("x", name, 0, workers, (2, 5, 8), acc, 2, 3, (nbytes,) * 6, (workers * nbytes,) * 6, 1000,
                     10.0, 10.0)


def test_time_to_accuracy_is_steps_times_compute_plus_the_exchanges():
    a, b = 1e-6, 1e-9
    t, calls = V.time_to_accuracy(_run(), 0.8, alpha=a, beta=b, compute_s=1e-3)
    assert calls == 4  # the eval at step 5 = epoch 1's second exchange
    gather = cost.allgather_time("ring", 4, 400, alpha=a, beta=b)
    assert t == pytest.approx(4 * (1e-3 + gather))
    t, calls = V.time_to_accuracy(_run("none"), 0.5, alpha=a, beta=b, compute_s=0.0)
    assert calls == 2 and t == pytest.approx(2 * cost.allreduce_time("ring", 4, 1000, alpha=a, beta=b))
    assert V.time_to_accuracy(_run(), 0.95, alpha=a, beta=b, compute_s=0) == (None, None)
    with pytest.raises(ValueError, match=r"compute_s must be"):
        V.time_to_accuracy(_run(), 0.8, alpha=a, beta=b, compute_s=-1)
    with pytest.raises(ValueError, match=r"target must be"):
        V.time_to_accuracy(_run(), 1.5, alpha=a, beta=b, compute_s=0)


def test_break_even_compute_time():
    a, b = 1e-6, 1e-8
    dense, slow = _run("none", acc=(0.9, 0.9, 0.9)), _run(acc=(0.5, 0.9, 0.9), nbytes=10)
    c = V.break_even_compute_s(dense, slow, 0.9, alpha=a, beta=b)
    td, _ = V.time_to_accuracy(dense, 0.9, alpha=a, beta=b, compute_s=c)
    tc, _ = V.time_to_accuracy(slow, 0.9, alpha=a, beta=b, compute_s=c)
    assert c > 0 and td == pytest.approx(tc)
    assert V.break_even_compute_s(dense, _run(acc=(0.9,) * 3, nbytes=10), 0.9, alpha=a, beta=b) == math.inf
    assert V.break_even_compute_s(dense, _run(acc=(0.1,) * 3), 0.9, alpha=a, beta=b) is None


def test_fill_in_rows_agree_with_the_sparse_allreduce():
    rows = V.sparse_fill_in(1000, [2, 4], [0.001, 0.4], seed=0)
    assert [(p, d) for p, d, *_ in rows] == [(2, 0.001), (2, 0.4), (4, 0.001), (4, 0.4)]
    p, d, sparse, dense_rd, ring, density, dense_rounds = rows[0]
    assert sparse == 2 * 1 * 8 and dense_rd == 2 * 4000 and ring == 2 * 1 * 4000 and density == 0.002
    *_, density, dense_rounds = rows[3]   # 40 % each: the first sum passes 50 %, so the second round is dense
    assert dense_rounds == 1 and density > 0.8


def test_squeezenet_and_alexnet_parameter_counts():
    assert V.alexnet_parameters() == 60_965_224
    assert V.squeezenet_parameters() == 1_248_424


def test_views(data):
    rows = V.compare({"none": {}, "topk": {"name": "topk", "ratio": 0.1}}, data, sizes=(16, 8, 4), workers=2,
                     seeds=(0, 1), epochs=2, batch_size=20)
    assert [r.label for r in rows] == ["none", "topk"] and len(rows[1].runs) == 2
    assert "vs none" in V.format_table(rows, "none")
    fig = V.time_view(rows, target=0.3)
    assert isinstance(fig, matplotlib.figure.Figure)
    with pytest.raises(ValueError, match=r"bandwidth_Gbit_s must be"):
        V.time_view(rows, bandwidth_Gbit_s=0)
    text = V.fill_in_view(4, 1.0, n=1000)
    assert "sparse vs" in text and text.count("round") == 2
    with pytest.raises(ValueError, match=r"density_percent"):
        V.fill_in_view(4, 0.0)


@pytest.mark.skipif(mpiexec_path() is None, reason="mpiexec not found: pip install mpich")
def test_mpi_run_equals_the_simulated_workers():
    from scaledl.comm.compression import mpi_train
    from scaledl.nn import digits

    got = mpi_train.run(2, "dgc", epochs=2, seed=1, sizes=(64, 16, 10), ratio=0.01, timeout_s=120)
    want = V.train_compressed("dgc", digits(), workers=2, epochs=2, seed=1, sizes=(64, 16, 10), ratio=0.01)
    assert got["accuracy"] == want.accuracy and got["ratio"] == pytest.approx(want.ratio_run, rel=1e-12)
    assert got["exchanges"] == len(want.step_nbytes)


def test_exact_topk_breaks_ties_towards_the_lowest_index():
    from scaledl.comm.compression.sparse import select_topk

    mag = np.float32([1, 5, 3, 3, 0, 3, 5, 3])
    assert select_topk(mag, 3).tolist() == [1, 2, 6]        # 5, 5, then the first of four 3s
    assert select_topk(mag, 5).tolist() == [1, 2, 3, 5, 6]
    rng = np.random.default_rng(0)
    vals = rng.integers(0, 4, 1000).astype(np.float32)      # many ties
    for k in (1, 10, 250, 999):
        got = select_topk(vals, k)
        want = np.sort(np.argsort(-vals, kind="stable")[:k])  # a stable sort: ties by index
        assert got.tolist() == want.tolist()


def test_dgc_fill_in_of_real_messages(data):
    got = V.dgc_fill_in(data, workers=4, ratio=0.1, epochs=1, sizes=(16, 8, 4), batch_size=20)
    n = 16 * 8 + 8 + 8 * 4 + 4
    assert got["n"] == n and len(got["nnz_per_worker"]) == 4
    assert max(got["nnz_per_worker"]) <= got["real_result_nnz"] <= min(n, sum(got["nnz_per_worker"]))
    assert got["dense_ring_nbytes"] == 2 * 3 * n * 4
    with pytest.raises(ValueError, match=r"workers must be"):
        V.dgc_fill_in(data, workers=1)
