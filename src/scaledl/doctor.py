"""``scaledl doctor``: what this machine has for the book (backend, GPU, driver and runtime, packages, the CUDA
tools, a kernel launched and checked) and whether the book can run here, with the fix for each problem found.

Below the command line (:mod:`scaledl.cli` calls :func:`doctor`) and the GPU report (:mod:`scaledl.validate`
records :func:`version` and :func:`smoke_test`), above the kernels it launches; it imports neither of the former.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys

from scaledl import device, drift

DOCTOR_PACKAGES = ("numpy", "numba", "numba-cuda", "ml_dtypes", "ipywidgets", "jupyterlab", "matplotlib",
                   "nbval", "cupy-cuda12x", "cupy-cuda13x")
# Not needed to read and run the book; what each is for, said instead of "NOT INSTALLED".
OPTIONAL_PACKAGES = {"nbval": "needed only for `make test` (pip install nbval, or the [dev] extra)",
                     "jupyterlab": "needed only to open the book locally (`make lab`, or the [lab] extra); "
                                   "Colab and a JupyterHub bring their own"}


def version(dist: str) -> str | None:
    """The installed version of distribution ``dist``, or None."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def in_colab() -> bool:
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def smoke_test() -> tuple[bool, str]:
    """Launch one small kernel on the active backend and compare it with NumPy."""
    try:
        from scaledl.kernels.smoke import smoke_test as run_smoke

        return run_smoke()
    except Exception as err:  # a broken toolkit shows up here, which is what the doctor is for
        return False, f"kernel launch failed: {type(err).__name__}: {err}"


def arch_line(compute_capability) -> str:
    """The static report's row for a GPU of ``compute_capability``: the ``--arch`` to pass and the per-SM limits.

    >>> arch_line((7, 5)).split(": ")[0]
    'arch         sm_75, the T4 row of `scaledl kernels report --arch sm_75`'
    >>> arch_line((10, 0))[:63]
    'arch         sm_100: the static report has no row for it (rows:'
    """
    from scaledl.kernels.occupancy import ARCHS, arch_of

    arch = arch_of(compute_capability)
    sm = ARCHS.get(arch)
    if sm is None:
        return (f"arch         {arch}: the static report has no row for it (rows: {', '.join(ARCHS)}); its limits "
                "are in the CUDA C++ Programming Guide's table of compute capabilities")
    return (f"arch         {arch}, the {sm.name} row of `scaledl kernels report --arch {arch}`: {sm.max_threads} "
            f"threads, {sm.max_blocks} blocks, {(sm.shared_bytes + sm.reserved_shared_per_block) // 1024} KiB of "
            "shared memory per SM")


def doctor(out=sys.stdout) -> int:
    d = device.decide()
    lines = [f"backend      {d.backend}  ({d.reason})"]
    if d.fix:
        lines.append(f"gpu path     FAILED; fix: {d.fix}")
    if d.gpu is not None:
        g = d.gpu
        lines.append(f"gpu          {g.name} x{g.count}, compute capability {g.compute_capability[0]}."
                     f"{g.compute_capability[1]}, {g.memory_GiB:.0f} GiB")
        lines.append(arch_line(g.compute_capability))
        lines.append(f"driver       supports CUDA {g.driver_cuda_version}")
        try:
            runtime = device.cuda().runtime.get_version()
            lines.append(f"cuda runtime {runtime[0]}.{runtime[1]}")
        except Exception as err:
            lines.append(f"cuda runtime not found ({type(err).__name__}: {err}); install scaledl[cu12] or [cu13]")
    else:
        lines.append("gpu          none (kernels run on the CPU simulator; keep sizes small)")
    lines.append(f"python       {platform.python_version()} ({platform.system()} {platform.machine()})")
    for dist in DOCTOR_PACKAGES:
        v = version(dist)
        if v is not None:
            lines.append(f"{dist:<12} {v}")
        elif dist in OPTIONAL_PACKAGES:
            lines.append(f"{dist:<12} not installed: {OPTIONAL_PACKAGES[dist]}")
        elif not dist.startswith("cupy"):
            lines.append(f"{dist:<12} NOT INSTALLED")
    lines.append(f"colab        {'yes' if in_colab() else 'no'}")
    from scaledl import _compat

    if _compat.ROW_STACK_RESTORED:
        lines.append(f"mended       numpy {version('numpy')} has no np.row_stack, which numba-cuda's GPU compiler "
                     "overloads (numba-cuda <= 0.30.4): scaledl restored it as np.vstack (scaledl._compat)")
    versions = dict(driver=d.gpu.driver_cuda_version if d.gpu is not None else None,
                    toolkit=drift.installed(drift.TOOLKIT_DISTS), nvjitlink=drift.installed(drift.NVJITLINK_DISTS),
                    nvvm=drift.installed(drift.NVVM_DISTS))
    if versions["toolkit"] is not None:
        lines.append(f"cuda wheels  {versions['toolkit']} (libNVVM {versions['nvvm'] or 'missing'}, "
                     f"nvJitLink {versions['nvjitlink'] or 'missing'})")
    from scaledl.kernels.static_report import INSTALL_HINT, tool_versions

    tools = tool_versions()  # ptxas and nvdisasm: the static report, from the CLI and from lab 02's checks
    lines.append(f"cuda tools   ptxas {tools['ptxas']}, nvdisasm {tools['nvdisasm']}" if all(tools.values()) else
                 f"cuda tools   {' and '.join(t for t, v in tools.items() if v is None)} not found: needed by "
                 f"`scaledl kernels report` and by the static report lab 02's checks print for its Question 2.4 "
                 f"({INSTALL_HINT})")
    found = drift.out_of_range() + drift.check(**versions)
    missing = [p for p in ("numpy", "numba", "numba-cuda", "ipywidgets", "matplotlib") if version(p) is None]
    ok, smoke = smoke_test() if not missing else (False, "skipped: packages missing")
    lines.append(f"smoke test   {'ok' if ok else 'FAILED'}: {smoke}")
    if ok:  # a kernel compiled, so numba-cuda found libNVVM (a system CUDA toolkit, as on the H200 image of
        # docs/gpu-runs/2026-11-26-nvidia-h200, where the wheels lack it): no warning that it cannot
        found = [x for x in found if x.kind != "no-libnvvm"]
    if not ok and not missing:
        explained = drift.explain(smoke, **versions)
        if explained is not None and explained.kind not in {x.kind for x in found}:
            found.append(explained)
    for x in found:  # after a passing smoke test a mismatch is a warning: the next toolkit update may break it
        lines.append(f"{'drift' if not ok else 'warning':<12} {x.cause}")
        lines.append(f"  fix        {x.fix}")
    can_run = ok and not missing
    lines.append("verdict      the book can run here" if can_run else
                 f"verdict      the book cannot run yet: {', '.join(missing) or smoke}")
    print("\n".join(lines), file=out)
    return 0 if can_run else 1
