"""Moved to :mod:`scaledl.comm.interconnect` (communication models live in ``comm``; ``perf`` sits below it).

This name stays for chapter 19 copies released before the move (``from scaledl.perf import interconnect``);
pyproject.toml's import-linter contracts allow exactly this import of an upper layer.
"""

from scaledl.comm.interconnect import *  # noqa: F401,F403
from scaledl.comm.interconnect import __all__  # noqa: F401
