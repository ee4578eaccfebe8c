"""scaledl.kernels.sanitizer on Numba's simulator: every seeded defect is found with the right kind, no correct
kernel and no kernel of the library is flagged, and a checker with a detection turned off misses its defects.

The seeded kernels (sanitizer_cases, sanitizer_barrier_cases, sanitizer_memory_cases) come in pairs, each the
same shape in a defective and a correct version, at sizes that are not multiples of the block.
"""

import re
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import scaledl.device
from numba import cuda, float32, int32

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/sim: the seeded kernels
import sanitizer_barrier_cases  # noqa: E402,F401  (registers its cases)
import sanitizer_cases  # noqa: E402
import sanitizer_memory_cases  # noqa: E402,F401  (registers its cases)

from scaledl.kernels import sanitizer  # noqa: E402
from scaledl.kernels.sanitizer import KINDS, SanitizerUnavailable, sanitize  # noqa: E402

pytestmark = [pytest.mark.sim, pytest.mark.skipif(scaledl.device.backend() != "simulator",
                                                  reason="the sanitizer watches the simulator's threads")]
CASES = sanitizer_cases.CASES
CASE_FILES = ("sanitizer_cases.py", "sanitizer_barrier_cases.py", "sanitizer_memory_cases.py")


def sanitized(run, bug):
    """Run a case under sanitize(); a defective one may overflow on garbage (in threads: no np.errstate)."""
    with sanitize() as report, warnings.catch_warnings():
        if bug:
            warnings.simplefilter("ignore", RuntimeWarning)
        got, want = run(bug)
    return report, got, want


def test_at_least_ten_seeded_defects_of_each_kind():
    counts = Counter(kind for kind, _ in CASES.values())
    assert set(counts) == set(KINDS) and min(counts.values()) >= 10, counts


@pytest.mark.parametrize("name", CASES)
def test_the_seeded_defect_is_found(name):
    kind, run = CASES[name]
    report, _, _ = sanitized(run, True)
    assert kind in report.kinds, f"{name}: expected a {kind} finding, got {report}"
    for f in report.of_kind(kind):
        assert f.kernel and f.message and f.lines and f.threads, f
        assert all(Path(line.rpartition(":")[0]).name in CASE_FILES for line in f.lines), f.lines
        if kind != "barrier":
            assert f.array and f.index is not None and f.array in f.message, f
        assert len(f.threads) == (2 if kind in ("race", "barrier") else 1), f


@pytest.mark.parametrize("name", CASES)
def test_the_correct_version_is_not_flagged(name):
    _, run = CASES[name]
    report, got, want = sanitized(run, False)
    assert report.findings == [], str(report)
    assert report.launches >= 1 and report.accesses > 0
    np.testing.assert_array_equal(got, want)  # and it is correct, so "not flagged" means something


# ------------------------------------------------------------------------- a checker that sees nothing
def _disable(kind, monkeypatch):
    """Turn off the detection of ``kind`` in the sanitizer, as a broken checker would have it."""
    from scaledl.kernels.sanitizer import analysis, launch

    scan = analysis.scan
    if kind == "race":
        monkeypatch.setattr(launch.Launch, "_race", lambda self, a, b: None)
    elif kind == "uninitialized":
        monkeypatch.setattr(analysis, "scan", lambda entries, race, **kw: scan(
            entries, race, **{**kw, "uninitialized": None}))
    elif kind == "barrier":
        monkeypatch.setattr(analysis, "barrier_divergence", lambda threads: None)
    else:
        monkeypatch.setattr(launch.Launch, "out_of_bounds", lambda self, *a: None)


@pytest.mark.parametrize("kind", KINDS)
def test_with_the_detection_off_every_seeded_defect_of_its_kind_is_missed(kind, monkeypatch):
    """The test above can fail: with one check disabled, none of its seeded defects is reported."""
    _disable(kind, monkeypatch)
    for name, (k, run) in CASES.items():
        if k == kind:
            with sanitize() as report, warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                run(True)
            assert kind not in report.kinds, f"{name} still reported with the {kind} check off: {report}"


# --------------------------------------------------------------------------------------- the words
def test_a_missing_second_barrier_names_element_threads_and_lines():
    report, _, _ = sanitized(CASES["gemm_without_second_sync"][1], True)
    f = next(f for f in report.findings if f.array == "sA")
    assert re.fullmatch(
        r"race on `sA\[\d, \d\]` in `gemm_tiled` \(block \(\d,\d\)\) between thread \(\d,\d\) writing at "
        r"sanitizer_cases.py:\d+ and thread \(\d,\d\) reading at sanitizer_cases.py:\d+, both after the barrier "
        r"at sanitizer_cases.py:\d+: a `cuda.syncthreads\(\)` is missing before the next tile overwrites it "
        r"\(at the end of the loop, after the read at sanitizer_cases.py:\d+\)", f.message), f.message
    writer, reader = f.threads
    assert f.index == (writer.thread[1], writer.thread[0])  # sA[ty, tx] = ... is the write
    assert writer.block == reader.block and writer.thread != reader.thread
    text = [Path(p).read_text().splitlines()[int(n) - 1] for p, _, n in (line.rpartition(":") for line in f.lines)]
    assert "sA[ty, tx] =" in text[0] and "sA[ty, kk]" in text[1] and "syncthreads" in text[2]
    assert f.count > 1  # every racing pair of the kernel, counted into one finding


def test_a_race_between_blocks_says_no_barrier_orders_them():
    report, _, _ = sanitized(CASES["histogram_without_atomics"][1], True)
    across = [f for f in report.findings if f.threads[0].block != f.threads[1].block]
    assert across and "threads of different blocks are not ordered" in across[0].message
    assert "`cuda.atomic`" in across[0].message and across[0].array == "bins"


def test_out_of_bounds_names_the_index_and_counts_each_thread():
    report, _, _ = sanitized(CASES["axpy_without_a_guard"][1], True)
    n = sanitizer_cases.N
    spare = sanitizer_cases.blocks(n) * sanitizer_cases.BS - n
    assert {f.array: f.count for f in report.findings} == {"x": spare, "y": spare, "out": spare}
    f = report.findings[0]
    assert n <= f.index[0] < n + spare and f"past the end of the shape ({n},)" in f.message


def test_a_negative_index_is_reported_where_numpy_would_wrap_it():
    report, _, _ = sanitized(CASES["shared_left_neighbour_at_minus_one"][1], True)
    (f,) = report.findings
    assert f.array == "sh" and f.index == (-1,) and f.threads[0].thread == (0,)
    assert "index -1 on axis 0 is negative: NumPy (and so the simulator) would silently wrap it to 15" in f.message


def test_a_barrier_skipped_by_some_threads_names_both_sides():
    report, _, _ = sanitized(CASES["ragged_block_returns_before_the_barrier"][1], True)
    (f,) = report.of_kind("barrier")
    waiting, finished = f.threads
    assert waiting.block == finished.block == (2,) and finished.thread[0] >= sanitizer_cases.N % 16
    assert "has finished after 0 barriers" in f.message and "(its 1st barrier)" in f.message
    report, _, _ = sanitized(CASES["a_barrier_on_each_side_of_an_if"][1], True)
    (f,) = report.findings
    assert len(set(f.lines)) == 2 and "while thread 1 of block 0 waits at the one at" in f.message


def test_uninitialized_names_the_slot_never_written():
    report, _, _ = sanitized(CASES["transpose_reads_the_padding_column"][1], True)
    (f,) = report.findings
    assert f.array == "tile" and f.index[1] == sanitizer_cases.T  # the spare column
    assert "no thread of its block wrote it before" in f.message


# -------------------------------------------------------------------------------- a block that hangs
@cuda.jit
def wait_for_flag(flag, out, bug):
    t = cuda.threadIdx.x
    if bug:
        if t == 0:
            while flag[0] == 0:  # waits for thread 1, which waits at the barrier for thread 0: a deadlock
                pass
        else:
            cuda.syncthreads()
            if t == 1:
                flag[0] = 1
    else:
        if t == 1:
            flag[0] = 1
        cuda.syncthreads()
    out[t] = flag[0]


def test_a_thread_spinning_while_others_wait_at_a_barrier_is_stopped_and_reported():
    out = np.zeros(4, np.int32)
    with pytest.raises(sanitizer.KernelDeadlock, match=r"deadlock in `wait_for_flag`: thread \d of block 0 waits"):
        with sanitize(stall_s=0.3) as report:
            wait_for_flag[1, 4](np.zeros(1, np.int32), out, True)
    (f,) = report.findings
    assert f.kind == "barrier" and f.threads[1].thread == (0,) and "still running at test_sanitizer.py" in f.message
    with sanitize(stall_s=0.3) as report:
        wait_for_flag[1, 4](np.zeros(1, np.int32), out, False)
    assert report.findings == [] and out.tolist() == [1, 1, 1, 1]


# ------------------------------------------------------------------------------- the checker itself
def test_sanitize_puts_the_simulator_back():
    from numba.cuda.simulator import kernel, kernelapi

    before = (kernel.FakeCUDAKernel.__call__, kernel.BlockThread.syncthreads, kernelapi.FakeCUDAShared.array,
              kernelapi.FakeCUDAAtomic.add, kernel.FakeWithinKernelCUDAArray)
    with sanitize():
        assert kernel.FakeCUDAKernel.__call__ is not before[0]
        with pytest.raises(RuntimeError, match="already on"), sanitize():
            pass
    assert (kernel.FakeCUDAKernel.__call__, kernel.BlockThread.syncthreads, kernelapi.FakeCUDAShared.array,
            kernelapi.FakeCUDAAtomic.add, kernel.FakeWithinKernelCUDAArray) == before
    assert getattr(kernelapi.FakeCUDAShared.array, "_scaledl_locked", False)  # scaledl._simfix's lock stays


def test_stall_limit_is_checked():
    with pytest.raises(ValueError, match="stall_s"):
        with sanitize(stall_s=0):
            pass


@cuda.jit
def count_positive(x, n):
    i = cuda.grid(1)
    if i < x.size and x[i] > 0:
        cuda.atomic.add(n, 0, int32(1))


def test_report_text_and_no_findings():
    n = np.zeros(1, np.int32)
    with sanitize() as report:
        count_positive[2, 16](np.arange(-5, 20, dtype=np.float32), n)
    assert n[0] == 19 and str(report) == "no defect found in 1 kernel launch"
    with pytest.raises(ValueError, match="kind='races' is not a kind of finding"):
        report.of_kind("races")


def test_refused_where_kernels_do_not_run_on_the_simulator(python):
    code = (
        "import importlib.util, os, sys, types\n"
        "os.environ['SCALEDL_QUIET'] = '1'\n"
        "spec = importlib.util.find_spec('scaledl')\n"
        "pkg = types.ModuleType('scaledl'); pkg.__path__ = list(spec.submodule_search_locations)\n"
        "sys.modules['scaledl'] = pkg\n"
        "import scaledl.device as d\n"
        "d._choose = lambda env: d.Decision('cuda', 'forced for this test', None)\n"
        "from scaledl.kernels.sanitizer import sanitize, SanitizerUnavailable\n"
        "try:\n"
        "    with sanitize():\n"
        "        pass\n"
        "except SanitizerUnavailable as e:\n"
        "    print('REFUSED', e)\n"
        )
    r = python(code)
    assert r.returncode == 0, r.stderr
    assert "REFUSED sanitize() watches kernels run on Numba's CUDA simulator, but this process runs them on the " \
           "'cuda' backend (forced for this test)" in r.stdout and "compute-sanitizer" in r.stdout
    assert issubclass(SanitizerUnavailable, RuntimeError)


# ------------------------------------------------------------------- the library's kernels: all clean
def _library_launches():
    """name -> a call that launches one of scaledl.kernels' kernels as tests/sim does, at small odd sizes."""
    import scipy.sparse as sp

    from scaledl.kernels import bandwidth, gemm
    from scaledl.kernels.conv import conv2d
    from scaledl.kernels.gemm import VARIANTS
    from scaledl.kernels.logdot import logdot
    from scaledl.kernels.nm_gemm import nm_gemm
    from scaledl.kernels.quantize import VARIANTS as QUANTIZE_VARIANTS
    from scaledl.kernels.quantize import quantize_gpu
    from scaledl.kernels.reduce import reduce_sum
    from scaledl.kernels.rnn import VARIANTS as RNN_VARIANTS
    from scaledl.kernels.rnn import rnn_forward
    from scaledl.kernels.smoke import smoke_test
    from scaledl.kernels.spmv import spmm, spmv
    from scaledl.numerics.logarithmic import lns_encode
    from scaledl.sparsity import compress_nm

    rng = np.random.default_rng(44)
    A, B = rng.standard_normal((19, 13), np.float32), rng.standard_normal((13, 23), np.float32)
    x = rng.standard_normal(1001, np.float32)
    jobs = {f"gemm_{v}": lambda v=v: gemm(A, B, variant=v) for v in VARIANTS}  # the whole ladder, v1 to v8
    jobs["reduce_sum"] = lambda: reduce_sum(x)  # both passes
    cx, cw = rng.standard_normal((2, 11, 13), np.float32), rng.standard_normal((3, 2, 3, 3), np.float32)
    jobs.update({f"conv_{v}": lambda v=v: conv2d(cx, cw, v) for v in ("direct", "winograd")})
    jobs.update({f"quantize_{v}": lambda v=v: quantize_gpu(x[:301], "e4m3", variant=v) for v in QUANTIZE_VARIANTS})
    sa, ca = lns_encode(rng.standard_normal(333), int_bits=4, frac_bits=3)
    sb, cb = lns_encode(rng.laplace(size=333), int_bits=4, frac_bits=3)
    jobs.update({f"logdot_{v}": lambda v=v: logdot(sa, ca, sb, cb, frac_bits=3, variant=v, threads=64)
                 for v in ("v1", "v2")})
    S = sp.csr_array(rng.standard_normal((19, 37), np.float32) * (rng.random((19, 37)) < 0.3))
    jobs.update({f"spmv_{v}": lambda v=v: spmv(S, x[:37], v) for v in ("row", "warp")})
    jobs["spmm"] = lambda: spmm(S, rng.standard_normal((37, 9), np.float32))
    values, meta = compress_nm(rng.standard_normal((17, 41), np.float32) * (np.arange(41) % 4 < 2), axis=1, pad=True)
    Bn = rng.standard_normal((41, 19), np.float32)
    jobs.update({f"nm_gemm_{v}": lambda v=v: nm_gemm(values, meta, Bn, variant=v)
                 for v in ("naive", "tiled", "decoded")})
    W = rng.standard_normal((13, 13))
    W *= 0.9 / np.abs(W).sum(axis=1).max()
    rnn_args = (W, rng.standard_normal((13, 5)), 0.1 * rng.standard_normal(13), rng.standard_normal((4, 3, 5)),
                0.5 * rng.standard_normal((3, 13)))
    jobs.update({f"rnn_{v}": lambda v=v: rnn_forward(*rnn_args, "tanh", v) for v in RNN_VARIANTS})
    jobs["streams"] = lambda: (bandwidth.copy(np.empty_like(x), x), bandwidth.scale(np.empty_like(x), x, 3.0),
                               bandwidth.triad(np.empty_like(x), x, x, -0.5))
    jobs["fma_throughput"] = lambda: bandwidth.fma_throughput(37, 5)
    jobs["smoke_axpy"] = smoke_test
    return jobs


LIBRARY = _library_launches() if scaledl.device.backend() == "simulator" else {}


@pytest.mark.parametrize("name", LIBRARY)
def test_library_kernel_is_clean(name):
    """Warp-shuffle variants (reduce v2, spmv v3) are not here: the simulator has no shuffles, and the tests'
    emulation of them (kernel_cases.emulated_warp_shuffles) meets at block barriers the sanitizer would see."""
    with sanitize() as report:
        LIBRARY[name]()
    assert report.findings == [], str(report)
    assert report.launches >= 1 and report.accesses > 0


# ---------------------------------------------------------------- views, slices, dynamic shared memory
@cuda.jit
def first_column_through_a_row_view(out):
    row = out[cuda.blockIdx.x]  # a view: its elements are out's
    row[0] = cuda.threadIdx.x


@cuda.jit
def mirror_dynamic(y):
    buf = cuda.shared.array(0, float32)  # dynamic shared memory, sized by the launch
    tid = cuda.threadIdx.x
    if tid < 8:
        buf[tid] = tid
    cuda.syncthreads()
    y[tid] = buf[15 - tid]


@cuda.jit
def claim_once(flag, y):
    tid = cuda.threadIdx.x
    old = cuda.atomic.compare_and_swap(flag, 0, tid + 1)
    cuda.syncthreads()
    y[tid] = old == 0 and flag[0] == tid + 1


@cuda.jit
def window_sum(x, y):
    i = cuda.grid(1)
    if i < y.size:
        w = x[i:i + 4]  # at the end of x the slice is cut short, silently
        y[i] = w[0] + w[1]


def test_views_slices_dynamic_shared_memory_and_compare_and_swap():
    with sanitize() as report:
        first_column_through_a_row_view[2, 4](np.zeros((2, 3), np.int32))
    (f,) = report.findings
    assert f.kind == "race" and f.array == "out" and f.index[1] == 0 and f.index[0] == f.threads[0].block[0]
    y = np.zeros(16, np.float32)
    with sanitize() as report:
        mirror_dynamic[1, 16, 0, 16 * 4](y)
    (f,) = report.findings
    assert f.kind == "uninitialized" and f.array == "buf" and 8 <= f.index[0] < 16
    flag, won = np.zeros(1, np.int32), np.zeros(8, np.bool_)
    with sanitize() as report:
        claim_once[1, 8](flag, won)
    assert report.findings == [] and won.sum() == 1  # atomics on one element: no race
    x = np.arange(9, dtype=np.float32)
    with sanitize() as report:
        window_sum[1, 16](x, np.zeros(8, np.float32))
    (f,) = report.findings
    assert f.kind == "out_of_bounds" and f.array == "x" and f.index[0] in (10, 11) and "past the end" in f.message
    assert f.count == 2  # threads 6 and 7 (slices ending at 10 and 11)
