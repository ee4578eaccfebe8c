"""Moved to :mod:`scaledl.kernels.kernel_model` (a model of the kernels' own static facts belongs with them;
``perf`` sits below ``kernels``).

This name stays for lab 02 and chapter copies released before the move (``from scaledl.perf import
kernel_model``); pyproject.toml's import-linter contracts allow exactly this import of an upper layer.
"""

from scaledl.kernels.kernel_model import *  # noqa: F401,F403
from scaledl.kernels.kernel_model import __all__  # noqa: F401
