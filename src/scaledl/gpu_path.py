"""The GPU path, checked before the book takes it: one kernel of one thread compiled, launched and read back.

A hosted notebook (Colab, Kaggle, a JupyterHub) can have a GPU whose driver answers while kernels still cannot
run: the image's CUDA wheels emit PTX newer than its driver loads, libNVVM or nvJitLink is missing, a CUDA 13
build meets a card older than Turing (CUDA 13 supports compute capability 7.5 and up; Kaggle's P100 is 6.0), or
numba-cuda is absent or refuses the image's NumPy. Each of these used to surface as a traceback in some later
cell. :func:`check` finds them when ``scaledl`` is imported (by the notebooks' setup cell) and returns what is
wrong and the one command that fixes it; :mod:`scaledl.device` then prints those two lines and runs the chapter
on the CPU simulator instead, so the student is never left with a notebook that does not run.

The launch runs in a child process: Numba fixes its backend at the first import of ``numba.cuda``, and a process
that tried the GPU could no longer fall back to the simulator. A check that passed is remembered (per driver,
GPU and package versions) in ``~/.cache/scaledl/gpu_path.json``, so only the first import of a session pays the
few seconds of the launch; a failed one is checked again at every import, so the fix is seen at once.
``SCALEDL_GPU_CHECK=0`` skips the check.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from scaledl import drift
from scaledl._optional import install_command

SKIP_VAR = "SCALEDL_GPU_CHECK"
TIMEOUT_s = 180
# The child: import numba.cuda with the real backend, launch one thread, read its write back.
PROBE = """
import numpy as np
from numba import cuda

@cuda.jit
def one(out):
    out[0] = 42

out = cuda.to_device(np.zeros(1, dtype=np.int32))
one[1, 1](out)
got = int(out.copy_to_host()[0])
if got != 42:
    raise SystemExit(f"the one-thread kernel wrote {got}, not 42")
print("gpu path ok")
"""
NUMPY_TOO_NEW = re.compile(r"Numba needs NumPy (\d+)\.(\d+) or less\. Got NumPy (\d+\.\d+)", re.I)
NO_NUMBA_CUDA = re.compile(r"No module named '(numba|numba\.cuda|numba_cuda)'")


@dataclass(frozen=True)
class PathCheck:
    """The verdict: ``ok``, and where it is not, ``kind`` (a stable name), ``problem`` and ``fix`` (one line each)."""

    ok: bool
    kind: str = "ok"
    problem: str = ""
    fix: str = ""


def versions() -> dict[str, str | None]:
    """The installed versions a failure depends on (None where not installed)."""
    return {"toolkit": drift.installed(drift.TOOLKIT_DISTS), "nvjitlink": drift.installed(drift.NVJITLINK_DISTS),
            "nvvm": drift.installed(drift.NVVM_DISTS), "numba": drift.installed(("numba",)),
            "numba-cuda": drift.installed(("numba-cuda",)), "numpy": drift.installed(("numpy",))}


def run_probe(timeout_s: float = TIMEOUT_s) -> tuple[bool, str]:
    """Launch :data:`PROBE` in a child Python on the real backend: ``(passed, its output)``."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"TimeoutExpired: the one-thread kernel did not finish within {timeout_s:g} s"
    return done.returncode == 0 and "gpu path ok" in done.stdout, (done.stdout + done.stderr).strip()


def cuda_extra(driver_cuda_version: str, compute_capability) -> str | None:
    """The numba-cuda extra (``"cu12"`` or ``"cu13"``) for a driver and a card, as docs/install-policy.md says:
    the driver's CUDA major, except that CUDA 13 builds for compute capability 7.5 and newer only, so an older
    card under a CUDA 13 driver takes the CUDA 12 wheels (a driver runs every older major). None: a driver older
    than CUDA 12, which no supported numba-cuda runs on.

    >>> cuda_extra("12.4", (7, 5)), cuda_extra("13.0", (9, 0)), cuda_extra("13.0", (6, 0)), cuda_extra("11.8", (7, 0))
    ('cu12', 'cu13', 'cu12', None)
    """
    try:
        parsed = drift.parse_version(driver_cuda_version)
    except ValueError:
        parsed = None
    if parsed is None:
        raise ValueError(f"driver_cuda_version: expected 'major.minor', e.g. '12.4', got {driver_cuda_version!r}")
    if parsed[0] < 12:
        return None
    if parsed[0] >= 13 and tuple(compute_capability) >= (7, 5):
        return "cu13"
    return "cu12"


def _cuda12_fix() -> str:
    return (f"pip uninstall -y cuda-toolkit numba-cuda, then {install_command('cu12')} (numba-cuda[cu12]), and "
            "restart the kernel")


def classify(output: str, gpu, have: dict[str, str | None]) -> PathCheck:
    """What a failed probe's ``output`` means, on ``gpu`` (a :class:`scaledl.device.GpuInfo`) with ``have``."""
    driver = gpu.driver_cuda_version
    found = NO_NUMBA_CUDA.search(output)
    if found:
        extra = cuda_extra(driver, gpu.compute_capability) or "cu12"
        return PathCheck(False, "no-numba-cuda", f"{found.group(1)} cannot be imported, so no kernel can be "
                                                 "compiled for the GPU",
                         f"{install_command(extra)}, and restart the kernel")
    found = NUMPY_TOO_NEW.search(output)
    if found:
        major, minor, got = found.groups()
        return PathCheck(False, "numpy-too-new", f"numba {have.get('numba')} refuses NumPy {got}: it supports "
                                                 f"NumPy {major}.{minor} at most",
                         f"pip install 'numpy<{major}.{int(minor) + 1}', and restart the kernel")
    explained = drift.explain(output, driver=driver, toolkit=have.get("toolkit"), nvjitlink=have.get("nvjitlink"),
                              nvvm=have.get("nvvm"))
    if explained is not None:
        return PathCheck(False, explained.kind, explained.cause, explained.fix)
    last = next((ln for ln in reversed(output.splitlines()) if ln.strip()), "no output")
    return PathCheck(False, "launch-failed", f"a one-thread kernel failed on {gpu.name}: {last[:300]}",
                     "run `scaledl doctor` (in a cell: !scaledl doctor) for the versions involved and the fix")


def _key(gpu, have: dict[str, str | None]) -> str:
    return json.dumps([gpu.name, gpu.driver_cuda_version, list(gpu.compute_capability), sys.version.split()[0],
                       sorted(have.items())])


def _cache_file() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "scaledl" / "gpu_path.json"


def _passed_before(key: str) -> bool:
    try:
        return key in json.loads(_cache_file().read_text()).get("passed", [])
    except (OSError, ValueError, AttributeError):
        return False


def _remember(key: str) -> None:
    try:
        path = _cache_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"passed": [key]}))
    except OSError:  # a read-only home: the check simply runs again next time
        pass


def check(gpu, probe=run_probe, have: dict[str, str | None] | None = None) -> PathCheck:
    """Whether kernels can run on ``gpu``; ``probe`` launches the test kernel (replaced by tests)."""
    have = versions() if have is None else have
    toolkit = drift.parse_version(have.get("toolkit"))
    if tuple(gpu.compute_capability) < (7, 5) and toolkit is not None and toolkit[0] >= 13:
        cc = ".".join(str(v) for v in gpu.compute_capability)
        return PathCheck(False, "cuda13-before-turing", f"this {gpu.name} is compute capability {cc}, and the "
                                                        f"installed CUDA {have['toolkit']} wheels build for 7.5 "
                                                        "and newer only", _cuda12_fix())
    if have.get("numba-cuda") is None:
        return classify("No module named 'numba.cuda'", gpu, have)
    key = _key(gpu, have)
    if _passed_before(key):
        return PathCheck(True)
    passed, output = probe()
    if passed:
        _remember(key)
        return PathCheck(True)
    return classify(output, gpu, have)


def skipped() -> bool:
    return os.environ.get(SKIP_VAR, "").strip() == "0"
