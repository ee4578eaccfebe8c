"""The pin files `make test-compat` installs stay in step with pyproject.toml (tests/compat/run.py)."""

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _pins(path):
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not name==version"
            out[re.sub(r"[-_.]+", "-", name).lower()] = Version(version)
    return out


def _runtime():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.sub(r"[-_.]+", "-", r.name).lower(): r for r in map(Requirement, deps)}


def test_lowest_pins_every_runtime_dependency_at_its_floor():
    lowest, runtime = _pins(ROOT / "compat" / "lowest.txt"), _runtime()
    assert set(lowest) == set(runtime), "compat/lowest.txt and pyproject.toml name different packages"
    for name, req in runtime.items():
        floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
        assert len(floors) == 1, f"{name}: declare exactly one floor (>=), got {req.specifier}"
        assert lowest[name] == floors[0], f"{name}: pyproject floor {floors[0]} but compat/lowest.txt tests " \
                                          f"{lowest[name]}; raise both together"


def test_the_hosted_image_pins_are_dated_and_satisfy_the_runtime_ranges():
    [path] = sorted((ROOT / "compat").glob("colab-gpu-*.txt"))[-1:]
    assert re.fullmatch(r"colab-gpu-\d{4}-\d{2}-\d{2}\.txt", path.name)
    image = _pins(path)
    for name, req in _runtime().items():
        assert name in image, f"{path.name} lacks {name}: the image's version of it is what the test is about"
        assert image[name] in req.specifier, f"the image has {name} {image[name]}, outside the book's range " \
                                             f"{req.specifier}: the setup cell would change it"
