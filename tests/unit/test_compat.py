"""scaledl._compat: the np.row_stack alias numba-cuda's GPU compiler needs under NumPy >= 2.5."""

import importlib

import numpy as np
import pytest

import scaledl._compat as compat


@pytest.fixture
def numpy_without_row_stack(monkeypatch):
    """NumPy as 2.5 ships it: no row_stack (monkeypatch puts the original back afterwards)."""
    monkeypatch.delattr(np, "row_stack", raising=False)
    monkeypatch.setattr(compat, "ROW_STACK_RESTORED", False)
    return np


def test_restores_the_alias_where_numpy_removed_it(numpy_without_row_stack):
    assert not hasattr(np, "row_stack")
    assert compat.restore_row_stack() is True
    assert np.row_stack is np.vstack and compat.ROW_STACK_RESTORED
    assert np.row_stack(([1, 2], [3, 4])).tolist() == [[1, 2], [3, 4]]
    assert compat.restore_row_stack() is False  # once is enough


def test_leaves_a_numpy_that_has_it_alone(monkeypatch):
    sentinel = object()
    monkeypatch.setattr(np, "row_stack", sentinel, raising=False)
    monkeypatch.setattr(compat, "ROW_STACK_RESTORED", False)
    assert compat.restore_row_stack() is False
    assert np.row_stack is sentinel and not compat.ROW_STACK_RESTORED


def test_importing_scaledl_applies_it(numpy_without_row_stack):
    importlib.reload(compat)
    assert np.row_stack is np.vstack and compat.ROW_STACK_RESTORED


def test_numba_cuda_still_overloads_row_stack_so_the_mend_is_still_needed():
    """When numba-cuda stops referring to np.row_stack, this fails: then _compat can go."""
    import numba_cuda.numba.cuda.np.arrayobj as arrayobj  # noqa: F401  (imported to find its file)
    from pathlib import Path

    text = Path(arrayobj.__file__).read_text(encoding="utf-8")
    assert "overload(np.row_stack)" in text


def test_doctor_says_when_it_mended(numpy_without_row_stack, capsys):
    import io

    from scaledl import cli

    compat.restore_row_stack()
    out = io.StringIO()
    cli.doctor(out=out)
    assert "mended       numpy" in out.getvalue() and "np.vstack" in out.getvalue()


def test_doctor_survives_a_checkout_on_pythonpath():
    """No installed metadata (PYTHONPATH=src on a lent GPU machine): nothing to compare, no crash."""
    from scaledl import drift

    assert drift.out_of_range("no-such-distribution-scaledl") == []
