"""tests/compat/run.py finds the interpreter each step needs (Colab's Python 3.13; 3.11 for the floors), and
a missing one is a skip with its reason, or a failure where CI requires it (SCALEDL_REQUIRE_COMPAT_PYTHONS=1)."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("compat_run", ROOT / "tests" / "compat" / "run.py")
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)


def test_the_steps_run_on_colab_s_interpreter_and_the_oldest_the_test_tools_allow():
    assert run.INTERPRETERS["hosted"] == "3.13"
    floor = re.search(r'requires-python = ">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    # 3.10 stays allowed (Gradescope's Ubuntu 22.04 images); the floors' test tools need 3.11
    assert (floor, run.INTERPRETERS["lowest"]) == ("3.10", "3.11")


def test_found_through_the_variable_or_pyenv(tmp_path, monkeypatch):
    fake = tmp_path / "py313"
    fake.write_text("")
    monkeypatch.setenv("SCALEDL_COMPAT_PYTHON", f"3.10=/nowhere,3.13={fake}")
    assert run.find_python("3.13") == fake
    monkeypatch.delenv("SCALEDL_COMPAT_PYTHON")
    for name in ("3.13.0", "3.13.10", "3.13.2"):
        (tmp_path / "versions" / name / "bin").mkdir(parents=True)
        (tmp_path / "versions" / name / "bin" / "python3.13").write_text("")
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    assert run.find_python("3.13") == tmp_path / "versions" / "3.13.10" / "bin" / "python3.13"  # newest patch
    assert run.find_python("3.9") is None


def test_a_missing_interpreter_skips_or_fails_as_required(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.delenv("SCALEDL_COMPAT_PYTHON", raising=False)
    with pytest.raises(run.Skipped, match=r"Python 3\.13 not found \(pyenv install 3\.13"):
        run.interpreter("hosted")
    assert run.interpreter("newest") == Path(sys.executable)
    monkeypatch.delenv("SCALEDL_REQUIRE_COMPAT_PYTHONS", raising=False)
    assert run.main(["hosted"]) == 0
    assert "test-compat hosted: SKIPPED: Python 3.13 not found" in capsys.readouterr().out
    monkeypatch.setenv("SCALEDL_REQUIRE_COMPAT_PYTHONS", "1")
    assert run.main(["hosted"]) == 1
    assert "FAILED (required by SCALEDL_REQUIRE_COMPAT_PYTHONS=1)" in capsys.readouterr().out
