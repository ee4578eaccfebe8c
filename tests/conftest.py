"""Shared test fixtures. The backend is decided when scaledl is imported (here, before any test runs).

Also how `make test` shares the run between two pytest-xdist workers (the end of this file)."""

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Every test process imports nbformat: without jsonschema's IRI parsers, a second less each (what
# scaledl._startup does for the grader and the scaledl command; not imported here, so that importing scaledl,
# which decides the backend, stays where it was).
sys.modules.setdefault("rfc3987_syntax", None)


def run_python(code: str, env_extra: dict | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (the backend decision is per process)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SCALEDL_BACKEND", "NUMBA_ENABLE_CUDASIM")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


@pytest.fixture
def python():
    return run_python


def has_gpu() -> bool:
    import scaledl

    return scaledl.backend() == "cuda"


BOOK_HEADER = """[book]
title = "T"
authors = ["A"]
license = "L"
repository = "https://example.org/r"

[[parts]]
id = "I"
title = "P"
"""


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return f'"{v}"' if isinstance(v, str) else str(v)


def chapter(id, file, status="draft", title="T", **more):
    return "chapter", {"id": id, "file": file, "title": title, "status": status, **more}


def lab(id, file, solution, status="draft", title="L", **more):
    return "lab", {"id": id, "file": file, "solution": solution, "title": title, "status": status, **more}


@pytest.fixture
def write_book(tmp_path):
    """``write_book(chapter(...), lab(...))`` writes a one-part book.toml (and its folders) in tmp_path."""

    def write(*entries):
        lines = [BOOK_HEADER]
        for kind, fields in entries:
            lines.append(f"[[parts.{kind}s]]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in fields.items()]
        (tmp_path / "book.toml").write_text("\n".join(lines) + "\n")
        for folder in ("chapters", "labs/solutions"):
            (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        return tmp_path

    write.chapter, write.lab = chapter, lab
    return write


# -- Two cores: how `make test` spreads the run over pytest-xdist workers ----------------------------------
#
# `make test` runs `pytest -n 2 --dist loadfile`, and the hook below replaces xdist's scheduler for that
# (and for loadgroup) with BookScheduling: xdist's loadscope scheduler, whose units of work are
#
# * "sandbox": all of tests/grading. The grading sandbox runs student code as one account (scaledl-grader);
#   Sandbox.sweep() and the hostile test's leftover scan count that account's unmarked processes (a
#   submission that cleared its environment) as their own, and RLIMIT_NPROC is per account, so two batches at
#   once could kill or count each other's processes.
# * "mpi": the test files, notebooks and emulated-CPU re-executions that start mpiexec (up to 4 busy-polling
#   ranks each): two at once on two cores would push them past their timeouts. tests/cluster (make
#   test-cluster) is one of them (about 70 s as root: its ranks run in network namespaces, timed against netsim).
# * "browser": tests/browser, so one JupyterLab server and one static-book build serve the whole tier.
# * any other notebook (its nbval items: one kernel runs the cells in order) or test file, so module- and
#   session-scoped fixtures are built once;
# * each notebook of test_emulated_cpu.py on its own, so the two workers share them.
#
# A unit runs in one worker, in collection order. The units are handed out longest first (expected seconds:
# the last run's, recorded in pytest's cache, else the estimates below, as on a clean clone in CI), so
# neither worker is left with one long unit at the end. The units are worked out from node ids alone, in
# the controlling process: xdist's own loadgroup reads ``xdist_group`` marks through node ids that it
# rewrites, which pytest 9.2 no longer lets it do (pytest-xdist issue #1386), so no marks are used here.

# Seconds on two busy cores (CI, and this machine's runs of the tiers) of the long units, for a clean clone
# that has no record; other notebooks are estimated from their book.toml sim_budget_s, other tests at a
# fraction of a second each. Only their order matters.
ESTIMATED_S = {"sandbox": 250.0, "mpi": 200.0, "browser": 120.0, "tests/packaging/test_wheel.py": 100.0,
               "tests/sim/test_validate_sim.py": 80.0}
NOTEBOOK_SHARE = 0.13  # seconds per second of sim_budget_s (CI: nbval 440 s / 3720 s, emulated 258 s / 1890 s)
PER_TEST_S = 0.2
CACHE_KEY = "scaledl/xdist-unit-seconds"
EMULATED = "tests/notebooks/test_emulated_cpu.py"
_MPI_USE = re.compile(r"mpiexec|\bmpi_\w+\.\w+\(|\bcheck_mpi_\w+\(")


@functools.cache
def _starts_mpi(path: str) -> bool:
    """Whether a test file or a notebook's code (past its setup cell's pip line) starts MPI ranks."""
    try:
        if path.endswith(".ipynb"):
            import nbformat

            nb = nbformat.read(ROOT / path, as_version=4)
            text = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        else:
            text = (ROOT / path).read_text()
    except Exception:
        return False
    return bool(_MPI_USE.search("\n".join(ln for ln in text.splitlines() if "pip install" not in ln)))


@functools.cache
def _book_entries() -> dict:
    """book.toml's entries by id and by executed file."""
    from scaledl.book import load

    try:
        entries = load(ROOT).entries
    except Exception:
        return {}
    return {**{e.id: e for e in entries}, **{Path(e.executed_file).as_posix(): e for e in entries}}


def _emulated_notebook(nodeid: str) -> str | None:
    """The notebook a test_emulated_cpu.py test re-executes (its parameter is the book.toml id)."""
    if not nodeid.startswith(EMULATED + "::") or not nodeid.endswith("]"):
        return None
    entry = _book_entries().get(nodeid.rsplit("[", 1)[1][:-1])
    return Path(entry.executed_file).as_posix() if entry is not None else None


def xdist_unit(nodeid: str) -> str:
    """The unit of work a test belongs to under `make test` (see above)."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/grading/"):
        return "sandbox"
    if path.startswith("tests/browser/"):
        return "browser"
    notebook = _emulated_notebook(nodeid)
    if notebook is not None:
        return "mpi" if _starts_mpi(notebook) else nodeid
    return "mpi" if _starts_mpi(path) else path


def estimated_seconds(unit: str, nodeids) -> float:
    """A unit's expected seconds: each notebook its budget share, once; any other test PER_TEST_S."""
    if unit in ESTIMATED_S:
        return ESTIMATED_S[unit]
    seconds, seen = 0.0, set()
    for nodeid in nodeids:
        path = nodeid.split("::", 1)[0]
        notebook = path if path.endswith(".ipynb") else _emulated_notebook(nodeid)
        entry = _book_entries().get(notebook) if notebook else None
        if entry is None:
            seconds += PER_TEST_S
        elif (path, notebook) not in seen:
            seen.add((path, notebook))
            seconds += NOTEBOOK_SHARE * entry.sim_budget_s
    return seconds


def _book_scheduling(config):
    from xdist.scheduler import LoadScopeScheduling

    class BookScheduling(LoadScopeScheduling):
        """loadscope over xdist_unit's units, handed out longest first."""

        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_ordered", False):  # the first call: schedule() has filled the queue
                self._ordered = True
                known = config.cache.get(CACHE_KEY, {}) if getattr(config, "cache", None) else {}
                # max: a partial run (one file of a unit, -k) records less than the whole unit takes
                expected = {unit: max(known.get(unit, 0.0), estimated_seconds(unit, ids))
                            for unit, ids in self.workqueue.items()}
                ordered = sorted(self.workqueue.items(), key=lambda kv: -expected[kv[0]])
                self.workqueue.clear()
                self.workqueue.update(ordered)
            super()._assign_work_unit(node)

    return BookScheduling


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") in ("loadfile", "loadgroup"):
        return _book_scheduling(config)(config, log)
    return None


_unit_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # in the controlling process (or a serial run)
        unit = xdist_unit(report.nodeid)
        _unit_seconds[unit] = _unit_seconds.get(unit, 0.0) + report.duration


def pytest_sessionfinish(session):
    """After a distributed run that passed: record each unit's seconds for the next run's order."""
    config = session.config
    if (os.environ.get("PYTEST_XDIST_WORKER") is None and config.getoption("numprocesses", default=None)
            and getattr(config, "cache", None) and _unit_seconds and session.testsfailed == 0):
        config.cache.set(CACHE_KEY, {**config.cache.get(CACHE_KEY, {}), **_unit_seconds})


# -- Training notebooks: validated once, as the plainest x86-64 ------------------------------------------------
#
# A notebook that book.toml marks ``trains = true`` is validated by nbval in test_emulated_cpu.py, re-executed as
# a plain x86-64 would run it (SSE3-era BLAS kernels, NumPy and libm without their SIMD variants, generic Numba
# code), against the same committed outputs. Where that test runs (x86-64, and the whole tier collected, as in
# `make test`), the same notebook's native nbval items would execute it a second time to check the same outputs,
# so they are left out: about six minutes of `make test` on two cores. `make test-notebooks` (notebooks only)
# still validates every notebook natively, and SCALEDL_NATIVE_TRAINING_NBVAL=1 keeps both here.
def _emulation_runs_here() -> bool:
    import platform

    return platform.machine().lower() in ("x86_64", "amd64")


def pytest_collection_modifyitems(session, config, items):
    if os.environ.get("SCALEDL_NATIVE_TRAINING_NBVAL") == "1" or not _emulation_runs_here():
        return
    emulated = {_emulated_notebook(item.nodeid) for item in items} - {None}
    twice = [item for item in items if item.nodeid.split("::", 1)[0] in emulated]
    if twice:
        config.hook.pytest_deselected(items=twice)
        items[:] = [item for item in items if item.nodeid.split("::", 1)[0] not in emulated]
