"""`make test-compat`: the book on the oldest dependencies it allows, and on a hosted image's own packages.

Two fresh virtual environments under ``.venv-compat/`` (kept between runs; pip's cache makes a rerun quick):

``lowest``
    every runtime dependency at its floor (``compat/lowest.txt``, equal to pyproject.toml's floors; a unit test
    keeps them equal), then the unit tier, the simulator's contract, every kernel once (:data:`LOWEST_SIM`) and
    three notebooks under nbval.
``hosted``
    on Python 3.13, the image's own interpreter (:data:`INTERPRETERS`; ``lowest`` runs on 3.11), the packages
    Google Colab's GPU image preinstalls (``compat/colab-gpu-*.txt``, dated), then the book's wheel installed as
    a notebook's setup cell does (``pip install <the package>``, no constraints). The install must add packages
    only: an image package it upgrades or downgrades fails the run, naming it. Then chapters 00 and 04 and lab 02
    run on the simulator under nbval with the image's IPython, ipykernel and ipywidgets, and the
    dependency-drift probes run on the image's ml_dtypes, NumPy and numba-cuda.
``newest``
    the newest release of every dependency pinned by a floor only (ml_dtypes, NumPy, Numba, numba-cuda), taken
    on purpose (``pip install --upgrade``), whatever an older ``.venv`` holds: the dependency-drift probes
    (tests/unit/test_dependency_drift.py, tests/sim/test_simulator_drift.py), the number-format and quantize
    tests, and chapter 07 under nbval. A release that changes what the book prints fails here by name.

Usage: ``python tests/compat/run.py [lowest|hosted|newest|all]``; ``colab-pins FREEZE`` regenerates the pin file from a
``pip-freeze.gpu.txt`` of googlecolab/backend-info.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / ".venv-compat"
LOWEST = ROOT / "compat" / "lowest.txt"
NOTEBOOKS = ["chapters/00_getting_started.ipynb", "chapters/04_writing_gemm_kernels.ipynb",
             "labs/solutions/lab02_tiled_gemm.ipynb"]
NBVAL = ["--nbval", "--nbval-sanitize-with", "tests/notebooks/sanitize.cfg", "--nbval-cell-timeout", "900"]
# Test tools, newest: they are not the book's runtime. ipykernel/nbclient/nbformat come at the lab extra's floors.
TEST_TOOLS = ["pytest>=8", "pytest-xdist>=3.5", "nbval>=0.11", "hypothesis>=6.100", "import-linter>=2.17", "ruff>=0.6",
              "ipykernel==6.29.0", "nbclient==0.10.0", "nbformat==5.10.0"]
PIP = ["-m", "pip", "--disable-pip-version-check", "--quiet"]
# pip's byte-compilation of every installed module is over half of an install's time; `hosted` and `newest` run
# one pytest each, which compiles (and keeps) only what it imports. The book's own wheel is installed as a setup
# cell does, compiled.
NO_COMPILE = ["--no-compile"]
# The runtime dependencies pyproject.toml pins by floor only whose releases change what the book prints.
FLOATING = ["ml_dtypes", "numpy", "numba", "numba-cuda"]
DRIFT_TESTS = ["tests/unit/test_dependency_drift.py", "tests/sim/test_simulator_drift.py"]
# The explorers' controls built, shown and changed (re-rendered in place) on the venv's own ipywidgets: 7.7.1 in
# Colab's image, 7.7.0 at the floor, the newest 8.1.x in `newest` (Kaggle's image and JupyterLab have 8.1).
WIDGET_TESTS = ["tests/unit/test_widgets.py"]


def colab_file() -> Path:
    found = sorted((ROOT / "compat").glob("colab-gpu-*.txt"))
    if not found:
        raise SystemExit("compat/: no colab-gpu-YYYY-MM-DD.txt pin file")
    return found[-1]


def pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements file, by normalised name."""
    return parse_pins(path.read_text())


def parse_pins(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line or " @ " in line:  # name==version, or name @ url (a wheel installed from a file)
            name, version = line.split("==", 1) if "==" in line else line.split(" @ ", 1)
            out[re.sub(r"[-_.]+", "-", name.strip()).lower()] = version.strip()
    return out


def run(cmd: list, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=kw.pop("cwd", ROOT), **kw)


# The interpreter each step runs on: the hosted image's own (Colab's GPU image runs Python 3.13), and 3.11 for
# the floors. pyproject's requires-python still allows 3.10, for the grader's runtime on Gradescope's Ubuntu
# 22.04 images (python3 is 3.10 there), but the floors' test tools (import-linter 2.17) need 3.11. Found
# through SCALEDL_COMPAT_PYTHON ("3.13=/path/to/python3.13,3.11=/path/to/python3.11") or pyenv's versions;
# where one is missing the step is skipped with the reason, and fails instead under
# SCALEDL_REQUIRE_COMPAT_PYTHONS=1 (CI).
INTERPRETERS = {"lowest": "3.11", "hosted": "3.13"}


class Skipped(Exception):
    """A step that cannot run on this machine (its interpreter is missing)."""


def find_python(version: str) -> Path | None:
    """An interpreter ``python<version>``: from SCALEDL_COMPAT_PYTHON, else pyenv's newest ``<version>.*``."""
    for item in filter(None, os.environ.get("SCALEDL_COMPAT_PYTHON", "").split(",")):
        want, _, path = item.partition("=")
        if want.strip() == version and path.strip():
            return Path(path.strip())
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted((p for p in root.glob(f"{version}.*") if (p / "bin" / f"python{version}").is_file()),
                   key=lambda p: [int(x) if x.isdigit() else -1 for x in p.name.split(".")])
    return found[-1] / "bin" / f"python{version}" if found else None


def interpreter(step: str) -> Path:
    version = INTERPRETERS.get(step)
    if version is None:
        return Path(sys.executable)
    py = find_python(version)
    if py is None or not py.is_file():
        raise Skipped(f"Python {version} not found (pyenv install {version}, or SCALEDL_COMPAT_PYTHON="
                      f"'{version}=/path/to/python{version}')")
    return py


def venv(name: str) -> Path:
    """A fresh virtual environment ``.venv-compat/<name>`` on the step's interpreter; returns its python."""
    base = interpreter(name)
    path = VENVS / name
    if path.exists():
        subprocess.run(["rm", "-rf", str(path)], check=True)
    run([base, "-m", "venv", path])
    py = path / "bin" / "python"
    run([py, "-c", "import sys, platform; print('interpreter:', platform.python_version(), sys.executable)"])
    return py


def freeze(py: Path) -> dict[str, str]:
    return parse_pins(subprocess.run([str(py), "-m", "pip", "freeze", "--disable-pip-version-check"], check=True,
                                     capture_output=True, text=True).stdout)


def pytest_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return env | {"SCALEDL_BACKEND": "simulator"}


def widgets_version(py: Path) -> None:
    print(f"explorers tested on ipywidgets {freeze(py).get('ipywidgets')}", flush=True)


def check_versions(py: Path, wanted: dict[str, str]) -> None:
    got = freeze(py)
    wrong = {n: (v, got.get(n)) for n, v in wanted.items() if got.get(n) != v}
    if wrong:
        raise SystemExit("installed versions differ from the pins: " +
                         ", ".join(f"{n} {g} (wanted {v})" for n, (v, g) in wrong.items()))


# What the floors are run against: the unit tier, which reaches every module, the simulator's contract and drift
# probes, every kernel against NumPy once, the quantizers (ml_dtypes) and the race checker (built on the
# simulator's own arrays), and three notebooks. The other simulator tests exercise the same kernels through the
# book's tooling (validate, benches, lab checks, hints; the static report, whose tools the floors leave out) and
# run in `make test`; so do the unit tests of the repository's own tooling (make, ruff, import-linter, the
# grader's Numba cache). Keeping them here doubled `make test`'s unit and simulator tiers in CI's 90 minutes.
LOWEST_SIM = ["tests/sim/test_simulator_contract.py", "tests/sim/test_simulator_drift.py", "tests/sim/test_simfix.py",
              "tests/sim/test_every_kernel_sim.py", "tests/sim/test_quantize_kernel.py",
              "tests/sim/test_quantize_bits_kernel.py", "tests/sim/test_sanitizer.py"]
LOWEST_SKIP_UNIT = ["tests/unit/test_architecture.py", "tests/unit/test_grader_numba_cache.py",
                    "tests/unit/test_make_installs.py", "tests/unit/test_make_lab.py", "tests/unit/test_make_help.py"]


def lowest() -> None:
    py = venv("lowest")
    # compiled: the floors' tests start many Pythons on two workers, which would each compile what they import
    # (measured: 446 s of tests without, against 340 s with, for 44 s saved in the install)
    run([py, *PIP, "install", "-c", LOWEST, "-e", ".[book]", *TEST_TOOLS])  # [book]: the site tests
    check_versions(py, pins(LOWEST))
    run([py, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--dist", "loadfile", "tests/unit",
         *(f"--ignore={t}" for t in LOWEST_SKIP_UNIT), *LOWEST_SIM, *NOTEBOOKS, *NBVAL], env=pytest_env())


def hosted() -> None:
    image = pins(colab_file())
    py = venv("hosted")
    run([py, *PIP, "install", *NO_COMPILE, "-c", colab_file(), *image])
    before = freeze(py)
    with tempfile.TemporaryDirectory() as wheels:
        built = os.environ.get("SCALEDL_COMPAT_WHEEL")  # `all` builds it before the steps run side by side
        if not built:
            run([py, *PIP, "wheel", "--no-deps", "-w", wheels, "."])
        # what the setup cell does: `%pip install "scaledl @ git+<repository>"`, here from the built wheel
        run([py, *PIP, "install", built or next(Path(wheels).glob("scaledl-*.whl"))])
    after = freeze(py)
    changed = {n: (v, after.get(n)) for n, v in before.items() if after.get(n) != v}
    if changed:
        raise SystemExit("installing the book changed the image's packages: " +
                         ", ".join(f"{n} {v} -> {a or 'removed'}" for n, (v, a) in changed.items()) +
                         "; widen pyproject.toml's range where the image's version works, or say in the setup "
                         "cell what to do")
    print(f"the book's install added {sorted(set(after) - set(before))} and changed none of the image's "
          f"{len(before)} packages", flush=True)
    run([py, *PIP, "install", *NO_COMPILE, "pytest>=8", "nbval>=0.11"])
    # the notebooks import the installed wheel, not src/: run from a copy of the tree without src/
    with tempfile.TemporaryDirectory() as tree:
        for rel in [*NOTEBOOKS, "tests/notebooks/sanitize.cfg", *DRIFT_TESTS, "tests/drift.py", *WIDGET_TESTS]:
            dest = Path(tree) / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes((ROOT / rel).read_bytes())
        run([py, "-c", "import scaledl, sys; assert 'site-packages' in scaledl.__file__, scaledl.__file__"],
            cwd=tree)
        run([py, "-m", "pytest", "-p", "no:cacheprovider", "-q", *NOTEBOOKS, *NBVAL], env=pytest_env(), cwd=tree)
        run([py, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-o", "addopts=", *DRIFT_TESTS, *WIDGET_TESTS],
            env=pytest_env(), cwd=tree)
        widgets_version(py)


def newest() -> None:
    py = venv("newest")
    run([py, *PIP, "install", *NO_COMPILE, "--upgrade", "-e", ".[lab]", *FLOATING, "pytest>=8", "nbval>=0.11",
         "hypothesis>=6.100"])
    got = freeze(py)
    print("newest releases: " + ", ".join(f"{n} {got.get(re.sub(r'[-_.]+', '-', n).lower())}" for n in FLOATING),
          flush=True)
    widgets_version(py)
    run([py, "-m", "pytest", "-p", "no:cacheprovider", "-q", *DRIFT_TESTS, *WIDGET_TESTS,
         "tests/unit/test_numerics_quantize.py",
         "tests/unit/test_numerics_formats.py", "tests/sim/test_quantize_kernel.py",
         "chapters/07_number_systems.ipynb", *NBVAL], env=pytest_env())


def colab_pins(freeze_file: str) -> None:
    """Print the pin file's body: the freeze restricted to what `hosted` installs (run after a `hosted` run)."""
    full = pins(Path(freeze_file))
    have = freeze(VENVS / "hosted" / "bin" / "python")
    for name in sorted(have):
        if name in full and name != "scaledl":
            print(f"{name}=={full[name]}")


def side_by_side(steps: list[str]) -> int:
    """Run each step in its own process at once (their installs and pytest runs use one core each), each into
    its own log under .venv-compat/, printed whole when all have ended: the status is the worst."""
    VENVS.mkdir(exist_ok=True)
    logs = {step: VENVS / f"{step}.log" for step in steps}
    procs = {step: subprocess.Popen([sys.executable, __file__, step], cwd=ROOT, stdout=logs[step].open("w"),
                                    stderr=subprocess.STDOUT) for step in steps}
    status = {step: proc.wait() for step, proc in procs.items()}
    for step in steps:
        print(f"---- test-compat {step} (its log, {logs[step].relative_to(ROOT)}) ----", flush=True)
        print(logs[step].read_text(), end="", flush=True)
    return max(status.values())


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "all"
    if what == "colab-pins":
        colab_pins(argv[1])
        return 0
    if what not in ("lowest", "hosted", "newest", "all"):
        raise SystemExit(f"what: expected lowest, hosted, newest, all or colab-pins, got {what!r}")
    if what == "all":  # the floors on both cores; then the two single-threaded steps side by side
        status = main(["lowest"])
        dist = VENVS / "dist"  # the book's wheel, built once here: two in-tree builds at once would collide
        subprocess.run(["rm", "-rf", str(dist)], check=True)
        builder = next(p for p in (VENVS / "lowest" / "bin" / "python", ROOT / ".venv" / "bin" / "python",
                                   Path(sys.executable)) if p.is_file())  # a python with pip (Debian's may lack it)
        run([builder, *PIP, "wheel", "--no-deps", "-w", dist, "."])
        os.environ["SCALEDL_COMPAT_WHEEL"] = str(next(dist.glob("scaledl-*.whl")))
        return max(status, side_by_side(["hosted", "newest"]))
    failed = []
    for step in [what]:
        start = time.monotonic()
        try:
            globals()[step]()
            verdict = "passed"
        except Skipped as why:
            verdict = f"SKIPPED: {why}"
            if os.environ.get("SCALEDL_REQUIRE_COMPAT_PYTHONS") == "1":
                verdict, failed = f"FAILED (required by SCALEDL_REQUIRE_COMPAT_PYTHONS=1): {why}", failed + [step]
        except (subprocess.CalledProcessError, SystemExit) as err:  # report it, and still run the other step
            verdict, failed = f"FAILED ({err})", failed + [step]
        print(f"test-compat {step}: {verdict} in {time.monotonic() - start:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
