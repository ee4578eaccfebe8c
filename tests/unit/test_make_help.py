"""`make help` lists every target of the Makefile, once each, and every target is phony (none names a file).

Read from the Makefile's text, so no make is needed: the targets are its rules named by a plain word (not the
.venv stamps, which are variables), the help is the `make NAME ...` lines its help recipe echoes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULE = re.compile(r"^([A-Za-z][\w-]*)\s*:(?![:=])", re.M)   # `lab: lab-config`, not `PY := ...`
HELP_LINE = re.compile(r'^\t@echo "make ([\w-]+)', re.M)


def targets(text: str) -> list[str]:
    return RULE.findall(text)


def help_targets(text: str) -> list[str]:
    m = re.search(r"^help:.*\n((?:\t.*\n)+)", text, re.M)
    assert m, "the Makefile has no help target"
    return HELP_LINE.findall(m.group(1))


def phony(text: str) -> set[str]:
    return {name for line in re.findall(r"^\.PHONY:(.*)$", text, re.M) for name in line.split()}


def test_the_parsers_read_a_small_makefile():
    text = ('PY := .venv/bin/python\n.PHONY: help a\nhelp:\n\t@echo "make help  this"\n\t@echo "make a   A"\n'
            '$(STAMP): pyproject.toml\n\ttouch x\na: $(STAMP)\n\techo a\nb-c:\n\techo b\n')
    assert targets(text) == ["help", "a", "b-c"]
    assert help_targets(text) == ["help", "a"]
    assert phony(text) == {"help", "a"}


def test_make_help_lists_every_target_once():
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    rules, listed = targets(text), help_targets(text)
    assert len(rules) >= 18 and "lab" in rules and "clean-venv" in rules
    assert sorted(set(listed)) == sorted(listed), f"listed twice: {sorted({t for t in listed if listed.count(t) > 1})}"
    assert set(rules) - set(listed) == set(), f"make help does not list {sorted(set(rules) - set(listed))}"
    assert set(listed) - set(rules) == set(), f"make help lists missing targets: {sorted(set(listed) - set(rules))}"
    assert set(rules) - phony(text) == set(), f"not .PHONY: {sorted(set(rules) - phony(text))}"


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_help_prints_the_list_without_building_anything():
    out = subprocess.run(["make", "-s", "-n", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.count("echo ") == len(help_targets((ROOT / "Makefile").read_text(encoding="utf-8")))
    assert "pip install" not in out  # help depends on nothing: no virtual environment is made for it
