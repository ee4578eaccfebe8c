"""`scaledl bench`: the table's formatting and the no-GPU path (the GPU path runs in tests/gpu)."""

import io

import pytest

import scaledl
from scaledl.kernels.bench import Row, format_table, main


def test_table_columns_ratio_and_target():
    rows = [Row("cuBLAS SGEMM (CuPy)", "4096^3", 2.5, 54975.6, "GFLOP/s", "-", None),
            Row("gemm regblock", "4096^3", 5.0, 27487.8, "GFLOP/s", "cuBLAS", 0.5, 0.5),
            Row("copy", "134,217,728", 0.4, 2684.4, "GB/s", "CuPy copy", 0.8, 0.85)]
    text = format_table(rows, header="H100, 2025-01-01")
    lines = text.splitlines()
    assert lines[0] == "H100, 2025-01-01"
    assert lines[1].split() == ["kernel", "size", "time", "(ms)", "rate", "baseline", "ratio", "target"]
    assert set(lines[2]) == {"-"}
    assert "54,976 GFLOP/s" in lines[3] and lines[3].rstrip().endswith("-")  # the baseline has no ratio
    assert "50 %" in lines[4] and lines[4].endswith(">= 50 % ok")  # 0.5 meets a 0.5 target
    assert lines[5].endswith(">= 85 % MISSED") and "5.000" in lines[4]
    # columns line up: every row starts its rate column at the same offset
    starts = {line.index("GFLOP/s") - len("54,976 ") for line in lines[3:5]}
    assert len(starts) == 1


@pytest.mark.skipif(scaledl.backend() == "cuda", reason="the no-GPU path")
def test_no_gpu_prints_one_line_and_returns_2():
    out = io.StringIO()
    assert main([], out=out) == 2
    text = out.getvalue()
    assert text.count("\n") == 1
    assert text.startswith("scaledl bench needs a CUDA GPU; this machine runs the simulator (")


@pytest.mark.skipif(scaledl.backend() == "cuda", reason="the no-GPU path")
def test_cli_entry_point(python):
    r = python("import sys; from scaledl.cli import main; sys.exit(main(['bench']))",
               {"SCALEDL_BACKEND": "simulator", "SCALEDL_QUIET": "1"})
    assert r.returncode == 2, r.stderr
    assert "scaledl bench needs a CUDA GPU" in r.stdout


def test_check_reports_mismatches_including_scalars():
    import numpy as np

    from scaledl.kernels.bench import _check

    _check("ok", np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]), 1e-6)
    with pytest.raises(RuntimeError, match=r"v does not match its reference \(1 elements\): \(1,\): spec 3.0 got 2.0"):
        _check("v", np.array([1.0, 2.0]), np.array([1.0, 3.0]), 0.5)
    with pytest.raises(RuntimeError, match="sum does not match"):  # a scalar: np.argwhere(0-d) would lose it
        _check("sum", 1.0, 2.0, 0.1)
    with pytest.raises(RuntimeError, match="nan"):  # NaN never passes a tolerance
        _check("nan", np.array([np.nan]), np.array([0.0]), 1.0)
