"""The runnable examples in scaledl.nn's docstrings are tests, so the documented API cannot rot."""

import doctest
import importlib

import pytest

MODULES = ["scaledl.nn", "scaledl.nn.layers", "scaledl.nn.loss", "scaledl.nn.model", "scaledl.nn.optim",
           "scaledl.nn.data", "scaledl.nn.parallel", "scaledl.nn.precision", "scaledl.nn.train",
           "scaledl.nn.gradcheck"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0
