"""``scaledl course gradescope LAB --out DIR``: the zip Gradescope takes as a lab's autograder.

Gradescope builds a Docker image from a zip holding ``setup.sh`` and ``run_autograder`` at its root (unpacked
into ``/autograder/source``; ``setup.sh`` runs once, as root, with network), then runs ``run_autograder`` once per
submission in a fresh container (:mod:`scaledl.course.gradescope`, which also says what protects the grader
there). ``LAB-gradescope.zip`` holds:

- ``setup.sh`` and ``run_autograder`` (:data:`SETUP_SH`, :data:`RUN_AUTOGRADER`);
- the book's wheel, built from this checkout (``pip wheel --no-deps``);
- ``book/labs/solutions/``: every lab's solution notebook, what ``scaledl course grade`` grades with (the lab's
  graded cells and hidden tests, and the other labs' notebooks, to recognise one handed in by mistake);
- ``lab.json``: the lab, what ``book.toml`` says of each lab, the extras to install, the time limit per notebook.

``setup.sh`` makes the virtual environment ``scaledl-venv`` beside ``source/`` with the image's ``python3``,
installs the wheel with its ``[course]`` extra (and the lab's own: ``[mpi]`` for lab05), then runs
:func:`scaledl.course.gradescope.setup`. :func:`unpack` lays a zip out as Gradescope does, so that
``AUTOGRADER_ROOT=DIR`` can try it in place, without a container.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from scaledl._args import UsageError
from scaledl.course import grade as G
from scaledl.course.gradescope import BOOK_DIR, DEFAULT_TIMEOUT_S, LAB_FILE, VENV

_EXTRA = re.compile(r"scaledl\[([\w,\s-]+)\]")  # the setup cell's `%pip install "scaledl[mpi] @ ..."`

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root and with network, when it builds the autograder's image (written by
# `scaledl course gradescope`). AUTOGRADER_ROOT=DIR runs it on a folder laid out as /autograder is.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SRC="$ROOT/source"
VENV="$ROOT/@VENV@"
WHEEL="$SRC/@WHEEL@"
PYTHON="${SCALEDL_PYTHON:-python3}"  # the image's python3 (3.10 or newer)
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1
"$PYTHON" -c 'import sys; sys.exit(None if sys.version_info >= (3, 10) else
  f"scaledl needs Python 3.10 or newer; {sys.executable} is {sys.version.split()[0]}")'
# bubblewrap: the strongest sandbox, where the container lets it make namespaces; python3-venv: Ubuntu's
# python3 makes no virtual environment without it.
need=""
command -v bwrap >/dev/null 2>&1 || need="bubblewrap"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV" >/dev/null 2>&1 || { rm -rf "$VENV"; need="$need python3-venv"; }
if [ -n "$need" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends $need >/dev/null
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "$WHEEL[@EXTRAS@]"
# this bundle's scaledl, also over another build of the same version left by an earlier setup.sh
"$VENV/bin/python" -m pip install --quiet --no-deps --force-reinstall "$WHEEL"
"$VENV/bin/python" -I -m scaledl.course.gradescope setup --root "$ROOT"
"""

# Its long echo line (one JSON object in single quotes, which the shell cannot wrap) carries the noqa at the end.
RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this for every submission, as root (written by `scaledl course gradescope`): scaledl's grader
# grades the notebook in submission/ and writes results/results.json. AUTOGRADER_ROOT=DIR: another root.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PY="$ROOT/@VENV@/bin/python"
if [ ! -x "$PY" ]; then
  mkdir -p "$ROOT/results"
  echo '{"score": 0, "stdout_visibility": "hidden", "output": "Not graded: the autograder is not set up (its setup.sh did not finish). Your instructor has to rebuild it; then your submission can be graded again."}' > "$ROOT/results/results.json"
  echo "run_autograder: $PY is missing: setup.sh did not finish" >&2
  exit 1
fi
cd "$ROOT"
exec "$PY" -I -m scaledl.course.gradescope run --root "$ROOT"
"""  # noqa: E501


def lab_extras(solution) -> list[str]:
    """The package extras a lab's notebook needs, as its setup cell installs them, plus ``course`` (grading).

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('%pip install "scaledl[mpi] @ git+x"')])
    >>> lab_extras(nb)
    ['course', 'mpi']
    """
    found = {"course"}
    for cell in solution.cells:
        if cell.cell_type == "code" and "pip install" in cell.source:
            for m in _EXTRA.finditer(cell.source):
                found |= {e.strip() for e in m.group(1).split(",") if e.strip()}
    return sorted(found)


def build_wheel(checkout: Path, work: Path) -> Path:
    """The book's wheel, built from ``checkout`` (its pyproject.toml, README, LICENSE and src/) in ``work``.

    Raises:
        ValueError: ``checkout`` has no pyproject.toml (not the book's checkout), or pip failed.
    """
    checkout, work = Path(checkout), Path(work)
    if not (checkout / "pyproject.toml").is_file():
        raise UsageError(f"checkout={str(checkout)!r}: no pyproject.toml; the wheel is built from the book's "
                         f"checkout (run the command inside it)")
    project = work / "project"  # a copy, so the checkout gets no build/ or egg-info
    project.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (checkout / name).is_file():
            shutil.copy2(checkout / name, project / name)
    shutil.copytree(checkout / "src", project / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc", ".ipynb_checkpoints"))
    made = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
                           "--no-deps", "-w", str(work / "dist"), str(project.resolve())],
                          capture_output=True, text=True)
    wheels = sorted((work / "dist").glob("scaledl-*.whl"))
    if made.returncode != 0 or len(wheels) != 1:
        raise UsageError(f"pip wheel failed (exit {made.returncode}): {made.stderr.strip()[-1500:]}")
    return wheels[0]


def _add(z: zipfile.ZipFile, name: str, data: bytes | str, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | mode) << 16  # unzip and Gradescope keep the executable bit
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data.encode() if isinstance(data, str) else data)


def build(lab_id: str, out, *, book=None, timeout_s: float = DEFAULT_TIMEOUT_S, wheel=None,
          sandbox: str = "auto") -> Path:
    """Write ``out/LAB-gradescope.zip``, the autograder of lab ``lab_id``; returns its path.

    ``wheel``: a scaledl wheel already built from this checkout (default: build one). ``sandbox``: the level
    every run asks for (``auto``: the strongest that works in the container); setup.sh checks that very level.

    Raises:
        ValueError: not a lab of the book, a bad time limit, or the wheel could not be built.
    """
    from scaledl.book.toc import load

    if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
        raise UsageError(f"timeout_s={timeout_s!r}: expected a positive number of seconds per notebook")
    from scaledl.course.sandbox import ACCOUNT, LEVELS

    if sandbox not in ("auto", *LEVELS[:-1], ACCOUNT):
        raise UsageError(f"sandbox={sandbox!r}: expected auto, {', '.join(LEVELS[:-1])} or {ACCOUNT}")
    book = book or load()
    lab = G.load_lab(lab_id, book)  # also checks that the solution's test cells and the task specs agree
    labs = [e for e in book.entries if e.kind == "lab" and e.validated]
    entry = next(e for e in labs if e.id == lab.id)
    extras = lab_extras(lab.solution)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="scaledl-gradescope-") as tmp:
        whl = Path(wheel) if wheel is not None else build_wheel(book.root, Path(tmp))
        spec = {"lab": lab.id, "title": entry.title, "file": Path(entry.file).name, "points": lab.maximum,
                "tasks": {gid: t.title for gid, t in lab.tasks.items()}, "extras": extras,
                "timeout_s": float(timeout_s), "wheel": whl.name, "book": book.title, "sandbox": sandbox,
                "labs": {e.id: {"title": e.title, "file": e.file, "solution": e.solution, "status": e.status}
                         for e in labs}}
        target = out / f"{lab.id}-gradescope.zip"
        partial = out / f".{target.name}.tmp"
        with zipfile.ZipFile(partial, "w") as z:
            fill = {"@VENV@": VENV, "@WHEEL@": whl.name, "@EXTRAS@": ",".join(extras)}
            setup_sh, run_sh = SETUP_SH, RUN_AUTOGRADER
            for key, value in fill.items():
                setup_sh, run_sh = setup_sh.replace(key, value), run_sh.replace(key, value)
            _add(z, "setup.sh", setup_sh, 0o755)
            _add(z, "run_autograder", run_sh, 0o755)
            _add(z, whl.name, whl.read_bytes())
            _add(z, LAB_FILE, json.dumps(spec, indent=1) + "\n")
            for e in labs:
                _add(z, f"{BOOK_DIR}/{e.solution}", book.path(e.solution).read_bytes())
        os.replace(partial, target)
    return target


def unpack(zip_path, root) -> Path:
    """Lay the zip out under ``root`` as Gradescope does (``source/``, and ``run_autograder`` copied beside it),
    keeping each file's mode; returns ``root``. For trying the bundle in place: ``AUTOGRADER_ROOT=root``."""
    root = Path(root)
    source = root / "source"
    source.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as z:
        for info in z.infolist():
            path = (source / info.filename).resolve()
            if source.resolve() not in path.parents:
                raise UsageError(f"zip member {info.filename!r} lies outside source/")
            if info.is_dir():
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(z.read(info))
            os.chmod(path, (info.external_attr >> 16) & 0o777 or 0o644)
    shutil.copy2(source / "run_autograder", root / "run_autograder")
    return root
