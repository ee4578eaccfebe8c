"""The runnable examples in every scaledl docstring are tests, so the documented API cannot rot.

Modules are found by walking the package, so a new module's examples run without being listed here. The
nn modules, whose docstrings are the substrate's reference documentation, must also *have* examples."""

import doctest
import importlib
import pkgutil

import pytest

import scaledl

MODULES = sorted(m.name for m in pkgutil.walk_packages(scaledl.__path__, "scaledl.")
                 if not m.name.endswith("__main__"))
MUST_HAVE_EXAMPLES = {"scaledl.nn", "scaledl.nn.layers", "scaledl.nn.loss", "scaledl.nn.model", "scaledl.nn.optim",
                      "scaledl.nn.data", "scaledl.nn.parallel", "scaledl.nn.precision", "scaledl.nn.train",
                      "scaledl.nn.gradcheck", "scaledl.nn.scaling"}


def test_the_walk_finds_the_package():
    assert MUST_HAVE_EXAMPLES <= set(MODULES) and "scaledl.kernels.gemm" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0
