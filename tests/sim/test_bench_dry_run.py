"""`scaledl bench` end to end on the simulator, at tiny sizes, with NumPy stand-ins for its CuPy baselines.

No GPU has run the bench yet in this project's CI, so its plumbing (device arrays, launchers called with
`out=`, poisoned outputs, the checks, the rows) is exercised here: what a GPU session then meets is only what
the simulator cannot show (CuPy itself, CUDA events, speed). The times in these rows are wall-clock times of
Python threads and are never printed as figures."""

import numpy as np
import pytest

import scaledl
from scaledl.kernels import bench

pytestmark = [pytest.mark.sim,
              pytest.mark.skipif(scaledl.backend() == "cuda", reason="the GPU runs the real bench (tests/gpu)")]


class HostBaselines:
    """The three baseline methods of bench.CupyBaselines, done on the host with NumPy."""

    gemm_name, copy_name, sum_name = "numpy matmul", "numpy copy", "numpy sum"

    def gemm(self, dA, dB):
        A, B = dA.copy_to_host(), dB.copy_to_host()
        out = A @ B
        return (lambda: np.matmul(A, B, out=out)), (lambda: out.copy())

    def copy(self, src, dst):
        return lambda: dst.copy_to_device(src)

    def sum(self, x):
        host = x.copy_to_host()
        return lambda: host.sum()


def test_time_ms_runs_on_the_simulator_and_validates_its_arguments():
    calls = []
    t = bench.time_ms(lambda: calls.append(1), repeats=3, warmup=2, inner=4)
    assert t >= 0 and len(calls) == 2 + 3 * 4
    for kwargs, msg in (({"repeats": 0}, "repeats must be an int >= 1, got 0"),
                        ({"repeats": 1, "inner": 0}, "inner must be an int >= 1, got 0"),
                        ({"repeats": 1, "warmup": -1}, "warmup must be an int >= 0, got -1")):
        with pytest.raises(ValueError, match=msg):
            bench.time_ms(lambda: None, **kwargs)


def test_gemm_rows_check_every_variant():
    rows = bench.bench_gemm(HostBaselines(), n=11, repeats=1)  # 11: not a multiple of any tile
    assert [r.kernel for r in rows] == ["numpy matmul", "gemm naive", "gemm tiled", "gemm regblock"]
    assert all(r.size == "11^3" and r.unit == "GFLOP/s" and r.time_ms > 0 for r in rows)
    assert rows[0].ratio is None and all(r.ratio == pytest.approx(r.rate / rows[0].rate) for r in rows[1:])
    assert [r.target for r in rows] == [None, None, None, bench.TARGETS["gemm"]]


def test_stream_and_reduction_rows(monkeypatch):
    monkeypatch.setattr(bench, "STREAM_INNER", 1)  # each simulated launch costs a fraction of a second
    rows = bench.bench_streams(HostBaselines(), n=97, repeats=1)  # 97: not a multiple of a block
    assert [r.kernel for r in rows] == ["numpy copy", "copy", "scale", "triad", "sum shared", "numpy sum"]
    assert all(r.unit == "GB/s" and r.size == "97" for r in rows)
    assert [r.target for r in rows[1:5]] == [0.85] * 4


def test_fma_row():
    (row,) = bench.bench_fma(repeats=1, n_threads=40, n_iter=16)
    assert row.kernel == "fma throughput" and row.rate > 0


def test_a_wrong_kernel_stops_the_bench_before_any_timing(monkeypatch):
    import importlib

    G = importlib.import_module("scaledl.kernels.gemm")  # the module: scaledl.kernels.gemm is also the function
    real = G.gemm

    def off_by_one_column(A, B, variant="auto", out=None):  # a tiled kernel that never writes the last column
        real(A, B, variant=variant, out=out)
        if variant == "tiled":
            host = out.copy_to_host()
            host[:, -1] = np.nan
            out.copy_to_device(host)
        return out

    monkeypatch.setattr(G, "gemm", off_by_one_column)
    with pytest.raises(RuntimeError, match=r"gemm tiled does not match its reference \(11 elements\)"):
        bench.bench_gemm(HostBaselines(), n=11, repeats=1)


def test_a_wrong_baseline_is_caught_too():
    class Broken(HostBaselines):
        def copy(self, src, dst):
            return lambda: None  # copies nothing: the output keeps its NaN poison

    with pytest.raises(RuntimeError, match="the baseline copy does not match"):
        bench.bench_streams(Broken(), n=33, repeats=1)


def test_the_table_of_a_dry_run_formats():
    rows = bench.bench_gemm(HostBaselines(), n=5, repeats=1) + bench.bench_fma(1, 8, 4)
    text = bench.format_table(rows, header="dry run")
    assert text.splitlines()[0] == "dry run" and len(text.splitlines()) == 3 + len(rows)


def test_the_roofline_measurements_run_at_tiny_sizes():
    """Chapter 03's measured roofline calls these on a GPU; here they must at least run and return rates."""
    from scaledl.perf import roofline as R

    assert R.measure_triad_GBps(n=97, repeats=1) > 0
    assert R.measure_fma_TFLOPS(n_threads=40, n_iter=8, repeats=1) > 0
    assert R.current_gpu_roofline(R.measure_triad_GBps, R.measure_fma_TFLOPS) is None  # never on the simulator
