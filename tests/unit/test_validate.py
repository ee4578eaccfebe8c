"""`scaledl validate`'s fast parts: reading pytest's JUnit XML, choosing notebooks, summarizing cells, the
report's tables, the CLI wiring. The end-to-end run is tests/sim/test_validate_sim.py."""

import json
from pathlib import Path

import pytest

from scaledl.book import load
from scaledl.book.toc import Book, Entry
from scaledl.cli import build_parser
from scaledl.validate import gpu_tests, notebooks, report, validate

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
 <testcase classname="tests.gpu.test_a" name="test_ok" time="1.5"/>
 <testcase classname="tests.gpu.test_a" name="test_wrong" time="0.2">
  <failure message="AssertionError: gemm tiled does not match&#10;second line">trace</failure></testcase>
 <testcase classname="tests.gpu.test_b" name="test_broken_fixture" time="0.0">
  <error message="fixture 'cupy' not found">trace</error></testcase>
 <testcase classname="tests.gpu.test_b" name="test_needs_gpu" time="0.0">
  <skipped type="pytest.skip" message="needs a CUDA GPU">skip</skipped></testcase>
</testsuite></testsuites>
"""


def test_junit_xml_gives_each_test_its_status_and_first_message_line(tmp_path):
    (tmp_path / "r.xml").write_text(JUNIT)
    tests = gpu_tests.parse_junit(tmp_path / "r.xml")
    assert [(t["name"], t["status"]) for t in tests] == [
        ("tests.gpu.test_a::test_ok", "passed"), ("tests.gpu.test_a::test_wrong", "failed"),
        ("tests.gpu.test_b::test_broken_fixture", "error"), ("tests.gpu.test_b::test_needs_gpu", "skipped")]
    assert tests[0]["seconds"] == 1.5 and tests[0]["message"] == ""
    assert tests[1]["message"] == "AssertionError: gemm tiled does not match"  # one line, for a table cell
    assert tests[2]["message"] == "fixture 'cupy' not found"


def test_without_a_tests_folder_the_step_says_absent(tmp_path):
    for root in (None, tmp_path):  # a wheel install: no book at all, or a book without tests/
        step = gpu_tests.run(root, tmp_path)
        assert step["status"] == "absent" and "no tests/gpu folder" in step["reason"] and step["tests"] == []


def _entry(kind, eid, gpu=True, status="done"):
    return Entry(kind=kind, id=eid, file=f"{kind}s/{eid}.ipynb", title=eid, status=status, part="I", gpu=gpu,
                 solution=f"labs/solutions/{eid}.ipynb" if kind == "lab" else None)


BOOK = Book(root=Path("/nowhere"), title="t", authors=(), license="", repository="", parts=(("I", "p"),),
            entries=(_entry("chapter", "01", gpu=False), _entry("chapter", "02"), _entry("chapter", "03"),
                     _entry("lab", "lab01", gpu=False), _entry("lab", "lab02"), _entry("lab", "lab03"),
                     _entry("chapter", "04", status="planned")))


def test_notebooks_marked_gpu_are_selected_and_quick_keeps_the_first_chapter_and_lab():
    assert [e.id for e in notebooks.select(BOOK)] == ["02", "03", "lab02", "lab03"]  # not gpu=false or planned
    assert [e.id for e in notebooks.select(BOOK, quick=True)] == ["02", "lab02"]
    assert [e.id for e in notebooks.select(BOOK, only=["lab01", "3"])] == ["lab01", "03"]  # any, by name


def test_a_bad_or_planned_name_is_refused():
    with pytest.raises(ValueError, match="unknown notebook 'lab99'"):
        notebooks.select(BOOK, only=["lab99"])
    with pytest.raises(ValueError, match="only: chapter 04 is planned in book.toml"):
        notebooks.select(BOOK, only=["04"])


def test_the_real_books_quick_subset_is_chapter_04_and_lab_01():
    book = load()
    assert [e.id for e in notebooks.select(book, quick=True)] == ["04", "lab01"]
    assert {e.id for e in notebooks.select(book)} >= {"04", "05", "06", "lab01", "lab02", "12", "18"}


def test_a_notebook_summary_counts_cells_and_names_the_first_error():
    cells = [{"index": 1, "status": "passed", "seconds": 0.1, "error": "", "source": "x = 1"},
             {"index": 3, "status": "failed", "seconds": 0.2, "error": "ZeroDivisionError: division by zero",
              "source": "1 / 0"},
             {"index": 4, "status": "not run", "seconds": 0.0, "error": "", "source": "print(x)"}]
    s = notebooks.summarize("lab02", "labs/solutions/lab02.ipynb", cells, 1.26)
    assert (s["status"], s["cells_passed"], s["cells_failed"], s["cells_not_run"], s["seconds"]) == \
        ("failed", 1, 1, 1, 1.3)
    assert s["first_error"] == "cell 3: ZeroDivisionError: division by zero"
    ok = notebooks.summarize("04", "c.ipynb", cells[:1], 0.1)
    assert ok["status"] == "passed" and ok["first_error"] is None


def _report(ok=False):
    facts = {"date": "2026-01-01T00:00:00+00:00", "hostname": "h", "backend": "cuda", "backend_reason": "found",
             "device": "NVIDIA H100 80GB HBM3", "gpu_count": 1, "compute_capability": "9.0", "memory_GiB": 79.1,
             "driver_cuda_version": "12.8", "cuda_runtime_version": "12.6", "python": "3.11.7 (Linux x86_64)",
             "versions": {"numpy": "2.1.0", "cupy-cuda12x": "13.3.0", "cupy-cuda13x": None},
             "smoke_ok": True, "smoke": "a 37-element axpy kernel matched NumPy"}
    row = {"kernel": "gemm regblock", "size": "4096^3", "time_ms": 3.5, "rate": 39000.0, "unit": "GFLOP/s",
           "baseline": "cuBLAS SGEMM (CuPy)", "ratio": 0.61, "target": 0.5, "target_met": True}
    slow = dict(row, kernel="copy", unit="GB/s", rate=2000.0, ratio=0.62, target=0.85, target_met=False)
    steps = {"tests": {"status": "passed", "reason": "1 passed", "tests": [
                 {"name": "t::test_a|b", "status": "passed", "seconds": 1.0, "message": ""}]},
             "bench": {"status": "passed", "reason": "2 rows", "mode": "gpu", "rows": [row, slow], "errors": []},
             "notebooks": {"status": "failed", "reason": "0 of 1", "notebooks": [notebooks.summarize(
                 "04", "chapters/04.ipynb", [{"index": 2, "status": "failed", "seconds": 0.5, "source": "",
                                              "error": "ValueError: bad\nshape"}], 0.5)]}}
    return {"schema": report.SCHEMA, "command": "scaledl validate", "started": facts["date"], "options": {},
            "facts": facts, "steps": steps, "seconds": 12.0, "ok": ok}


def test_the_markdown_report_has_the_machine_bench_and_notebook_tables(tmp_path):
    js, md = report.write(_report(), tmp_path / "out")
    text = md.read_text()
    assert text.startswith("# scaledl validate: FAILED\n")
    for line in ("| Device | NVIDIA H100 80GB HBM3 |", "| Compute capability | 9.0 |",
                 "| Driver (newest CUDA it supports) | 12.8 |", "| CUDA runtime | 12.6 |", "| cupy-cuda12x | 13.3.0 |",
                 "| Date | 2026-01-01T00:00:00+00:00 |",
                 "| t::test_a\\|b | passed | 1.00 |  |",  # a bar inside a cell is escaped, not a new column
                 "| gemm regblock | 4096^3 | 3.500 | 39,000.0 GFLOP/s | cuBLAS SGEMM (CuPy) | 61 % | >= 50 % (met) |",
                 "| copy | 4096^3 | 3.500 | 2,000.0 GB/s | cuBLAS SGEMM (CuPy) | 62 % | >= 85 % (MISSED) |",
                 "| 04 chapters/04.ipynb | failed | 0 | 1 | 0 | 0.5 | cell 2: ValueError: bad shape |"):
        assert line in text.splitlines(), line
    assert "cupy-cuda13x" not in text  # an absent package is not a row
    assert "No GPU here" not in text
    assert json.loads(js.read_text())["steps"]["bench"]["rows"][1]["target_met"] is False


def test_a_simulator_report_says_its_figures_mean_nothing():
    r = _report(ok=True)
    r["facts"].update(backend="simulator", device="CPU simulator (Numba CUDA simulator)")
    r["steps"]["bench"].update(mode="dry run", errors=["gemm: gemm tiled does not match its reference"])
    text = report.markdown(r)
    assert text.startswith("# scaledl validate: PASSED") and "## Bench (dry run)" in text
    assert "say nothing about hardware" in text and "**Error:** gemm: gemm tiled does not match" in text


def test_the_cli_has_validate_beside_bench_and_keeps_course_grades_options():
    args = build_parser().parse_args(["validate", "--quick", "--out", "r", "--only", "04", "lab02",
                                      "--skip-notebooks"])
    assert (args.command, args.quick, args.out, args.only, args.skip_notebooks, args.hosted) == \
        ("validate", True, "r", ["04", "lab02"], True, False)
    assert build_parser().parse_args(["validate"]).out == "validate-report"
    grade = build_parser().parse_args(["course", "grade", "d", "--lab", "lab03", "--sandbox", "none", "--jobs", "2"])
    assert (grade.sandbox, grade.jobs) == ("none", 2)


def test_an_out_that_is_a_file_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match=r"--out .*f is a file; expected a folder"):
        validate(tmp_path / "f")


def test_a_misspelt_only_fails_before_the_slow_steps(tmp_path):
    with pytest.raises(ValueError, match="unknown notebook 'lab99'"):
        validate(tmp_path / "r", only=["lab99"], progress=lambda m: pytest.fail(f"a step started: {m}"))


def test_bench_measure_refuses_an_unknown_section():
    from scaledl.kernels import bench

    with pytest.raises(ValueError, match=r"section must be one of \('gemm', 'streams', 'fma', 'spmv', 'nm', 'rnn', "
                                         r"'quantize'\), got 'sgemm'"):
        bench.measure("sgemm", bench.HostBaselines(), bench.DRY_RUN_SIZES)


def test_the_hosted_run_needs_a_checkout_to_build_the_wheel_from(tmp_path):
    from scaledl.validate import hosted

    for root in (None, tmp_path):  # a wheel install, or a folder without pyproject.toml
        step = hosted.run(root, tmp_path)
        assert step["status"] == "absent" and "pyproject.toml" in step["reason"]
    assert hosted.NOTEBOOKS == ("04", "lab02")  # the choice: a GEMM chapter and its lab, as on Colab
