"""The all-reduce algorithms over a real MPI: each test starts ``mpiexec`` itself (with a timeout, so a
deadlock fails instead of hanging) and compares with MPICH's ``MPI_Allreduce``. Skipped, saying why, where
no mpiexec is installed. No timing is asserted: the machine is shared."""

import math
import textwrap

import pytest

from scaledl.comm import mpi as M
from scaledl.comm import mpi_bench as B

needs_mpiexec = pytest.mark.skipif(M.mpiexec_path() is None,
                                   reason="mpiexec not found: pip install mpich (the book's MPI runtime)")

CHECK = textwrap.dedent("""
    import numpy as np
    from mpi4py import MPI
    from scaledl.comm import mpi as M
    from scaledl.comm.cost import ALLREDUCE_ALGORITHMS

    comm = MPI.COMM_WORLD
    for n in [0, 1, 2, 3, 5, 17, 100]:  # shorter than p, not divisible by p
        for dtype in (np.int64, np.float64):  # small integers: float64 sums are exact in any order
            x = np.random.default_rng(comm.rank * 1000 + n).integers(-1000, 1000, n).astype(dtype)
            ref = np.full_like(x, np.nan if dtype is np.float64 else -1)  # poisoned
            comm.Allreduce(x, ref, op=MPI.SUM)
            got = M.ring_allreduce(comm, x)
            assert got.dtype == x.dtype and np.array_equal(got, ref), ("ring", n, got, ref)
            for alg in ALLREDUCE_ALGORITHMS:
                got = M.schedule_allreduce(comm, x, alg)
                assert np.array_equal(got, ref), (alg, n, got, ref)
    print(f"OK rank {comm.rank} of {comm.size}", flush=True)
""")


@needs_mpiexec
@pytest.mark.parametrize("p", [2, 3, 4])
def test_every_algorithm_over_mpi_equals_mpi_allreduce(tmp_path, p):
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    out = M.launch(p, [str(script)], timeout_s=60)
    assert all(f"OK rank {r} of {p}" in out for r in range(p)), out


@needs_mpiexec
def test_pingpong_fit_and_benchmark_rows():
    fit = B.fit(2, timeout_s=60)
    assert set(fit) == {"alpha_s", "beta_s_per_B", "gamma_s_per_B"}
    assert all(math.isfinite(v) for v in fit.values()) and fit["gamma_s_per_B"] > 0
    rows = B.run((2,), sizes_B=(4096, 65536), algorithms=("ring", "recursive_doubling"), repeats=1,
                 timeout_s=60)
    assert [(r[0], r[1], r[2]) for r in rows] == [(4096, 2, "ring"), (4096, 2, "recursive_doubling"),
                                                  (65536, 2, "ring"), (65536, 2, "recursive_doubling")]
    assert all(r[4] > 0 and r[5] > 0 for r in rows)
    assert "ours/MPICH" in B.format_table(rows)
    predicted = B.predict(rows, fit["alpha_s"], fit["beta_s_per_B"], fit["gamma_s_per_B"])
    assert [r[:4] for r in predicted] == [r[:3] + (r[4],) for r in rows]


@needs_mpiexec
def test_forcing_an_mpich_algorithm_still_gives_the_same_sum():
    rows = B.run((3,), sizes_B=(3000,), algorithms=("ring",), mpich="recursive_doubling", repeats=1,
                 timeout_s=60)
    assert rows[0][3] == "recursive_doubling"  # time_allreduce inside checked ours == MPICH's result


@needs_mpiexec
def test_a_deadlock_is_reported_not_hung(tmp_path):
    script = tmp_path / "deadlock.py"
    # both ranks receive before sending: the classic deadlock-prone send order of a hand-written ring
    script.write_text("import numpy as np\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\nb = np.zeros(1)\n"
                      "c.Recv(b, source=1 - c.rank)\nc.Send(b, dest=1 - c.rank)\n")
    with pytest.raises(TimeoutError, match=r"mpiexec -n 2 did not finish within 3 s \(deadlock\?\)"):
        M.launch(2, [str(script)], timeout_s=3)


@needs_mpiexec
def test_a_failing_rank_is_reported(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("raise SystemExit('rank broke')\n")
    with pytest.raises(RuntimeError, match=r"(?s)failed with exit code 1:.*rank broke"):
        M.launch(2, [str(script)], timeout_s=30)


def test_fit_alpha_beta_recovers_a_line_and_rejects_bad_input():
    alpha, beta = M.fit_alpha_beta([8, 1024, 1 << 20], [2e-6 + 8e-10, 2e-6 + 1024e-10, 2e-6 + (1 << 20) * 1e-10])
    assert alpha == pytest.approx(2e-6, rel=1e-9) and beta == pytest.approx(1e-10, rel=1e-9)
    with pytest.raises(ValueError, match=r"at least two distinct sizes"):
        M.fit_alpha_beta([8, 8], [1e-6, 1e-6])
    with pytest.raises(ValueError, match=r"seconds must all be > 0"):
        M.fit_alpha_beta([8, 16], [1e-6, 0.0])
    with pytest.raises(ValueError, match=r"one length, got \(2,\) and \(3,\)"):
        M.fit_alpha_beta([8, 16], [1e-6, 2e-6, 3e-6])


def test_mpich_env():
    assert M.mpich_env() == {}
    assert M.mpich_env("ring")["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "ring"
    with pytest.raises(ValueError, match=r"unknown MPICH allreduce algorithm 'fastest'"):
        M.mpich_env("fastest")


DATA_PARALLEL = textwrap.dedent("""
    import numpy as np
    from mpi4py import MPI
    from scaledl.comm.dataparallel import mpi_train, ring_reducer
    from scaledl.nn import SGD, digits, mlp, train

    comm = MPI.COMM_WORLD
    data = digits()
    over_mpi = mlp([64, 32, 10], seed=0)
    losses = mpi_train(comm, over_mpi, data, steps=12, batch_size=31, optimizer=SGD(lr=0.05, momentum=0.9))
    simulated = mlp([64, 32, 10], seed=0)
    train(simulated, data, steps=12, batch_size=31, workers=comm.size, reducer=ring_reducer,
          optimizer=SGD(lr=0.05, momentum=0.9))
    a, b = over_mpi.parameters(), simulated.parameters()
    assert all(np.array_equal(a[k], b[k]) for k in a), "MPI and simulated data parallelism differ"
    assert losses[-1] < losses[0]
    print(f"BITWISE rank {comm.rank} of {comm.size}", flush=True)
""")


@needs_mpiexec
def test_data_parallel_training_over_mpi_is_bitwise_the_simulated_one(tmp_path):
    script = tmp_path / "dp.py"
    script.write_text(DATA_PARALLEL)
    out = M.launch(3, [str(script)], timeout_s=90)
    assert all(f"BITWISE rank {r} of 3" in out for r in range(3)), out
