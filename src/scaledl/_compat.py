"""Mends for releases of the book's dependencies that do not yet fit each other, applied on import of scaledl.

NumPy 2.5 removed ``np.row_stack`` (deprecated since 2.0 as an alias of ``np.vstack``). numba-cuda up to at
least 0.30.4 registers a CUDA overload for it when its typing registries load, which happens at the first
kernel compilation on a real GPU: every ``@cuda.jit`` kernel then fails with ``AttributeError: module 'numpy'
has no attribute 'row_stack'`` (seen on an H200 image with NumPy 2.5.2). Numba's CPU side checks for the name
first; numba-cuda does not. The simulator never loads those registries, so CPU-only tests cannot see it.

:func:`restore_row_stack` puts the alias back (the same function NumPy 2.4 had under that name) where NumPy
lacks it, before numba-cuda compiles anything. ``scaledl doctor`` reports when it was needed.
"""

from __future__ import annotations

import numpy as np

ROW_STACK_RESTORED = False  # True when this process needed the alias (scaledl doctor prints it)


def restore_row_stack() -> bool:
    """Make ``np.row_stack`` name ``np.vstack`` where this NumPy removed it; return True if it had to."""
    global ROW_STACK_RESTORED
    if "row_stack" in vars(np):
        return False
    np.row_stack = np.vstack
    ROW_STACK_RESTORED = True
    return True


restore_row_stack()
