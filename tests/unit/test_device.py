"""The backend decision: overrides, errors, and the already-imported-numba.cuda case (one process each)."""

import pytest

import scaledl
from scaledl import device


def test_backend_is_one_of_the_two():
    assert scaledl.backend() in ("cuda", "simulator")
    assert device.reason()


def test_forced_simulator(python):
    r = python("import scaledl, os; print(scaledl.backend(), os.environ['NUMBA_ENABLE_CUDASIM'])",
               {"SCALEDL_BACKEND": "simulator"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["simulator", "1"]
    assert "scaledl: simulator backend (SCALEDL_BACKEND=simulator)" in r.stderr


def test_notice_is_one_line_and_can_be_silenced(python):
    r = python("import scaledl", {"SCALEDL_BACKEND": "simulator"})
    assert len([ln for ln in r.stderr.splitlines() if ln.startswith("scaledl:")]) == 1
    r = python("import scaledl", {"SCALEDL_BACKEND": "simulator", "SCALEDL_QUIET": "1"})
    assert r.stderr == ""


def test_bad_backend_value_is_a_clear_error(python):
    r = python("import scaledl", {"SCALEDL_BACKEND": "gpu"})
    assert r.returncode != 0
    assert "ValueError: SCALEDL_BACKEND='gpu' is not a backend; expected one of cuda, simulator" in r.stderr


def test_bad_backend_value_from_the_command_line(python):
    r = python("import sys; sys.argv = ['scaledl']; import scaledl", {"SCALEDL_BACKEND": "tpu"})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("scaledl: error: SCALEDL_BACKEND='tpu'")
    assert "Traceback" not in r.stderr


def test_cuda_forced_without_gpu_is_refused(python):
    gpu, _ = device.probe_gpu()
    if gpu is not None:
        pytest.skip("a GPU is present, so forcing cuda is legitimate here")
    r = python("import scaledl", {"SCALEDL_BACKEND": "cuda"})
    assert r.returncode != 0
    assert "SCALEDL_BACKEND=cuda was asked for, but" in r.stderr


def test_numba_cuda_imported_first_with_other_backend_is_refused(python):
    # numba.cuda comes up on the simulator; then scaledl is told to use cuda (or, without a GPU, is refused
    # either way). The message must tell the reader to restart, not continue on a silently wrong backend.
    code = ("import os; os.environ['NUMBA_ENABLE_CUDASIM'] = '1'\n"
            "import numba.cuda\n"
            "import scaledl")
    r = python(code, {"SCALEDL_BACKEND": "cuda"})
    assert r.returncode != 0
    gpu, _ = device.probe_gpu()
    if gpu is not None:
        assert "numba.cuda was imported before scaledl" in r.stderr and "restart" in r.stderr


def test_numba_cuda_imported_first_on_the_same_backend_is_fine(python):
    code = ("import os; os.environ['NUMBA_ENABLE_CUDASIM'] = '1'\n"
            "import numba.cuda\n"
            "import scaledl; print(scaledl.backend())")
    r = python(code, {"SCALEDL_BACKEND": "simulator"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "simulator"


def test_numba_imported_first_still_gets_the_simulator(python):
    # numba reads NUMBA_ENABLE_CUDASIM at its own import; scaledl must make it re-read the variable.
    code = ("import numba\n"
            "import scaledl\n"
            "from numba import cuda; print(cuda.simulator_available if hasattr(cuda, 'simulator_available') "
            "else '', type(cuda.gpus).__module__)")
    r = python(code, {"SCALEDL_BACKEND": "simulator"})
    assert r.returncode == 0, r.stderr
    assert "simulator" in r.stdout


def test_sized_picks_by_backend():
    expected = 4096 if scaledl.backend() == "cuda" else 32
    assert scaledl.sized(sim=32, gpu=4096) == expected
    assert scaledl.sized(sim=(8, 8), gpu=(64, 64)) == ((64, 64) if expected == 4096 else (8, 8))


def test_sized_rejects_mismatched_kinds():
    with pytest.raises(TypeError, match=r"sim=32 \(int\) and gpu=4096.0 \(float\)"):
        scaledl.sized(sim=32, gpu=4096.0)


def test_smoke_kernel_runs_on_this_backend():
    from scaledl.kernels.smoke import smoke_test

    ok, message = smoke_test(37)
    assert ok, message


def test_the_simulator_shortens_the_switch_interval_and_never_lengthens_it(python):
    r = python("import sys, scaledl; print(scaledl.backend(), sys.getswitchinterval())",
               env_extra={"SCALEDL_BACKEND": "simulator"})
    assert r.returncode == 0, r.stderr
    name, interval = r.stdout.split()[-2:]
    assert name == "simulator" and float(interval) == pytest.approx(device.SIMULATOR_SWITCH_INTERVAL_s, abs=2e-6)
    r = python("import sys; sys.setswitchinterval(0.0001); import scaledl; print(sys.getswitchinterval())",
               env_extra={"SCALEDL_BACKEND": "simulator"})
    assert r.returncode == 0, r.stderr
    assert float(r.stdout.split()[-1]) == pytest.approx(0.0001, abs=2e-6)  # Python keeps whole microseconds
