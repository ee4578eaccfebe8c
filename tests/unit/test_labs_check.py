"""scaledl.labs.check with plain NumPy "kernels": verdicts, hints, tolerances and argument errors."""

import io

import numpy as np
import pytest

from scaledl.labs import check as C

spec = lambda x: 3 * np.asarray(x, np.float64)  # noqa: E731
make = lambda n, rng: (rng.standard_normal(n).astype(np.float32),)  # noqa: E731


def good(x, out):
    out[:] = 3 * x


def skips_tail(x, out):
    out[: max(1, x.size - 1)] = 3 * x[: max(1, x.size - 1)]


def off_by_a_little(x, out):
    out[:] = 3 * x + 1e-3


def flaky(x, out, _state={"n": 0}):
    _state["n"] += 1
    out[:] = 3 * x + (1e-2 if _state["n"] % 2 else 0)


def test_correct_function_passes_and_report_is_printed():
    buf = io.StringIO()
    r = C.check_kernel(good, spec, make, [1, 7, 33], report=buf, name="triple")
    assert r.passed and bool(r)
    assert "PASSED: triple on 3 sizes ['1', '7', '33']" in buf.getvalue()
    r.raise_if_failed()


def test_tail_left_unwritten_is_reported_as_coverage():
    r = C.check_kernel(skips_tail, spec, make, [1, 7, 33], report=None)
    assert not r.passed
    assert any("never written" in h for h in r.hints)
    assert "elements from index 6 on were never written" in str(r)
    with pytest.raises(AssertionError, match="FAIL skips_tail at size 7"):
        r.raise_if_failed()


def test_small_errors_beyond_tolerance_are_caught_with_yours_and_spec():
    r = C.check_kernel(off_by_a_little, spec, make, [5], report=None)
    assert not r.passed
    text = str(r)
    assert "Yours" in text and "Spec" in text and "5 of 5 outputs differ" in text


def test_run_to_run_differences_point_at_a_race():
    r = C.check_kernel(flaky, spec, make, [5], report=None)
    assert any("race" in h for h in r.hints)


def right_then_wrong(x, out, _state={"n": 0}):
    _state["n"] += 1
    out[:] = 3 * x + (0 if _state["n"] % 2 else 1e-2)


def test_a_race_fails_the_size_even_when_the_first_run_was_right():
    """A racy kernel that happens to be right on its first run is still wrong: the size fails, and the table
    shows the run that differed (before, the size was reported ok beside the race hint)."""
    r = C.check_kernel(right_then_wrong, spec, make, [5], report=None)
    assert not r.passed
    text = str(r)
    assert "FAIL right_then_wrong at size 5: two identical runs gave different results" in text
    assert "5 of 5 outputs differ" in text and any("race" in h for h in r.hints)


def test_gemm_tolerance_follows_float32_eps_and_K():
    A, B = np.ones((2, 10)), np.ones((10, 3))
    assert np.allclose(C.gemm_tolerance(A, B), 12 * C.FLOAT32_EPS * 10)
    # a float32 evaluation of a random product is always inside it
    rng = np.random.default_rng(0)
    A, B = C.gemm_inputs((17, 9, 300), rng)
    err = np.abs((A @ B).astype(np.float64) - C.gemm_spec(A, B))
    assert np.all(err <= C.gemm_tolerance(A, B))


def test_gemm_sizes_are_not_multiples_of_any_tile():
    for size in C.GEMM_SIZES:
        assert all(s % t for s in size for t in (2, 4, 8, 16, 32) if s > 1) and len(set(size)) == 3


@pytest.mark.parametrize("block", [4, 8, 16, 32, 64, 128])
def test_block_scaled_gemm_sizes_span_several_blocks_and_are_odd(block):
    sizes = C.gemm_sizes(block)
    assert sizes[0] == (5, 3, 7)
    for size in sizes[1:]:
        assert all(s % 2 for s in size) and len(set(size)) == 3  # odd: no power-of-two tile divides them
        assert all(-(-s // block) >= 3 for s in size)  # at least 3 blocks (or K tiles) in every dimension


@pytest.mark.parametrize("block", [1, 0, 2.0, True, "8"])
def test_gemm_sizes_rejects_a_bad_block(block):
    with pytest.raises(ValueError, match=f"block must be an int >= 2.*got {block!r}"):
        C.gemm_sizes(block)


def test_numpy_gemm_passes_check_gemm():
    def yours(A, B, out):
        out[:] = A @ B
    assert C.check_gemm(yours, report=None).passed


def test_bad_arguments():
    with pytest.raises(ValueError, match="sizes must list at least one size"):
        C.check_kernel(good, spec, make, [], report=None)
    with pytest.raises(ValueError, match="repeats must be a positive integer, got 0"):
        C.check_kernel(good, spec, make, [3], repeats=0, report=None)


def test_a_stub_raises_its_task_name():
    def stub(x, out):
        raise NotImplementedError("Task 1.1")
    with pytest.raises(NotImplementedError, match="Task 1.1"):
        C.check_kernel(stub, spec, make, [3], report=None)


def test_raise_after_a_printed_report_does_not_repeat_it():
    r = C.check_kernel(skips_tail, spec, make, [1, 7], report=io.StringIO())
    with pytest.raises(AssertionError, match="skips_tail did not pass: see the report and the hints above"):
        r.raise_if_failed()


def test_check_values_shows_yours_and_spec_and_the_hint():
    def spec_bytes(n, tile):
        return 4 * n * -(-n // tile)

    def forgot_ceiling(n, tile):
        return 4 * n * (n // tile)

    buf = io.StringIO()
    r = C.check_values(forgot_ceiling, spec_bytes, [(32, 16), (37, 16)], name="bytes",
                       hint="round the number of tiles up", report=buf)
    text = buf.getvalue()
    assert not r.passed
    assert "ok   bytes(32, 16) = 256" in text  # a multiple of the tile hides the bug ...
    assert "FAIL bytes(37, 16):  Yours:                    296  Spec: 444" in text  # ... an odd size shows it
    assert "Hint: round the number of tiles up" in text
    assert C.check_values(spec_bytes, spec_bytes, [(37, 16)], report=None).passed


def test_check_values_fails_on_none_and_bad_arguments():
    assert not C.check_values(lambda n: None, lambda n: n, [3], report=None).passed
    with pytest.raises(ValueError, match="cases must list at least one"):
        C.check_values(abs, abs, [], report=None)
    with pytest.raises(ValueError, match="rtol must be a non-negative number, got -1"):
        C.check_values(abs, abs, [1], rtol=-1, report=None)
