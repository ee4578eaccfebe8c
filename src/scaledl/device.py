"""Choose, once per process, where the book's Numba CUDA kernels run.

Two backends exist:

* ``"cuda"``: a real NVIDIA GPU through its driver. Kernels are compiled to PTX and timings mean something.
* ``"simulator"``: Numba's CUDA simulator, which runs every CUDA thread as a Python thread on the CPU.
  Results are exact, speed is not (a 32x32 tiled matmul takes about a second), so chapters pick tiny sizes.

Numba reads ``NUMBA_ENABLE_CUDASIM`` when ``numba.cuda`` is first imported, so the decision has to be taken
before that import. :func:`decide` does it when ``scaledl`` is imported: ``SCALEDL_BACKEND=cuda|simulator``
wins; otherwise the CUDA driver is probed with :mod:`ctypes` (no Numba involved) and the simulator is used
when no usable GPU answers. Where one answers, :mod:`scaledl.gpu_path` launches a one-thread kernel on it
first, and falls back to the simulator when that fails. One line on standard error says which backend and why
(two where the GPU path failed: what is wrong, and the command that fixes it).

>>> from scaledl import device
>>> device.backend() in ("cuda", "simulator")
True
>>> n = device.sized(sim=32, gpu=4096)  # a tiny problem on the simulator, a real one on a GPU
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass

BACKENDS = ("cuda", "simulator")
SIMULATOR_SWITCH_INTERVAL_s = 0.0005  # sys.setswitchinterval on the simulator (see decide)
ENV_VAR = "SCALEDL_BACKEND"
QUIET_VAR = "SCALEDL_QUIET"

_DRIVER_LIBS = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


@dataclass(frozen=True)
class GpuInfo:
    """What the CUDA driver says about device 0."""

    name: str
    count: int
    driver_cuda_version: str  # e.g. "12.8": the newest CUDA the installed driver supports
    compute_capability: tuple[int, int]
    memory_GiB: float


@dataclass(frozen=True)
class Decision:
    backend: str  # "cuda" or "simulator"
    reason: str
    gpu: GpuInfo | None
    fix: str | None = None  # where a GPU is present but its path fails (scaledl.gpu_path): the one command


class BackendError(RuntimeError):
    """The backend asked for cannot be honoured in this process."""


def probe_gpu() -> tuple[GpuInfo | None, str]:
    """Ask the CUDA driver (through ctypes, not Numba) whether a usable GPU is present.

    Returns ``(info, reason)``; ``info`` is None when no GPU can be used, and ``reason`` says why.
    """
    lib = None
    for name in _DRIVER_LIBS:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return None, "no CUDA driver library (libcuda) could be loaded"
    rc = lib.cuInit(0)
    if rc != 0:
        return None, f"the CUDA driver is installed but cuInit failed with error {rc} (no usable GPU)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return None, "the CUDA driver reports no GPU"
    dev = ctypes.c_int(0)
    lib.cuDeviceGet(ctypes.byref(dev), 0)
    buf = ctypes.create_string_buffer(256)
    lib.cuDeviceGetName(buf, 256, dev)
    version = ctypes.c_int(0)
    lib.cuDriverGetVersion(ctypes.byref(version))
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
    mem = ctypes.c_size_t(0)
    total_mem = getattr(lib, "cuDeviceTotalMem_v2", None) or lib.cuDeviceTotalMem
    total_mem(ctypes.byref(mem), dev)
    info = GpuInfo(
        name=buf.value.decode(errors="replace"),
        count=count.value,
        driver_cuda_version=f"{version.value // 1000}.{(version.value % 1000) // 10}",
        compute_capability=(major.value, minor.value),
        memory_GiB=mem.value / 2**30,
    )
    return info, f"found {info.name} (compute capability {major.value}.{minor.value})"


def _loaded_numba_backend() -> str | None:
    """The backend of an already-imported ``numba.cuda``, or None if it has not been imported."""
    if "numba.cuda" not in sys.modules:
        return None
    from numba import config

    return "simulator" if config.ENABLE_CUDASIM else "cuda"


def _choose(env: dict[str, str]) -> Decision:
    requested = env.get(ENV_VAR, "").strip().lower()
    if requested and requested not in BACKENDS:
        raise ValueError(
            f"{ENV_VAR}={env[ENV_VAR]!r} is not a backend; expected one of {', '.join(BACKENDS)} (or unset)"
        )
    if requested == "simulator":
        return Decision("simulator", f"{ENV_VAR}=simulator", None)
    gpu, why = probe_gpu()
    if requested == "cuda":
        if gpu is None:
            raise BackendError(f"{ENV_VAR}=cuda was asked for, but {why}. Unset it to use the simulator.")
        return Decision("cuda", f"{ENV_VAR}=cuda; {why}", gpu)
    if gpu is None:
        return Decision("simulator", why, None)
    from scaledl import gpu_path

    if not gpu_path.skipped():  # a GPU answers; can kernels run on it? (one launch, in a child process)
        verdict = gpu_path.check(gpu)
        if not verdict.ok:
            return Decision("simulator", f"{gpu.name} found, but kernels cannot run on it: {verdict.problem}",
                            None, fix=verdict.fix)
    return Decision("cuda", why, gpu)


_decision: Decision | None = None


def decide(announce: bool = True) -> Decision:
    """Take the backend decision for this process (once) and prepare Numba for it.

    ``announce``: print the one-line notice naming the backend and why (once per process; see
    :func:`announce`). The ``scaledl`` command passes False and announces only in commands that use a
    backend, so ``scaledl --help`` or ``scaledl book check`` print no notice.

    Raises:
        ValueError: ``SCALEDL_BACKEND`` holds something other than ``cuda`` or ``simulator``.
        BackendError: ``cuda`` was forced without a usable GPU, or ``numba.cuda`` was already imported
            with the other backend, which cannot be changed inside a running process.
    """
    global _decision
    if _decision is not None:
        return _decision
    decision = _choose(os.environ)
    loaded = _loaded_numba_backend()
    if loaded is not None and loaded != decision.backend:
        raise BackendError(
            f"numba.cuda was imported before scaledl and is running the {loaded} backend, but scaledl chose "
            f"{decision.backend} ({decision.reason}). Numba fixes its backend at its first import: restart "
            f"the Python process (in Jupyter: Kernel > Restart) and import scaledl before numba.cuda, or set "
            f"{ENV_VAR}={loaded} before starting Python."
        )
    if decision.backend == "simulator":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        from scaledl import _simfix

        _simfix.install()  # the simulator's shared arrays, made safe against thread switches (see _simfix)
        # The simulator runs a block's threads as Python threads while the launching thread polls them in a
        # loop that holds the GIL until the interpreter's switch interval (5 ms) takes it away; a shorter one
        # hands the GIL to the threads with work sooner: kernels with syncthreads run about twice as fast.
        sys.setswitchinterval(min(sys.getswitchinterval(), SIMULATOR_SWITCH_INTERVAL_s))
    else:
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    if "numba" in sys.modules and loaded is None:
        # numba read its environment when it was imported; make it read the variable set just now.
        from numba.core import config

        config.reload_config()
    _decision = decision
    if announce:
        _announce(decision)
    return decision


_announced = False


def _announce(decision: Decision) -> None:
    global _announced
    if _announced or os.environ.get(QUIET_VAR):
        return
    _announced = True
    # In a notebook the line is information, not a warning: Jupyter draws stderr as a red band.
    stream = sys.stdout if _in_notebook() else sys.stderr
    print(f"scaledl: {decision.backend} backend ({decision.reason})", file=stream)
    if decision.fix:  # the second of the two lines: what fixes the GPU path, and that the chapter still runs
        print(f"scaledl: to use the GPU: {decision.fix}. Until then the book runs on the CPU simulator.",
              file=stream)


def announce() -> Decision:
    """Decide (if not done yet) and print the backend notice, unless already printed or SCALEDL_QUIET is set."""
    decision = decide(announce=False)
    _announce(decision)
    return decision


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (ipykernel), where stdout is what a cell shows as plain output."""
    shell = sys.modules.get("IPython")
    try:
        ip = shell.get_ipython() if shell is not None else None
    except Exception:  # a half-imported IPython: treat as a terminal
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def backend() -> str:
    """``"cuda"`` or ``"simulator"``: where kernels launched by this process run."""
    return decide().backend


def reason() -> str:
    """One phrase saying why :func:`backend` is what it is."""
    return decide().reason


def gpu_info() -> GpuInfo | None:
    """Driver facts about GPU 0, or None on the simulator."""
    return decide().gpu


def on_gpu() -> bool:
    return backend() == "cuda"


def sized(sim, gpu):
    """Pick a problem size for the active backend: ``sim`` on the simulator, ``gpu`` on a real GPU.

    Both must be given and of the same kind (both ints, both tuples, ...), so a chapter states in one line
    what it runs where: ``n = sized(sim=48, gpu=4096)``.
    """
    if type(sim) is not type(gpu):
        raise TypeError(
            f"sized(sim=..., gpu=...) needs both sizes of the same type; got sim={sim!r} "
            f"({type(sim).__name__}) and gpu={gpu!r} ({type(gpu).__name__})"
        )
    return gpu if on_gpu() else sim


def cuda():
    """The ``numba.cuda`` module, imported after the backend decision has been taken."""
    decide()
    from numba import cuda as numba_cuda

    return numba_cuda
