"""scaledl.course.guard: a task that calls the library's answer is caught however it is spelled."""

import functools
import math

import numpy as np
import pytest

import scaledl.numerics
from scaledl.course.guard import check_own_work, references
from scaledl.numerics import get_format, quantize

E4M3 = get_format("e4m3")
q_alias = quantize


def honest(x):
    a = np.abs(np.asarray(x, np.float64))
    return np.minimum(np.rint(a * 8) / 8, E4M3.max_value)  # library constants are fair to use


def direct(x):
    return quantize(x, "e4m3")


def aliased(x):
    return q_alias(x, "e4m3")


def dotted(x):
    return scaledl.numerics.quantize(x, "e4m3")


def _helper(x):
    return quantize(x, "e4m3")


def hidden_one_level_down(x):
    return _helper(x) + 0


@functools.lru_cache(maxsize=None)
def cached_factory(n):
    return direct


@pytest.mark.parametrize("func", [direct, aliased, dotted, hidden_one_level_down, cached_factory])
def test_library_answer_is_caught(func):
    with pytest.raises(AssertionError, match=r"Task 1\.1: .* calls .*quantize.*write it yourself"):
        check_own_work(func, [quantize], task="Task 1.1")


def test_honest_work_passes_even_with_module_ban_and_constants():
    check_own_work(honest, [quantize], modules=("scaledl.numerics",), task="Task 1.1")


def test_module_prefix_bans_every_function_of_a_module():
    with pytest.raises(AssertionError, match="Task 9: direct calls quantize"):
        check_own_work(direct, [], modules=("scaledl.numerics",), task="Task 9")
    check_own_work(direct, [], modules=("scaledl.numeric",), task="Task 9")  # a prefix of a name is not a match


def test_closure_variables_are_resolved():
    def factory(f):
        def task(x):
            return f(x)
        return task

    with pytest.raises(AssertionError):
        check_own_work(factory(math.sqrt), [math.sqrt])
    check_own_work(factory(abs), [math.sqrt])


def test_references_lists_what_the_source_names():
    names = {name for name, _ in references(dotted)}
    assert "scaledl.numerics.quantize" in names


def test_bad_input():
    with pytest.raises(TypeError, match="expected a Python function"):
        check_own_work(len, [quantize])
    namespace = {}
    exec("def f(x):\n    return x\n", namespace)
    with pytest.raises(TypeError, match="source cannot be read"):
        references(namespace["f"])
