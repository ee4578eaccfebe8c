"""The bench's baselines time what they say: SpMV kernels without each call's host cost (queued behind a
kernel that holds the GPU) and the per-call floor on rows of its own, the dense GEMV on aligned rows, and a
notebook's GEMMs beside a cuBLAS timed in the same process.

The first H200 run (docs/gpu-runs/2026-11-26-nvidia-h200) timed SpMV with back-to-back calls: cuSPARSE's and
the warp kernels' times sat on a 37-65 us floor while the work grew 100x, so its ratios at low density compared
hosts; its GEMV baseline ran
on 8191-float rows; lab 02's share of cuBLAS was a ratio against a cuBLAS timed in another process. These run
on the simulator with host stand-ins for CuPy, and the queued timer's GPU path with stand-in events."""

import json
import types
from pathlib import Path

import numpy as np
import pytest

import scaledl
from scaledl.kernels import bench, bench_sections, bench_timing

pytestmark = [pytest.mark.sim,
              pytest.mark.skipif(scaledl.backend() == "cuda", reason="the GPU runs the real bench (tests/gpu)")]
ROOT = Path(__file__).resolve().parents[2]


def _dry_spmv(baselines=None):
    return bench.measure("spmv", baselines or bench.HostBaselines(), bench.DRY_RUN_SIZES)


def test_spmv_kernels_are_timed_queued_and_the_floor_has_rows_of_its_own(monkeypatch):
    queued, per_call = [], []
    real_queued, real_ms = bench_sections.time_queued_ms, bench_sections.time_ms
    monkeypatch.setattr(bench_sections, "time_queued_ms",
                        lambda fn, *a, **k: queued.append(fn) or real_queued(fn, *a, **k))
    monkeypatch.setattr(bench_sections, "time_ms", lambda fn, *a, **k: per_call.append(fn) or real_ms(fn, *a, **k))
    rows = _dry_spmv()
    sizes = bench.DRY_RUN_SIZES
    kernels = ["scipy CSR @ x (dry run)", "numpy A @ x (dry run)", "spmv row", "spmv warp"]
    assert len(queued) == len(kernels) * len(sizes.spmv_densities)  # every kernel row, at every density
    assert len(per_call) == len(kernels)  # the floor: each one once, at the lowest density
    floors = rows[-len(kernels):]
    assert [r.kernel for r in floors] == [f"{k}, per call" for k in kernels]
    lowest = f"{sizes.n_spmv}^2 at {sizes.spmv_densities[0]:g}"
    assert all(r.size == lowest and r.unit == "calls/s" and r.ratio is None and r.baseline == "-" for r in floors)
    assert all(r.rate == pytest.approx(1e3 / r.time_ms) for r in floors)
    assert rows[-len(kernels) - 1].kernel == "crossover vs dense GEMV"


def test_a_call_that_cannot_be_queued_is_timed_per_call_and_says_so(monkeypatch):
    real = bench_sections.time_queued_ms

    def cusparse_syncs(fn, *a, **k):
        if getattr(fn, "__qualname__", "").startswith("HostBaselines.spmv"):
            raise bench.NotQueued("a call waits for the GPU")
        return real(fn, *a, **k)

    monkeypatch.setattr(bench_sections, "time_queued_ms", cusparse_syncs)
    rows = _dry_spmv()
    assert rows[0].kernel == "scipy CSR @ x (dry run) (per call: not queued)" and rows[0].time_ms > 0
    assert rows[2].kernel == "spmv row"


def test_the_dense_gemv_runs_on_rows_padded_to_32_floats():
    seen = []

    class Recording(bench.HostBaselines):
        def gemv(self, dA, dx):
            seen.append((dA.shape, dx.shape, dA.copy_to_host(), dx.copy_to_host()))
            return super().gemv(dA, dx)

    rows = _dry_spmv(Recording())
    n = bench.DRY_RUN_SIZES.n_spmv
    assert n % 32 and [s[:2] for s in seen] == [((n, 32), (32,))] * len(bench.DRY_RUN_SIZES.spmv_densities)
    A, x = seen[0][2], seen[0][3]
    assert not A[:, n:].any() and not x[n:].any()  # zeros beyond the matrix: the product is unchanged
    assert rows[1].kernel == "numpy A @ x (dry run)" and rows[1].size == f"{n}^2 at 0.2"


def test_padded_rows():
    dense = np.arange(15, dtype=np.float32).reshape(3, 5)
    x = np.arange(5, dtype=np.float32)
    A, xp = bench_sections.padded_rows(dense, x)
    assert A.shape == (3, 32) and xp.shape == (32,) and A.dtype == xp.dtype == np.float32
    assert np.array_equal(A @ xp, dense @ x)
    same, _ = bench_sections.padded_rows(np.ones((2, 64), np.float32), np.ones(64, np.float32))
    assert same.shape == (2, 64)  # already a multiple: nothing added
    with pytest.raises(ValueError, match=r"x match its columns, got shapes \(3, 5\) and \(4,\)"):
        bench_sections.padded_rows(dense, x[:4])
    with pytest.raises(ValueError, match="multiple must be an int >= 1, got 0"):
        bench_sections.padded_rows(dense, x, multiple=0)


# ------------------------------------------------------------ time_queued_ms: the simulator path and the GPU path
def test_time_queued_ms_on_the_simulator_is_the_wall_clock_and_validates_its_arguments():
    calls = []
    assert bench.time_queued_ms(lambda: calls.append(1), repeats=3, warmup=2, inner=4) >= 0
    assert len(calls) == 2 + 3 * 4
    for kwargs, msg in (({"repeats": 0}, "repeats must be an int >= 1, got 0"),
                        ({"repeats": 1, "inner": 0}, "inner must be an int >= 1, got 0"),
                        ({"repeats": 1, "warmup": -1}, "warmup must be an int >= 0, got -1")):
        with pytest.raises(ValueError, match=msg):
            bench.time_queued_ms(lambda: None, **kwargs)


class FakeGPU:
    """Stand-ins for numba.cuda's events and the hold kernel: the GPU reaches the start event before the host
    has queued the last call whenever the hold is shorter than ``needed_us``; each sample's events are 1 ms
    apart per call."""

    def __init__(self, needed_us):
        self.needed_us, self.holds, self.hold_us = needed_us, [], 0

    def event(self):
        gpu = self

        class Event:
            def record(self):
                self.recorded_under = gpu.hold_us

            def query(self):  # True: the GPU already passed this event
                return self.recorded_under < gpu.needed_us

            def synchronize(self):
                pass
        return Event()

    def synchronize(self):
        pass

    def event_elapsed_time(self, start, stop):
        return 1.0 * self.inner

    def __getitem__(self, launch):  # hold_kernel[1, 1](us)
        assert launch == (1, 1)

        def hold(us):
            self.holds.append(us)
            self.hold_us = us
        return hold


def _fake_gpu(monkeypatch, needed_us, inner):
    gpu = FakeGPU(needed_us)
    gpu.inner = inner
    monkeypatch.setattr(bench_timing, "cuda", types.SimpleNamespace(event=gpu.event, synchronize=gpu.synchronize,
                                                                    event_elapsed_time=gpu.event_elapsed_time))
    monkeypatch.setattr(bench_timing, "hold_kernel", gpu)
    monkeypatch.setattr(scaledl.device, "on_gpu", lambda: True)
    return gpu


def test_time_queued_ms_doubles_the_hold_until_the_calls_queue(monkeypatch):
    gpu = _fake_gpu(monkeypatch, needed_us=1000, inner=5)
    calls = []
    t = bench.time_queued_ms(lambda: calls.append(1), repeats=3, warmup=0, inner=5)
    assert t == pytest.approx(1.0)  # elapsed / inner
    assert gpu.holds[:5] == [100, 200, 400, 800, 1600] and set(gpu.holds[4:]) == {1600}
    assert len(calls) == 5 * len(gpu.holds)  # a sample that did not queue is made again, not kept


def test_time_queued_ms_gives_up_on_calls_that_never_queue(monkeypatch):
    _fake_gpu(monkeypatch, needed_us=10**9, inner=2)
    with pytest.raises(bench.NotQueued, match="calls could not be queued behind a 204800 us hold"):
        bench.time_queued_ms(lambda: None, repeats=1, warmup=0, inner=2)


def test_the_hold_kernel_compiles_for_a_gpu(compile_ptx):
    rows = compile_ptx("import scaledl.kernels.bench as b\ncompile_all({'hold': (b.hold_kernel, (T.int64,))})")
    assert rows["hold"]["local"] == 0


# ------------------------------------------------------------------------- a notebook's GEMMs beside cuBLAS
def test_gemms_are_timed_beside_the_baseline_in_one_process():
    from numba import cuda

    from scaledl.kernels.gemm import gemm

    rng = np.random.default_rng(0)
    A, B = (cuda.to_device(rng.standard_normal((9, 9), dtype=np.float32)) for _ in range(2))
    C = cuda.device_array((9, 9), np.float32)
    rows = bench.time_gemms_beside_baseline({"mine": lambda: gemm(A, B, variant="tiled", out=C)}, A, B,
                                            bench.HostBaselines(), repeats=1)
    assert [r.kernel for r in rows] == ["numpy matmul (dry run)", "mine"]
    assert rows[0].ratio is None and rows[1].baseline == "numpy matmul (dry run)"
    assert rows[1].ratio == pytest.approx(rows[0].time_ms / rows[1].time_ms) and rows[1].size == "9^3"


def test_lab02_times_its_kernels_beside_cublas_in_the_same_process():
    cells = json.loads((ROOT / "labs/solutions/lab02_tiled_gemm.ipynb").read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    timing = [src for src in code if "time_ms" in src or "time_gemms_beside_baseline" in src]
    assert len(timing) == 1
    src = timing[0]
    assert "bench.time_gemms_beside_baseline(" in src and "bench.cupy_baselines()" in src
