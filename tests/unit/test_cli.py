"""The scaledl command: doctor, book list/check, and clear errors for bad input."""

import io
import subprocess
import sys

from scaledl import cli
from scaledl import doctor as doctor_mod


def scaledl(*args, env=None):
    return subprocess.run([sys.executable, "-m", "scaledl", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_doctor_reports_backend_versions_and_passes():
    out = io.StringIO()
    assert cli.doctor(out) == 0, out.getvalue()
    text = out.getvalue()
    for field in ("backend", "python", "numpy", "numba-cuda", "ipywidgets", "jupyterlab", "colab",
                  "smoke test   ok"):
        assert field in text
    assert "verdict      the book can run here" in text


def test_book_list_validated_gives_existing_paths():
    r = scaledl("book", "list", "--validated")
    assert r.returncode == 0, r.stderr
    assert "chapters/00_getting_started.ipynb" in r.stdout.split()


def test_execute_unknown_name_is_a_clear_error_before_any_work():
    r = scaledl("book", "execute", "00", "no_such_chapter")
    assert r.returncode == 2
    assert "scaledl: error: unknown notebook 'no_such_chapter'" in r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_subcommand_is_refused_by_argparse():
    r = scaledl("bake")
    assert r.returncode == 2 and "invalid choice: 'bake'" in r.stderr


def test_bench_without_gpu_says_so():
    import scaledl as pkg

    if pkg.backend() == "cuda":
        return
    r = scaledl("bench")
    assert r.returncode != 0
    assert "GPU" in (r.stdout + r.stderr)


def test_commands_that_use_no_backend_print_no_backend_notice():
    for args in (["--help"], ["book", "check"], ["book", "list"], ["book", "--help"]):
        r = scaledl(*args)
        assert "backend (" not in r.stderr + r.stdout, (args, r.stderr)
    r = subprocess.run([sys.executable, "-c", "import scaledl"], capture_output=True, text=True, timeout=300)
    assert r.stderr.startswith("scaledl: ") and "backend (" in r.stderr  # a script or notebook still sees it


def test_executing_a_planned_chapter_says_it_is_planned(tmp_path):
    import os
    import re

    from scaledl.book import load
    from scaledl.book.toc import ROOT_VAR

    book = load()
    # every entry of the book is written now: plan one in a copy of book.toml
    text = (book.root / "book.toml").read_text()
    text, n = re.subn(r'(id = "16"\n(?:[^\n]+\n)*?status = )"[a-z]+"', r'\1"planned"', text, count=1)
    assert n == 1
    (tmp_path / "book.toml").write_text(text)
    planned = next(e for e in load(tmp_path).entries if not e.validated)
    r = scaledl("book", "execute", planned.id, env={**os.environ, ROOT_VAR: str(tmp_path)})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{planned.kind} {planned.id}" in r.stderr and "is planned in book.toml and not written yet" in r.stderr


def test_doctor_says_what_a_missing_optional_package_is_for(monkeypatch):
    monkeypatch.setattr(doctor_mod, "version", lambda dist: None if dist == "nbval" else "1.0")
    monkeypatch.setattr(doctor_mod, "smoke_test", lambda: (True, "stub"))
    out = io.StringIO()
    assert cli.doctor(out) == 0
    assert "nbval        not installed: needed only for `make test`" in out.getvalue()
    assert "NOT INSTALLED" not in out.getvalue()


def test_a_usage_error_is_one_line_and_any_other_value_error_keeps_its_traceback(monkeypatch, capsys):
    """cli.main prints a UsageError (bad input from whoever runs the command) as one line and exits 2; a plain
    ValueError raised elsewhere is a bug, and goes through with its traceback instead of being dressed up."""
    import pytest

    import scaledl.book as book
    from scaledl._args import UsageError

    def refuse(*a, **k):
        raise UsageError("--book: no such book.toml; expected the repository's root")

    monkeypatch.setattr(book, "load", refuse)
    assert cli.main(["book", "list"]) == 2
    err = capsys.readouterr().err
    assert err == "scaledl: error: --book: no such book.toml; expected the repository's root\n"

    def bug(*a, **k):
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(book, "load", bug)
    with pytest.raises(ValueError, match="broadcast"):
        cli.main(["book", "list"])
