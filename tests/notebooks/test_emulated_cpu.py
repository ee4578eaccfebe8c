"""The training chapters print the same numbers on another CPU: re-executed as one, they match their outputs.

The committed outputs were made on one machine. A reader's CPU may pick another OpenBLAS GEMM kernel
(AVX-512 instead of Haswell, say), another NumPy SIMD path for exp and log, and Numba compiles for its own
instruction set; float32 training turns a last-bit difference into a different third digit within a few
hundred steps. This test makes this machine behave like a plainer x86-64 in all three respects at once:

* ``OPENBLAS_CORETYPE=Prescott``: OpenBLAS's SSE3-era kernels instead of the ones it picks for this CPU;
* ``NPY_DISABLE_CPU_FEATURES``: every NumPy dispatch target above its compiled baseline switched off;
* ``NUMBA_CPU_NAME=generic``: Numba code for a generic x86-64 instead of the host;
* ``GLIBC_TUNABLES``: glibc's libm without its AVX2/FMA/AVX-512 variants;

and runs nbval over every notebook that book.toml marks ``trains = true`` (one test each), against the stored
outputs.
All four settings are safe on any x86-64. Before ``scaledl.nn`` computed its products with fixed-order
kernels (``scaledl.nn.ops``), chapters 02, 09 and 10 failed here in 14 cells (at e011ff2), as they did on an
AVX-512 machine.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from scaledl.book import load
from scaledl.nn.ops import plain_cpu_env

ROOT = Path(__file__).resolve().parents[2]
TRAINING = [e for e in load(ROOT).entries if e.validated and e.trains]


@pytest.fixture(scope="session")
def generic_numba_cache(tmp_path_factory):
    """One Numba cache for the emulated CPU's code (NUMBA_CPU_NAME=generic), shared by the notebooks this
    process re-executes; not the host-CPU cache, so nothing compiled for the host can be reused."""
    return tmp_path_factory.mktemp("numba-generic-cpu")


# One notebook a test, each in its own pytest and kernel: under `make test` the two xdist workers share them
# (tests/conftest.py), and a failure names its notebook.
@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the emulated CPU is an x86-64 one; these settings mean nothing on this machine")
@pytest.mark.skipif(not TRAINING, reason="no notebook is marked trains = true in book.toml")
@pytest.mark.parametrize("notebook", [e.executed_file for e in TRAINING], ids=[e.id for e in TRAINING])
def test_training_notebooks_reproduce_their_outputs_on_another_cpu(notebook, generic_numba_cache):
    env = {**os.environ, **plain_cpu_env(), "SCALEDL_BACKEND": "simulator",
           "NUMBA_CACHE_DIR": str(generic_numba_cache)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "scaledl._startup", "--nbval",
           "--nbval-sanitize-with", str(ROOT / "tests/notebooks/sanitize.cfg"), "--nbval-cell-timeout", "900",
           str(ROOT / notebook)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)

    assert proc.returncode == 0, (
        f"re-executed as another CPU would, {notebook} printed other numbers than its stored outputs "
        f"(nbval):\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}")


def test_the_emulation_switches_numpy_dispatch_off(tmp_path):
    """Without this, the test above could pass by emulating nothing."""
    env = {**os.environ, **plain_cpu_env(), "SCALEDL_BACKEND": "simulator",
           "NUMBA_CACHE_DIR": str(tmp_path)}  # not the host-CPU cache
    code = ("import numpy as np\n"
            "try:\n    from numpy._core._multiarray_umath import __cpu_features__ as f, __cpu_dispatch__ as d\n"
            "except ImportError:\n    from numpy.core._multiarray_umath import __cpu_features__ as f, "
            "__cpu_dispatch__ as d\n"
            "print(sorted(k for k in d if f.get(k)))\n"
            "import numba\nprint(numba.config.CPU_NAME)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    enabled, cpu_name = out.stdout.strip().splitlines()[-2:]
    assert enabled == "[]", f"NumPy dispatch targets still enabled: {enabled}"
    assert cpu_name == "generic"
