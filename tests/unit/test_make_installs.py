"""`make book` and `make release` install only the extras they need, not [dev].

[dev] brings the CUDA compiler wheels, Playwright's browser driver and the test tools (a 1.8 GB .venv); the
static book needs Jupyter Book ([book]), the students' bundle only nbformat ([release]). These tests read the
install line each target's stamp rule prints (`make -n`, against a .venv that does not exist, so the rule
would run) and check it against pyproject.toml's extras. The install itself is checked by hand in a fresh
venv (`make book VENV=/tmp/venv-book`), which needs the package index: too slow for the unit tier.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
# What only the test tier needs: none of it may reach `make book` or `make release`.
TEST_ONLY = {"pytest", "pytest-xdist", "nbval", "hypothesis", "playwright"}

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def expand(extra: str) -> list[str]:
    """The requirements of ``extra``, with the package's own extras (``scaledl[book]``) replaced by theirs."""
    out = []
    for r in EXTRAS[extra]:
        own = re.fullmatch(r"\s*scaledl\[([\w,\s-]+)\]\s*", r)
        out += [x for e in own.group(1).split(",") for x in expand(e.strip())] if own else [r]
    return out


def install_extras(target: str, tmp_path: Path, *args: str) -> list[set[str]]:
    """The extras of every `pip install -e '.[...]'` that `make -n TARGET` would run in a fresh .venv."""
    venv = tmp_path / "no-venv-yet"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    out = subprocess.run(["make", "-n", "-s", target, f"VENV={venv}", *args], cwd=ROOT, capture_output=True,
                         text=True, check=True, env=env).stdout
    found = []
    for line in out.replace("\\\n", " ").splitlines():
        words = shlex.split(line)
        if "pip" in words and "install" in words:
            specs = [w for w in words if w.startswith(".[") or w == "."]
            assert specs, f"`make {target}` installs something other than the package: {line}"
            found += [set(x.strip() for x in s[2:-1].split(",")) if s != "." else set() for s in specs]
    return found


@pytest.mark.parametrize("target, extra, args", [("book", "book", ()), ("release", "release", ("OUT=/tmp/x",))])
def test_book_and_release_install_only_their_own_extra(target, extra, args, tmp_path):
    assert install_extras(target, tmp_path, *args) == [{extra}]
    assert extra in EXTRAS, f"pyproject.toml has no [{extra}] extra"
    names = {_name(r) for r in expand(extra)}
    assert not names & TEST_ONLY, f"[{extra}] pulls test tools: {sorted(names & TEST_ONLY)}"
    assert not [r for r in expand(extra) if re.search(r"numba-cuda\[cu\d+\]|cupy", r)], f"[{extra}] pulls CUDA wheels"


def test_the_extras_hold_what_each_command_imports():
    assert "jupyter-book" in {_name(r) for r in expand("book")}  # `scaledl book html`
    assert "nbformat" in {_name(r) for r in expand("book")}  # scaledl.book.site stages notebooks with it
    assert {_name(r) for r in expand("release")} == {"nbformat"}  # scaledl.course.release, scaledl.book.student_copy
    assert "nbformat" in {_name(r) for r in expand("course")}  # grading releases nothing but reads notebooks


def test_make_test_still_installs_dev(tmp_path):
    assert install_extras("test", tmp_path) == [{"dev"}]
    own = {e.strip() for r in EXTRAS["dev"] for group in re.findall(r"scaledl\[([\w,\s-]+)\]", r)
           for e in group.split(",")}
    assert {"book", "course"} <= own  # the tests build the site and grade
