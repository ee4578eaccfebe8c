"""scaledl: the package behind the interactive textbook *Scaling Deep Learning*.

Chapters stay thin; what could be wrong lives here and is tested. The areas, one folder each:

=============  ==========================================================================
``device``     where kernels run: a real GPU or Numba's CUDA simulator (decided on import)
``kernels``    Numba CUDA kernels, each beside its NumPy reference (GEMM, bandwidth, conv)
``numerics``   number formats, quantizers, scaling and clipping, logarithmic arithmetic
``sparsity``   pruning and structured (2:4) sparsity
``comm``       collectives: an all-reduce simulator, cost models, MPI
``nn``         a small NumPy training substrate shared by every chapter that trains
``perf``       hardware specifications, roofline, energy and scaling models
``widgets``    ipywidgets explorers whose update logic is a plain, testable function
``book``       book.toml, notebook execution and checks
``labs``       exercise checking for the lab notebooks
=============  ==========================================================================

Importing the package takes the backend decision (see :mod:`scaledl.device`) before anything imports
``numba.cuda``.
"""

import os as _os
import sys as _sys

from scaledl import _compat  # noqa: F401  (mends for dependency releases that do not fit; see the module)
from scaledl import device as device
from scaledl.device import backend, sized

__version__ = "0.1.0"
__all__ = ["backend", "sized", "device", "__version__"]

# The `scaledl` command (also `python -m scaledl`) announces the backend only in commands that use one.
_orig = list(getattr(_sys, "orig_argv", ()))  # while `python -m scaledl` imports the package, argv[0] is "-m"
_command_line = (_os.path.basename(_sys.argv[0] if _sys.argv else "") == "scaledl"
                 or ("-m" in _orig and _orig[_orig.index("-m") + 1:_orig.index("-m") + 2] == ["scaledl"]))
try:
    device.decide(announce=not _command_line)
except (ValueError, device.BackendError) as _err:
    # From the command line a one-line error beats a traceback; in a notebook the exception is the message.
    if _command_line:
        print(f"scaledl: error: {_err}", file=_sys.stderr)
        raise SystemExit(2) from None
    raise
