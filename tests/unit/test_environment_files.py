"""pyproject.toml and environment.yml must name the same packages, so pip and conda users get one book."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# conda-forge spells a few packages differently from PyPI; none do today, but say so here if one does.
CONDA_NAMES: dict[str, str] = {}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _expand(requirements: list[str], extras: dict[str, list[str]]) -> list[str]:
    """Requirements with the package's own extras (``scaledl[book]``) replaced by what they list."""
    out = []
    for r in requirements:
        own = re.fullmatch(r"\s*scaledl\[([\w,\s-]+)\]\s*", r)
        if own:
            for extra in own.group(1).split(","):
                out += _expand(extras[extra.strip()], extras)
        else:
            out.append(r)
    return out


def test_pyproject_and_environment_yml_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pip_names = {_name(r) for r in _expand(project["dependencies"] + extras["dev"], extras)}
    text = (ROOT / "environment.yml").read_text().split("\ndependencies:", 1)[1]
    conda_lines = [ln.strip()[2:] for ln in text.splitlines()
                   if ln.strip().startswith("- ") and not ln.strip().startswith("- -e")]
    conda_names = {_name(x) for x in conda_lines} - {"python", "pip", "pip:"}
    conda_names = {CONDA_NAMES.get(n, n) for n in conda_names}
    assert pip_names - conda_names == set(), "in pyproject.toml only"
    assert conda_names - pip_names == set(), "in environment.yml only"


def test_environment_yml_installs_the_package():
    assert "- -e ." in (ROOT / "environment.yml").read_text()


def test_gpu_extras_exist_for_cuda_12_and_13():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any("numba-cuda[cu12]" in r for r in extras["cu12"])
    assert any("numba-cuda[cu13]" in r for r in extras["cu13"])
