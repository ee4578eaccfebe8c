"""`scaledl bench` end to end on the simulator, at tiny sizes, with NumPy stand-ins for its CuPy baselines.

No GPU has run the bench yet in this project's CI, so its plumbing (device arrays, launchers called with
`out=`, poisoned outputs, the checks, the rows) is exercised here: what a GPU session then meets is only what
the simulator cannot show (CuPy itself, CUDA events, speed). The times in these rows are wall-clock times of
Python threads and are never printed as figures."""

import numpy as np
import pytest

import scaledl
from scaledl.kernels import bench, bench_sections

pytestmark = [pytest.mark.sim,
              pytest.mark.skipif(scaledl.backend() == "cuda", reason="the GPU runs the real bench (tests/gpu)")]


class HostBaselines(bench.HostBaselines):
    """The baseline methods of bench.CupyBaselines, done on the host with NumPy (and SciPy, inherited)."""

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
    from scaledl.kernels import bandwidth as bw
    from scaledl.perf import roofline as R

    assert R.measure_triad_GBps(n=97, repeats=1) > 0 and R.measure_fma_TFLOPS(n_threads=40, n_iter=8, repeats=1) > 0
    assert bw.measure_triad_GBps(n=97, repeats=1) > 0
    assert bw.measure_fma_TFLOPS(n_threads=40, n_iter=8, repeats=1) > 0
    assert R.current_gpu_roofline(bw.measure_triad_GBps, bw.measure_fma_TFLOPS) is None  # never on the simulator


# ------------------------------------------------------------------ the sections after "fma", at DRY_RUN_SIZES
def _dry(section):
    return bench.measure(section, HostBaselines(), bench.DRY_RUN_SIZES)


def test_every_section_has_a_dry_run():
    assert bench.SECTIONS == ("gemm", "streams", "fma", "spmv", "nm", "rnn", "quantize")
    with pytest.raises(ValueError, match="section must be one of"):
        bench.measure("spmm", HostBaselines(), bench.DRY_RUN_SIZES)


def test_spmv_rows_and_the_crossover():
    rows = _dry("spmv")
    sizes = bench.DRY_RUN_SIZES
    per_density = ["scipy CSR @ x (dry run)", "numpy A @ x (dry run)", "spmv row", "spmv warp"]  # no shuffles
    floors = [f"{name}, per call" for name in per_density]  # at the lowest density, host cost included
    assert [r.kernel for r in rows] == (per_density * len(sizes.spmv_densities) + ["crossover vs dense GEMV"]
                                        + floors)
    assert all(r.time_ms > 0 for r in rows)
    rows = rows[:-len(floors)]
    assert rows[0].size == "9^2 at 0.2" and rows[0].ratio is None and rows[0].unit == "GFLOP/s"
    # the ratio is the baseline's time over the row's: rates count the same useful FLOPs (2 nnz)
    assert all(r.ratio == pytest.approx(rows[0].time_ms / r.time_ms) for r in rows[1:4])
    assert [r.target for r in rows[:4]] == [None, None, None, bench.TARGETS["spmv"]]  # warp: "auto" here
    cross = rows[-1]
    assert cross.unit == "nnz/row" and cross.baseline == "numpy A @ x (dry run)" and cross.ratio is None
    fastest = [min(rows[i + 2].time_ms, rows[i + 3].time_ms) for i in (0, 4)]
    d = bench_sections.crossover_density(sizes.spmv_densities, fastest, [rows[1].time_ms, rows[5].time_ms])
    assert cross.size == bench_sections.crossover_text(d, sizes.spmv_densities)


def test_nm_rows():
    rows = _dry("nm")
    assert [r.kernel for r in rows] == ["gemm tiled (dense twin)", "2:4 gemm tiled", "2:4 gemm decoded",
                                        "2:4 gemm naive", "numpy matmul"]
    assert all(r.size == "7x13x9" and r.unit == "GFLOP/s" and r.time_ms > 0 for r in rows)
    assert rows[0].ratio is None and all(r.ratio == pytest.approx(rows[0].time_ms / r.time_ms) for r in rows[1:])


def test_rnn_rows():
    rows = _dry("rnn")
    assert [r.kernel for r in rows] == ["rnn standard", "rnn persistent_block", "rnn persistent_grid"]
    assert all(r.size == "H=7, batch 3, 3 steps" and r.unit == "steps/s" and r.time_ms > 0 for r in rows)
    assert rows[1].ratio == pytest.approx(rows[0].time_ms / rows[1].time_ms)
    # the one-block kernel needs W in 48 KiB, the grid kernel one block on the simulator
    assert bench_sections.rnn_variants(110) == ("standard", "persistent_block", "persistent_grid")
    assert bench_sections.rnn_variants(111) == ("standard",)


def test_quantize_rows():
    rows = _dry("quantize")
    assert [r.kernel for r in rows] == ["numpy copy", "quantize e4m3"]
    assert all(r.size == "97" and r.unit == "GB/s" and r.time_ms > 0 for r in rows)
    assert rows[1].target == bench.TARGETS["quantize"] == 0.85


def test_the_dry_run_table_of_the_new_sections_formats():
    rows = [bench.Row("spmv warp", "9^2 at 0.2", 1.5, 0.01, "GFLOP/s", "x", 0.5, 0.7),
            bench.Row("crossover vs dense GEMV", "< 0.2", 0.01, 0.0, "nnz/row", "y", None),
            bench.Row("rnn standard", "H=7, batch 3, 3 steps", 30.0, 100.0, "steps/s", "-", None)]
    lines = bench.format_table(rows).splitlines()
    assert len(lines) == 2 + len(rows) and lines[2].endswith(">= 70 % MISSED") and "0 nnz/row" in lines[3]


# a kernel that writes a wrong result stops its section at the check, before it is timed
def test_a_wrong_spmv_kernel_is_caught(monkeypatch):
    import scaledl.kernels.spmv as S

    def zeros(indptr, indices, data, x, y, variant="auto"):
        y.copy_to_device(np.zeros(y.shape, np.float32))
        return y

    monkeypatch.setattr(S, "spmv_into", zeros)
    with pytest.raises(RuntimeError, match=r"spmv row at density 0.2 does not match its reference"):
        _dry("spmv")


def test_a_wrong_dense_gemv_baseline_is_caught():
    class Broken(HostBaselines):
        def gemv(self, dA, dx):
            return (lambda: None), (lambda: np.zeros(dA.shape[0]))

    with pytest.raises(RuntimeError, match=r"the dense GEMV at density 0.2 does not match"):
        bench.measure("spmv", Broken(), bench.DRY_RUN_SIZES)


def test_a_wrong_nm_kernel_is_caught(monkeypatch):
    real = bench_sections._nm_launch

    def last_column_unwritten(variant, d_values, d_meta, dB, dC):
        run = real(variant, d_values, d_meta, dB, dC)

        def wrong():
            run()
            host = dC.copy_to_host()
            host[:, -1] = 0.0
            dC.copy_to_device(host)
        return wrong

    monkeypatch.setattr(bench_sections, "_nm_launch", last_column_unwritten)
    with pytest.raises(RuntimeError, match=r"2:4 gemm tiled does not match its reference \(7 elements\)"):
        _dry("nm")


def test_a_wrong_rnn_kernel_is_caught(monkeypatch):
    import scaledl.kernels.rnn as R

    real = R.rnn_forward

    def grid_writes_zeros(W, U, b, x, h0, activation="tanh", variant="standard"):
        out = real(W, U, b, x, h0, activation, variant)
        return np.zeros_like(out) if variant == "persistent_grid" else out

    monkeypatch.setattr(R, "rnn_forward", grid_writes_zeros)
    with pytest.raises(RuntimeError, match=r"rnn persistent_grid \(hidden 7\) does not match its reference"):
        _dry("rnn")


def test_a_wrong_quantize_kernel_is_caught(monkeypatch):
    import scaledl.kernels.quantize as Q

    def zeros(x, out, fmt, **kwargs):
        out.copy_to_device(np.zeros(out.shape, np.float32))
        return out

    monkeypatch.setattr(Q, "quantize_into", zeros)
    with pytest.raises(RuntimeError, match=r"quantize e4m3 \(float32 bit patterns\) does not match"):
        _dry("quantize")


def test_quantize_into_validates_its_arrays():
    from scaledl.kernels.quantize import quantize_into

    x = np.array([1.0625, -500.0, 0.3], np.float32)
    out = np.full(3, np.nan, np.float32)
    assert quantize_into(x, out, "e4m3") is out and out.tolist() == [1.0, -448.0, 0.3125]
    with pytest.raises(TypeError, match="out must be a float32 array, got float64"):
        quantize_into(x, np.zeros(3), "e4m3")
    with pytest.raises(ValueError, match=r"must be 1-D arrays of one length, got shapes \(3,\) and \(2,\)"):
        quantize_into(x, out[:2], "e4m3")
    with pytest.raises(ValueError, match="fmt: the kernel handles signed float formats"):
        quantize_into(x, out, "int8")
