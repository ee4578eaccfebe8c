"""The setup cell's GPU-path check (scaledl.gpu_path): each hosted failure reproduced with faked versions and a
faked launch, its two lines, and the fall-back to the simulator (scaledl.device)."""

import io
import os
import subprocess
import sys

import pytest

from scaledl import device, gpu_path

T4 = device.GpuInfo(name="Tesla T4", count=1, driver_cuda_version="12.4", compute_capability=(7, 5), memory_GiB=15)
P100 = device.GpuInfo(name="Tesla P100-PCIE-16GB", count=1, driver_cuda_version="13.0", compute_capability=(6, 0),
                      memory_GiB=16)
HAVE = {"toolkit": "12.4", "nvjitlink": "12.4", "nvvm": "12.4", "numba": "0.61.2", "numba-cuda": "0.22.2",
        "numpy": "2.1.3"}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def failing(output):
    calls = []

    def probe():
        calls.append(1)
        return False, output
    probe.calls = calls
    return probe


def test_ptx_newer_than_the_driver_without_nvjitlink():
    have = HAVE | {"toolkit": "12.8", "nvvm": "12.8", "nvjitlink": None}
    out = ("numba.cuda.cudadrv.driver.LinkerError: [222] Call to cuLinkAddData results in "
           "CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
    v = gpu_path.check(T4, probe=failing(out), have=have)
    assert not v.ok and v.kind == "minor-no-nvjitlink"
    assert "12.8" in v.problem and "12.4" in v.problem and "nvidia-nvjitlink-cu12>=12.8,<13" in v.fix


def test_a_missing_libnvvm():
    v = gpu_path.check(T4, probe=failing("numba.cuda.cudadrv.error.NvvmSupportError: libNVVM cannot be found."),
                       have=HAVE)
    assert not v.ok and v.kind == "no-libnvvm" and "libNVVM" in v.problem and "numba-cuda[cu12]" in v.fix


def test_a_cuda_13_build_on_a_p100_is_refused_without_a_launch():
    probe = failing("never called")
    v = gpu_path.check(P100, probe=probe, have=HAVE | {"toolkit": "13.0", "nvvm": "13.0", "nvjitlink": "13.0"})
    assert not v.ok and v.kind == "cuda13-before-turing" and probe.calls == []
    assert "compute capability 6.0" in v.problem and "numba-cuda[cu12]" in v.fix
    # the same card with CUDA 12 wheels is launched and passes
    assert gpu_path.check(P100, probe=lambda: (True, "gpu path ok"), have=HAVE).ok


def test_numba_cuda_missing_or_refusing_the_image_s_numpy():
    v = gpu_path.check(T4, probe=failing("never called"), have=HAVE | {"numba-cuda": None})
    assert not v.ok and v.kind == "no-numba-cuda" and "scaledl[cu12]" in v.fix
    v = gpu_path.check(T4, probe=failing("ImportError: Numba needs NumPy 2.3 or less. Got NumPy 2.5."), have=HAVE)
    assert not v.ok and v.kind == "numpy-too-new"
    assert "NumPy 2.5" in v.problem and v.fix.startswith("pip install 'numpy<2.4'")


def test_an_unknown_failure_names_its_last_line_and_the_doctor():
    v = gpu_path.check(T4, probe=failing("Traceback ...\nRuntimeError: something new"), have=HAVE)
    assert not v.ok and v.kind == "launch-failed" and v.problem.endswith("RuntimeError: something new")
    assert "scaledl doctor" in v.fix


def test_a_pass_is_remembered_and_a_failure_is_not():
    passes = []

    def probe():
        passes.append(1)
        return True, "gpu path ok"
    assert gpu_path.check(T4, probe=probe, have=HAVE).ok and gpu_path.check(T4, probe=probe, have=HAVE).ok
    assert len(passes) == 1
    assert gpu_path.check(T4, probe=probe, have=HAVE | {"numpy": "2.2.0"}).ok and len(passes) == 2  # new versions
    probe = failing("RuntimeError: x")
    gpu_path.check(T4, probe=probe, have=HAVE | {"numba": "0.62"})
    gpu_path.check(T4, probe=probe, have=HAVE | {"numba": "0.62"})
    assert len(probe.calls) == 2


def test_the_probe_script_passes_where_kernels_run():
    # here that is the simulator: the script itself must be a valid one-thread launch and check
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, "-c", gpu_path.PROBE], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0 and "gpu path ok" in done.stdout, done.stderr
    broken = gpu_path.PROBE.replace("out[0] = 42", "out[0] = 41")
    done = subprocess.run([sys.executable, "-c", broken], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode != 0 and "wrote 41, not 42" in done.stderr


def test_a_failed_path_falls_back_to_the_simulator_with_two_lines(monkeypatch):
    monkeypatch.setattr(device, "probe_gpu", lambda: (T4, "found Tesla T4 (compute capability 7.5)"))
    monkeypatch.setattr(gpu_path, "check", lambda gpu: gpu_path.PathCheck(False, "no-libnvvm", "libNVVM is missing",
                                                                           "pip install x, and restart the kernel"))
    d = device._choose({})
    assert d.backend == "simulator" and d.gpu is None and d.fix == "pip install x, and restart the kernel"
    assert d.reason == "Tesla T4 found, but kernels cannot run on it: libNVVM is missing"
    monkeypatch.setattr(device, "_announced", False)
    monkeypatch.delenv(device.QUIET_VAR, raising=False)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    device._announce(d)
    lines = err.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("scaledl: simulator backend (Tesla T4 found")
    assert lines[1] == ("scaledl: to use the GPU: pip install x, and restart the kernel. Until then the book runs on "
                        "the CPU simulator.")


def test_a_passing_path_or_a_forced_backend_or_the_switch_keep_the_gpu(monkeypatch):
    monkeypatch.setattr(device, "probe_gpu", lambda: (T4, "found Tesla T4"))
    monkeypatch.setattr(gpu_path, "check", lambda gpu: gpu_path.PathCheck(True))
    assert device._choose({}).backend == "cuda"
    monkeypatch.setattr(gpu_path, "check", lambda gpu: pytest.fail("checked although told not to"))
    assert device._choose({device.ENV_VAR: "cuda"}).backend == "cuda"  # forced: no check, the user insists
    monkeypatch.setenv(gpu_path.SKIP_VAR, "0")
    assert device._choose({}).backend == "cuda"
