"""Shared test fixtures. The backend is decided when scaledl is imported (here, before any test runs)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


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
