"""The grader's own process keeps its Numba cache out of the installed package (issue 41): the judges of labs
04 and 06 train with scaledl.nn, whose kernels are cached, and the first submission used to write compiled files
into the grader's virtual environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, scaledl.nn.ops as ops
before = ops._matmul_into._cache._cache_path
from scaledl.course.grade import grader_numba_cache
where = grader_numba_cache()
ops.precompile()
print(json.dumps({"before": before, "after": ops._matmul_into._cache._cache_path, "where": str(where)}))
"""


def _probe(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env |= {"HOME": str(tmp_path), "SCALEDL_BACKEND": "simulator", **extra}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_graders_numba_cache_is_the_users_not_the_packages(tmp_path):
    got = _probe(tmp_path)
    cache = tmp_path / ".cache" / "scaledl" / "numba"
    assert got["where"] == str(cache)
    assert "__pycache__" in got["before"]                       # what numba chose at import: the package
    assert got["after"].startswith(str(cache)), got             # chosen again, for a module imported before
    assert any(cache.rglob("*.nbi")) and any(cache.rglob("*.nbc")), "precompile() wrote nothing there"


def test_an_instructors_own_numba_cache_dir_is_kept(tmp_path):
    mine = tmp_path / "mine"
    got = _probe(tmp_path, NUMBA_CACHE_DIR=str(mine))
    assert got["where"] == str(mine) and got["before"].startswith(str(mine)) and got["after"] == got["before"]
