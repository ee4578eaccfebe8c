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
