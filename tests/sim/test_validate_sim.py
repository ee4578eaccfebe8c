"""`scaledl validate --quick` end to end on the simulator: the report's schema and tables, that the book's
notebooks are only read, and that a failing cell is reported with its error and makes the exit status 1.

About a minute on two cores: tests/gpu is collected (and skipped), the bench is a dry run at tiny sizes, and
--quick executes chapter 04 and lab 01's solution."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import scaledl
from scaledl.book import load

pytestmark = [pytest.mark.sim,
              pytest.mark.skipif(scaledl.backend() == "cuda", reason="on a GPU, validate is the real thing: "
                                                                     "run `scaledl validate` itself")]

ROOT = Path(__file__).resolve().parents[2]
STEP_KEYS = {"tests": {"status", "reason", "tests"}, "bench": {"status", "mode", "rows", "errors"},
             "notebooks": {"status", "reason", "notebooks"}}
ROW_KEYS = {"kernel", "size", "time_ms", "rate", "unit", "baseline", "ratio", "target", "target_met"}
NOTEBOOK_KEYS = {"id", "file", "status", "seconds", "cells_passed", "cells_failed", "cells_not_run",
                 "first_error", "cells"}


def _validate(out: Path, *args, cwd=ROOT, env_extra=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SCALEDL_BOOK_ROOT", "NUMBA_ENABLE_CUDASIM")}
    env.update(SCALEDL_BACKEND="simulator", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "scaledl", "validate", "--quick", "--out", str(out), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _digests(book) -> dict:
    return {e.executed_file: hashlib.sha256(book.path(e.executed_file).read_bytes()).hexdigest()
            for e in book.entries if e.validated}


def _table(md: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after ``heading``, header row included."""
    lines = md.split(heading, 1)[1].splitlines()
    rows = [ln for ln in lines[lines.index(next(x for x in lines if x.startswith("|"))):]]
    rows = rows[:next((i for i, x in enumerate(rows) if not x.startswith("|")), len(rows))]
    return [[c.strip() for c in r.strip("|").split(" | ")] for r in rows if not r.startswith("|---")]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    book = load(ROOT)
    before = _digests(book)
    out = tmp_path_factory.mktemp("validate") / "report"
    run = _validate(out)
    return run, out, before, _digests(book)


def test_quick_run_passes_and_writes_both_reports(quick_run):
    run, out, before, after = quick_run
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert after == before  # chapters/ and labs/ were only read
    for step in ("1/4 facts", "2/4 tests/gpu", "3/4 bench", "4/4 notebooks", "notebook 1/2: 04", "PASSED"):
        assert step in run.stdout, step  # progress, one line per step
    assert {p.name for p in out.iterdir()} == {"report.json", "report.md", "tests-gpu.xml", "notebooks"}


def test_report_json_schema(quick_run):
    _, out, _, _ = quick_run
    r = json.loads((out / "report.json").read_text())
    assert r["schema"] == "scaledl-validate/1" and r["ok"] is True and r["command"].startswith("scaledl validate")
    f = r["facts"]
    assert f["backend"] == "simulator" and f["smoke_ok"] is True and f["driver_cuda_version"] is None
    assert {"date", "hostname", "device", "compute_capability", "cuda_runtime_version", "python"} <= set(f)
    assert {"numpy", "numba", "numba-cuda", "cupy-cuda12x"} <= set(f["versions"])
    for step, keys in STEP_KEYS.items():
        assert keys <= set(r["steps"][step]), step
    tests = r["steps"]["tests"]
    assert tests["status"] == "skipped" and len(tests["tests"]) >= 20  # tests/gpu, all skipped without a GPU
    assert all(t["status"] == "skipped" and "needs a CUDA GPU" in t["message"] for t in tests["tests"])
    bench = r["steps"]["bench"]
    assert bench["status"] == "passed" and bench["mode"] == "dry run" and bench["errors"] == []
    assert [row["kernel"] for row in bench["rows"]][:4] == ["numpy matmul (dry run)", "gemm naive", "gemm tiled",
                                                              "gemm regblock"]
    assert all(set(row) == ROW_KEYS and row["target_met"] is None for row in bench["rows"])  # never judged here
    nbs = r["steps"]["notebooks"]["notebooks"]
    assert [n["id"] for n in nbs] == ["04", "lab01"]
    for n in nbs:
        assert set(n) == NOTEBOOK_KEYS and n["status"] == "passed" and n["cells_failed"] == 0
        assert n["cells_passed"] == len(n["cells"]) > 5 and all(c["seconds"] >= 0 for c in n["cells"])
        assert (out / "notebooks" / Path(n["file"]).name).is_file()  # the executed copy


def test_report_md_tables(quick_run):
    _, out, _, _ = quick_run
    md = (out / "report.md").read_text()
    assert md.startswith("# scaledl validate: PASSED")
    machine = dict((row[0], row[1]) for row in _table(md, "say nothing about hardware.")[1:])
    assert machine["Device"].startswith("CPU simulator") and machine["Backend"].startswith("simulator")
    assert {"numpy", "numba", "Kernel smoke test", "Date", "Host", "CUDA runtime"} <= set(machine)
    assert all(len(row) == 3 for row in _table(md, "## Steps"))  # step, status, detail
    assert [row[:2] for row in _table(md, "## Steps")[1:]] == [["tests", "skipped"], ["bench", "passed"],
                                                               ["notebooks", "passed"]]
    bench = _table(md, "## Bench (dry run)")
    assert bench[0] == ["Kernel", "Size", "Time (ms)", "Rate", "Baseline", "Ratio to baseline", "Target"]
    regblock = next(row for row in bench if row[0] == "gemm regblock")
    assert regblock[4] == "numpy matmul (dry run)" and regblock[5].endswith("%") and "not judged" in regblock[6]
    nbs = _table(md, "## Notebooks")
    assert nbs[0][:4] == ["Notebook", "Status", "Cells passed", "Cells failed"]
    assert [row[:2] for row in nbs[1:]] == [["04 chapters/04_writing_gemm_kernels.ipynb", "passed"],
                                            ["lab01 labs/solutions/lab01_roofline_your_device.ipynb", "passed"]]


def test_a_failing_cell_is_reported_with_its_error_and_fails_the_run(tmp_path):
    """A book of its own (SCALEDL_BOOK_ROOT): a tiny chapter whose third code cell raises, and a copy of
    lab 01's solution; no tests/ folder there, as in a wheel install."""
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    (book / "labs" / "solutions").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A tiny chapter"), nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell("print(x + 1)"),
                nbformat.v4.new_code_cell("raise ValueError('injected for the test')"),
                nbformat.v4.new_code_cell("print('never')")]
    nbformat.write(nb, book / "chapters" / "04_tiny.ipynb")
    real = load(ROOT).resolve("lab01").solution
    (book / "labs" / "solutions" / "lab01.ipynb").write_bytes((ROOT / real).read_bytes())
    (book / "book.toml").write_text('''[book]
title = "t"
authors = []
license = ""
repository = ""
[[parts]]
id = "I"
title = "p"
[[parts.chapters]]
id = "04"
file = "chapters/04_tiny.ipynb"
title = "tiny"
status = "done"
gpu = true
[[parts.labs]]
id = "lab01"
file = "labs/lab01.ipynb"
solution = "labs/solutions/lab01.ipynb"
title = "lab"
status = "done"
gpu = true
''')
    out = tmp_path / "report"
    run = _validate(out, cwd=book, env_extra={"SCALEDL_BOOK_ROOT": str(book)})
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    r = json.loads((out / "report.json").read_text())
    assert r["ok"] is False and r["steps"]["tests"]["status"] == "absent"
    chapter, lab = r["steps"]["notebooks"]["notebooks"]
    assert (chapter["status"], chapter["cells_passed"], chapter["cells_failed"], chapter["cells_not_run"]) == \
        ("failed", 2, 1, 1)
    assert chapter["first_error"] == "cell 3: ValueError: injected for the test"
    assert [c["status"] for c in chapter["cells"]] == ["passed", "passed", "failed", "not run"]
    assert lab["status"] == "passed"  # one failing notebook does not stop the next
    md = (out / "report.md").read_text()
    assert md.startswith("# scaledl validate: FAILED")
    rows = {row[0]: row for row in _table(md, "## Notebooks")[1:]}
    assert rows["04 chapters/04_tiny.ipynb"][1:5] == ["failed", "2", "1", "1"]
    assert rows["04 chapters/04_tiny.ipynb"][6] == "cell 3: ValueError: injected for the test"
    assert "absent" in _table(md, "## Steps")[1]
    assert "FAILED" in run.stdout and "first error: cell 3: ValueError: injected for the test" in run.stdout
