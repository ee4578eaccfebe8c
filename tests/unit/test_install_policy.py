"""docs/install-policy.md, held to the code: no upper bound on a runtime dependency (pip would downgrade a
hosted image's package), and the table of CUDA extras equal to scaledl.gpu_path.cuda_extra row by row."""

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from scaledl.gpu_path import cuda_extra

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "docs" / "install-policy.md"


def upper_bounds(requirements: list[str]) -> list[str]:
    return [r for r in requirements
            if any(s.operator in ("<", "<=", "==", "~=", "===") for s in Requirement(r).specifier)]


def test_no_runtime_dependency_has_a_ceiling():
    runtime = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert upper_bounds(runtime) == []
    assert upper_bounds(["numpy>=1.26,<2.5", "numba>=0.61"]) == ["numpy>=1.26,<2.5"]  # the check can fail


def table_rows() -> list[tuple[str, str, str]]:
    text = POLICY.read_text()
    section = text.split("## 2.", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in section.splitlines()
            if ln.startswith("|") and not ln.startswith("|---")]
    return [tuple(r) for r in rows[1:]]


# one driver version and one compute capability standing for each row's words
EXAMPLES = {("CUDA 12.x", "any"): [("12.0", (6, 0)), ("12.8", (9, 0))],
            ("CUDA 13.x", "compute capability 7.5 or newer"): [("13.0", (7, 5)), ("13.1", (12, 0))],
            ("CUDA 13.x", "older than 7.5"): [("13.0", (6, 0)), ("13.0", (7, 0))],
            ("CUDA 11.x or older", "any"): [("11.8", (8, 0)), ("10.2", (6, 1))]}


def test_the_policy_table_is_what_the_code_does():
    rows = table_rows()
    assert len(rows) == len(EXAMPLES)
    for driver, card, extra in rows:
        key = next(k for k in EXAMPLES if k[0] == driver and card.startswith(k[1]))
        want = re.match(r"`(cu\d+)`", extra)
        for version, cc in EXAMPLES[key]:
            assert cuda_extra(version, cc) == (want.group(1) if want else None), (driver, card, version, cc)


def test_cuda_extra_refuses_a_version_it_cannot_read():
    with pytest.raises(ValueError, match="driver_cuda_version"):
        cuda_extra("twelve", (7, 5))
