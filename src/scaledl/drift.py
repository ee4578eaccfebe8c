"""Driver drift: why a CUDA kernel that compiled fine will not load, in one sentence, and what to do.

A hosted notebook image (Colab, Kaggle, a JupyterHub) updates its NVIDIA driver and its CUDA wheels on its own
schedule. Numba-cuda compiles a kernel to PTX with the libNVVM of the installed CUDA wheels, then links it with
nvJitLink (which turns PTX into a cubin the driver loads: CUDA's *minor version compatibility*) or hands the PTX
to the driver's own JIT. Three failures follow from the versions alone:

* the wheels are a newer CUDA **major** than the driver supports (CUDA 13 wheels on a CUDA 12 driver): nothing
  the toolkit builds will load; the wheels must match the driver (``scaledl[cu12]``) or the driver be updated;
* the wheels are a newer **minor** of the same major: PTX of a newer ISA than the driver's JIT knows is refused
  with ``CUDA_ERROR_UNSUPPORTED_PTX_VERSION`` (error 222) unless nvJitLink, at least as new as libNVVM, does the
  link (numba-cuda's documented route to minor version compatibility);
* libNVVM is missing (the CUDA wheels without their ``nvcc``/``nvvm`` part, or a system toolkit not on the
  path): numba-cuda raises ``NvvmSupportError`` before anything runs.

:func:`check` finds these from versions before a launch; :func:`explain` reads an exception a launch raised.
Both return :class:`Drift` records whose ``cause`` is one sentence and whose ``fix`` is what numba-cuda's
documentation says to do (its ``cu12``/``cu13`` extras, nvJitLink, or pinning the toolkit to the driver).
The PTX ISA to CUDA table is cuda-python's (``cuda.bindings.utils``) where it is installed.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass

from scaledl._optional import install_command

# (distribution, what it is): the first installed name of each kind gives its version.
TOOLKIT_DISTS = ("cuda-toolkit", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime")
NVVM_DISTS = ("nvidia-nvvm", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc")
NVJITLINK_DISTS = ("nvidia-nvjitlink", "nvidia-nvjitlink-cu12")
# PTX ISA -> first CUDA release that loads it, for when cuda-python is absent (its table, PTX ISA release notes).
PTX_FIRST_CUDA = {"7.8": (11, 8), "8.0": (12, 0), "8.1": (12, 1), "8.2": (12, 2), "8.3": (12, 3), "8.4": (12, 4),
                  "8.5": (12, 5), "8.6": (12, 7), "8.7": (12, 8), "8.8": (12, 9), "9.0": (13, 0), "9.1": (13, 1)}
UNSUPPORTED_PTX = re.compile(r"UNSUPPORTED_PTX_VERSION|\b222\b.*ptx|ptx.*unsupported toolchain", re.I | re.S)
NO_NVVM = re.compile(r"libNVVM (cannot be found|is not available)|NvvmSupportError", re.I)
INSUFFICIENT_DRIVER = re.compile(r"INSUFFICIENT_DRIVER|driver version is insufficient", re.I)
PTX_VERSION = re.compile(r"^\s*\.version\s+(\d+\.\d+)", re.M)


@dataclass(frozen=True)
class Drift:
    """One mismatch: ``kind`` (a stable name), ``cause`` (one sentence) and ``fix`` (commands or a setting)."""

    kind: str
    cause: str
    fix: str


def parse_version(text: str | None) -> tuple[int, int] | None:
    """``"12.4"``, ``"12.4.131"`` or ``"13.0.0"`` as ``(major, minor)``; None for None."""
    if text is None:
        return None
    match = re.match(r"\s*(\d+)\.(\d+)", str(text))
    if match is None:
        raise ValueError(f"version: expected 'major.minor[...]', got {text!r}")
    return int(match.group(1)), int(match.group(2))


def installed(dists: tuple[str, ...]) -> str | None:
    """The version of the first of ``dists`` that is installed, or None."""
    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def cuda_for_ptx(ptx_isa: str) -> tuple[int, int]:
    """The oldest CUDA (driver, nvJitLink or PTX compiler) that loads PTX of ISA ``ptx_isa`` (e.g. "9.0")."""
    try:
        from cuda.bindings.utils import get_minimal_required_cuda_ver_from_ptx_ver

        v = get_minimal_required_cuda_ver_from_ptx_ver(ptx_isa)
        return v // 1000, (v % 1000) // 10
    except ImportError:
        pass
    if ptx_isa not in PTX_FIRST_CUDA:
        raise ValueError(f"ptx_isa: unknown PTX ISA version {ptx_isa!r}; known: {', '.join(PTX_FIRST_CUDA)}")
    return PTX_FIRST_CUDA[ptx_isa]


def ptx_isa_of(ptx: str) -> str | None:
    """The ISA version in a PTX module's ``.version`` directive, or None."""
    match = PTX_VERSION.search(ptx)
    return match.group(1) if match else None


def _fmt(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _major_fix(driver: tuple[int, int], toolkit: tuple[int, int]) -> str:
    return (f"install the CUDA {driver[0]} wheels this driver runs: pip uninstall -y cuda-toolkit "
            f"numba-cuda, then {install_command(f'cu{driver[0]}')} (numba-cuda[cu{driver[0]}]); restart the "
            f"kernel; or update the NVIDIA driver to one for CUDA {_fmt(toolkit)} or newer (not possible on a "
            f"hosted image)")


def check(driver: str | None, toolkit: str | None, nvjitlink: str | None, nvvm: str | None) -> list[Drift]:
    """Mismatches visible from versions alone: the driver's newest CUDA (``cuDriverGetVersion``), the CUDA
    wheels' version, nvJitLink's and libNVVM's (None where not installed). Empty when nothing is wrong or no
    driver is present (the simulator needs none of this)."""
    d, t, j, n = (parse_version(v) for v in (driver, toolkit, nvjitlink, nvvm))
    if d is None:
        return []
    found = []
    if t is not None and t[0] > d[0]:
        found.append(Drift("toolkit-major", f"the CUDA wheels are CUDA {_fmt(t)} but the driver supports only "
                                            f"CUDA {_fmt(d)}, so no kernel they compile can load",
                           _major_fix(d, t)))
    elif t is not None and t > d:
        compiler = n or t
        if j is None or j < compiler:
            have = f"nvJitLink {_fmt(j)}" if j else "no nvJitLink"
            found.append(Drift(
                "minor-no-nvjitlink",
                f"the CUDA {_fmt(t)} wheels emit PTX newer than this CUDA {_fmt(d)} driver can JIT, and {have} "
                f"is installed to link it instead (CUDA minor version compatibility needs nvJitLink >= "
                f"{_fmt(compiler)})",
                f"pip install 'nvidia-nvjitlink{'-cu12' if d[0] == 12 else ''}>={_fmt(compiler)},<{d[0] + 1}' "
                f"(numba-cuda then links through it); or pin the wheels to the driver: pip install "
                f"'cuda-toolkit[cudart,nvrtc,cccl,{'nvcc' if d[0] == 12 else 'nvvm'}]=={_fmt(d)}.*'"))
    if t is not None and n is None and t[0] <= d[0]:
        found.append(Drift("no-libnvvm", "the CUDA wheels are installed without libNVVM, so numba-cuda cannot "
                                         "compile any kernel",
                           f"{install_command(f'cu{d[0]}')} (numba-cuda[cu{d[0]}] brings libNVVM), or point "
                           f"CUDA_HOME at a CUDA toolkit that has nvvm/"))
    return found


def explain(error: BaseException | str, driver: str | None = None, toolkit: str | None = None,
            nvjitlink: str | None = None, nvvm: str | None = None, ptx: str | None = None) -> Drift | None:
    """What a failed compile or launch means, from its exception (or message) and the versions; None when the
    error is not a known drift. ``ptx``, the kernel's PTX where at hand, names the ISA that was refused."""
    if not isinstance(error, (BaseException, str)):
        raise TypeError(f"error: expected an exception or its message, got {type(error).__name__}")
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else error
    d = parse_version(driver)
    if NO_NVVM.search(text):
        major = d[0] if d else (parse_version(toolkit) or (12, 0))[0]
        return Drift("no-libnvvm", "numba-cuda could not find libNVVM, the compiler that turns a kernel into PTX",
                     f"{install_command(f'cu{major}')} (numba-cuda[cu{major}] brings libNVVM as a wheel), or "
                     f"set CUDA_HOME to a CUDA toolkit that has nvvm/, then restart the kernel")
    drifts = {x.kind: x for x in check(driver, toolkit, nvjitlink, nvvm)}
    if UNSUPPORTED_PTX.search(text) or INSUFFICIENT_DRIVER.search(text):
        isa = ptx_isa_of(ptx) if ptx else None
        needs = f" (PTX ISA {isa} needs CUDA {_fmt(cuda_for_ptx(isa))})" if isa else ""
        for kind in ("toolkit-major", "minor-no-nvjitlink"):
            if kind in drifts:
                x = drifts[kind]
                return Drift(x.kind, f"the driver refused the kernel{needs}: {x.cause}", x.fix)
        where = f"this CUDA {_fmt(d)} driver" if d else "the driver"
        return Drift("ptx-too-new", f"{where} refused PTX newer than its JIT knows{needs}",
                     "pin the CUDA wheels to the driver's version (pip install 'cuda-toolkit[...]==<driver "
                     "major.minor>.*'), or install nvJitLink at least as new as libNVVM so numba-cuda links the "
                     "PTX itself (minor version compatibility); `scaledl doctor` prints both versions")
    return None


def out_of_range(dist: str = "scaledl") -> list[Drift]:
    """Runtime dependencies of ``dist`` installed at a version outside its declared range (a hosted image's
    package that ``pip install --no-deps``, or a later install, left behind), each with the command to fix it."""
    from packaging.requirements import Requirement

    found = []
    try:
        requirements = importlib.metadata.requires(dist) or []
    except importlib.metadata.PackageNotFoundError:  # a checkout on PYTHONPATH: no metadata, nothing to compare
        return found
    for text in requirements:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue  # an extra's requirement
        have = installed((req.name,))
        if have is None:
            found.append(Drift("missing", f"{req.name} is not installed but the book needs {req}",
                               f"pip install '{req}'"))
        elif not req.specifier.contains(have, prereleases=True):
            found.append(Drift("out-of-range", f"{req.name} {have} is installed but the book is tested with "
                                               f"{req.name}{req.specifier}",
                               f"pip install '{req}', then restart the kernel (Runtime > Restart session on "
                               f"Colab) so the new version is the one imported"))
    return found
