"""scaledl._args: the package's one set of argument checks. A wrong type is a TypeError, a value out of range a
ValueError, both naming the argument and the value; bool is never a number; NumPy scalars are."""

import argparse
import math

import numpy as np
import pytest

from scaledl._args import UsageError, count, count_arg, nonnegative, positive


def test_counts():
    assert count("p", 8) == 8 and count("p", np.int64(3)) == 3 and count("n", 0, 0) == 0
    assert type(count("p", np.int32(2))) is int
    for bad in (2.0, "8", True, None):
        with pytest.raises(TypeError, match=rf"^p must be an int, got {bad!r:.4}"):
            count("p", bad)
    with pytest.raises(ValueError, match=r"^p must be an int >= 2, got 1$"):
        count("p", 1, 2)


def test_positive_and_nonnegative_numbers():
    assert positive("x", 3) == 3.0 and positive("x", np.float32(0.5)) == 0.5
    assert positive("x", math.inf, allow_inf=True) == math.inf and nonnegative("t", 0) == 0.0
    for bad in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError, match=r"^x must be a positive finite number, got"):
            positive("x", bad)
    with pytest.raises(ValueError, match=r"^flops must be a positive count of operations, got 0$"):
        positive("flops", 0, what="a positive count of operations")
    with pytest.raises(TypeError, match=r"^x must be a number, got True \(bool\)$"):
        positive("x", True)
    for bad in (-1e-9, math.inf, math.nan):
        with pytest.raises(ValueError, match=r"^t must be a finite number >= 0, got"):
            nonnegative("t", bad)


def test_a_usage_error_is_a_value_error():
    assert issubclass(UsageError, ValueError)  # callers that catch ValueError keep working


def test_count_arg_is_an_argparse_type():
    parser = argparse.ArgumentParser(prog="p", exit_on_error=False)
    parser.add_argument("--repeats", type=count_arg)
    assert parser.parse_args(["--repeats", "3"]).repeats == 3
    for bad in ("0", "-2", "2.5", "x"):
        with pytest.raises(argparse.ArgumentError, match=rf"expected a whole number >= 1, got '{bad}'"):
            parser.parse_args(["--repeats", bad])
