"""``scaledl validate``: one command that checks the book on the machine it runs on, and writes one report.

Steps, each recorded as data in ``DIR/report.json`` and as tables in ``DIR/report.md``:

1. facts: ``scaledl doctor``'s device, driver, CUDA runtime and package versions, date and host (facts.py);
2. tests: ``pytest tests/gpu`` with each test's outcome (gpu_tests.py; absent in a wheel install);
3. bench: every kernel checked, then timed beside its baseline as a ratio (bench_step.py);
4. notebooks: every cell of every chapter and lab solution marked ``gpu = true`` (notebooks.py);
5. hosted (``--hosted`` only): a fresh virtualenv with only the built wheel runs chapter 04 and lab 02 (hosted.py).

Without a GPU every step still runs, on the simulator: tests/gpu is reported as skipped and the bench is a
dry run with NumPy stand-ins at tiny sizes, so CI tests the tool itself (tests/sim/test_validate_sim.py).
Exit status 0 when no step failed, 1 otherwise.

Usage: ``scaledl validate [--out DIR] [--quick] [--skip-notebooks] [--only ID ...] [--hosted]``.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

from scaledl._args import UsageError
from scaledl import device
from scaledl.validate import report as report_mod

DEFAULT_OUT = "validate-report"


def _progress(message: str) -> None:
    print(f"[validate {datetime.datetime.now():%H:%M:%S}] {message}", flush=True)


def _book():
    """The book (book.toml) and its folder, or ``(None, None)`` where there is none (a wheel install)."""
    from scaledl.book import load

    try:
        book = load()
    except FileNotFoundError:
        return None, None
    return book, book.root


def validate(out: Path, *, quick: bool = False, skip_notebooks: bool = False, only: list[str] | None = None,
             hosted: bool = False, command: str = "scaledl validate", progress=_progress) -> dict:
    """Run every step, write the report into ``out`` and return it (see the module docstring).

    Raises:
        ValueError: ``out`` is an existing file, or a name in ``only`` is not a written notebook of the book.
    """
    from scaledl.validate import bench_step, facts, gpu_tests, notebooks

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; expected a folder for report.json and report.md")
    out.mkdir(parents=True, exist_ok=True)
    book, root = _book()
    if only and book is not None:
        notebooks.select(book, only=only)  # a misspelt name fails now, not after the tests and the bench
    start = time.perf_counter()
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    progress(f"1/4 facts (backend {device.backend()}: {device.reason()})")
    report = {"schema": report_mod.SCHEMA, "command": command, "started": started,
              "options": {"quick": quick, "skip_notebooks": skip_notebooks, "only": only or [], "hosted": hosted},
              "facts": facts.collect(), "steps": {}}
    steps = report["steps"]
    report_mod.write_partial(report, out)
    progress("2/4 tests/gpu")
    steps["tests"] = gpu_tests.run(root, out, progress=progress)
    report_mod.write_partial(report, out)
    progress(f"   tests/gpu {steps['tests']['status']}: {steps['tests'].get('reason', '')}")
    progress("3/4 bench")
    steps["bench"] = bench_step.run(quick, progress=progress)
    progress(f"   bench {steps['bench']['status']} ({len(steps['bench']['rows'])} rows)")
    report_mod.write_partial(report, out)
    progress("4/4 notebooks marked gpu in book.toml")
    if skip_notebooks:
        steps["notebooks"] = {"status": "skipped", "reason": "--skip-notebooks", "notebooks": []}
    else:
        steps["notebooks"] = notebooks.run(book, out, quick=quick, only=only, progress=progress)
    if hosted:
        from scaledl.validate import hosted as hosted_mod

        report_mod.write_partial(report, out)
        progress("hosted-notebook dry run: build the wheel, install it in a fresh venv")
        steps["hosted"] = hosted_mod.run(root, out, progress=progress)
    report["seconds"] = round(time.perf_counter() - start, 1)
    report["ok"] = bool(report["facts"]["smoke_ok"]) and all(s["status"] != "failed" for s in steps.values())
    js, md = report_mod.write(report, out)
    (out / report_mod.PARTIAL).unlink(missing_ok=True)
    progress(f"{'PASSED' if report['ok'] else 'FAILED'}: report in {md} and {js.name}")
    return report


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``scaledl validate``; 0 when every step passed (or was skipped), 1 otherwise."""
    parser = argparse.ArgumentParser(prog="scaledl validate", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run_from_args(args, "scaledl validate " + " ".join(sys.argv[1:] if argv is None else argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"report folder (default {DEFAULT_OUT}/)")
    parser.add_argument("--quick", action="store_true",
                        help="smaller bench, and only the first chapter and lab marked gpu in book.toml")
    parser.add_argument("--skip-notebooks", action="store_true", help="do not execute the notebooks")
    parser.add_argument("--only", nargs="+", metavar="ID", default=None,
                        help="execute only these notebooks (chapter or lab ids, e.g. 04 lab02)")
    parser.add_argument("--hosted", action="store_true",
                        help="also: build the wheel, install only it in a fresh venv and run chapter 04 and "
                             "lab 02 there, as a hosted runtime would (needs PyPI or a pip cache)")


def run_from_args(args, command: str) -> int:
    """Run :func:`validate` with parsed arguments (``command``: the command line, for the report)."""
    result = validate(Path(args.out), quick=args.quick, skip_notebooks=args.skip_notebooks, only=args.only,
                      hosted=args.hosted, command=command.strip())
    return 0 if result["ok"] else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
