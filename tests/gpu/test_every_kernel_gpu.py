"""Every kernel of the book in the GPU's launch shapes, at full odd sizes, against NumPy (tests/kernel_cases.py).

Skipped without a GPU (tests/gpu/conftest.py); ``scaledl validate`` runs it on one. The same bodies run at tiny
sizes on the simulator in tests/sim/test_every_kernel_sim.py, so each check here is known to work before a
GPU runs it; on a GPU the shuffle reduction and the shuffle SpMV use the hardware's ``shfl_down_sync``.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared kernel_cases module
import kernel_cases  # noqa: E402

pytestmark = pytest.mark.gpu

GPU_CASES = [name for name, case in kernel_cases.CASES.items() if case.gpu is not None]


@pytest.mark.parametrize("name", GPU_CASES)
def test_kernel_at_full_odd_size(name):
    kernel_cases.CASES[name].run("gpu")

