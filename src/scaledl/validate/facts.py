"""The machine a validation ran on: ``scaledl doctor``'s facts as data (device, driver, CUDA, versions)."""

from __future__ import annotations

import datetime
import platform
import socket

from scaledl import device

# What a reader of the report needs to reproduce a figure; cupy under either CUDA major's wheel name.
VERSIONS = ("numpy", "numba", "numba-cuda", "cupy-cuda12x", "cupy-cuda13x", "ml_dtypes", "nbclient",
            "ipykernel", "pytest")


def collect() -> dict:
    """Device, driver and CUDA runtime versions, package versions, backend and why, date and host name.

    Also runs the doctor's kernel smoke test; ``smoke_ok`` False means kernels cannot launch here at all.
    """
    from scaledl.doctor import smoke_test
    from scaledl.doctor import version as _version

    d = device.decide(announce=False)
    facts = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
             "hostname": socket.gethostname(), "backend": d.backend, "backend_reason": d.reason,
             "device": "CPU simulator (Numba CUDA simulator)", "compute_capability": None, "gpu_count": 0,
             "memory_GiB": None, "driver_cuda_version": None, "cuda_runtime_version": None,
             "python": f"{platform.python_version()} ({platform.system()} {platform.machine()})"}
    if d.gpu is not None:
        g = d.gpu
        facts.update(device=g.name, gpu_count=g.count, compute_capability=f"{g.compute_capability[0]}."
                     f"{g.compute_capability[1]}", memory_GiB=round(g.memory_GiB, 1),
                     driver_cuda_version=g.driver_cuda_version)
        try:  # pragma: no cover - needs a GPU
            major, minor = device.cuda().runtime.get_version()
            facts["cuda_runtime_version"] = f"{major}.{minor}"
        except Exception as err:  # pragma: no cover - a GPU without the toolkit's runtime
            facts["cuda_runtime_version"] = f"not found ({type(err).__name__}: {err})"
    facts["versions"] = {dist: _version(dist) for dist in VERSIONS}
    facts["smoke_ok"], facts["smoke"] = smoke_test()
    return facts
