"""The package's argument checks, one of each (and :class:`UsageError`, the command line's one-line error): a count (a
whole number at least ``low``), a positive number, a non-negative number. A value of the wrong type is a
``TypeError``, one out of range a ``ValueError``; both name the argument, the value and what was expected. ``bool``
is refused where a number is expected (``True`` is an int to Python, never a count to a reader), and NumPy's scalars
are accepted like Python's.

>>> count("p", 8), positive("bandwidth_Bps", 25e9), nonnegative("latency_s", 0)
(8, 25000000000.0, 0.0)
>>> count("p", 0)
Traceback (most recent call last):
    ...
ValueError: p must be an int >= 1, got 0
>>> positive("nbytes", "1e6")
Traceback (most recent call last):
    ...
TypeError: nbytes must be a number, got '1e6' (str)
"""

from __future__ import annotations

import math
import numbers

__all__ = ["count", "positive", "nonnegative", "one_of", "UsageError", "count_arg"]


class UsageError(ValueError):
    """Bad input from the person running a command (a lab id, a folder, a host list, an option): the message
    says what to change, and ``scaledl`` prints it as one line. The tools layer (``book``, ``course``,
    ``validate``, the command-line parsers) raises it for its users' mistakes; any other exception, a
    ``ValueError`` from a model included, is a bug and keeps its traceback."""


def count(name: str, value, low: int = 1) -> int:
    """``value`` as an int, checked to be a whole number (not a bool, not a float) of at least ``low``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def one_of(name: str, value, choices: tuple) -> object:
    """``value``, checked to be one of ``choices`` (a ValueError naming the argument, the value and the choices).

    >>> one_of("algorithm", "tree", ("ring", "tree"))
    'tree'
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def _number(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")


def positive(name: str, value, *, allow_inf: bool = False, what: str | None = None) -> float:
    """``value`` as a float, checked to be a number > 0 and finite (``math.inf`` too with ``allow_inf``);
    ``what`` replaces "a positive finite number" in the message (say the unit)."""
    _number(name, value)
    if not (value > 0 and (allow_inf or math.isfinite(value))):
        what = what or ("a positive number (math.inf allowed)" if allow_inf else "a positive finite number")
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return float(value)


def nonnegative(name: str, value) -> float:
    """``value`` as a float, checked to be a finite number >= 0."""
    _number(name, value)
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def count_arg(text: str) -> int:
    """``type=`` for an argparse option that is a count (a whole number >= 1): argparse then names the option and
    the value in its own one-line error (``argument --repeats: expected a whole number >= 1, got '0'``)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value

