"""`scaledl kernels report` and doctor's line about the CUDA tools it needs (ptxas, nvdisasm), without them."""

import io

import pytest

from scaledl import cli
from scaledl.kernels import static_report


def test_list_names_every_kernel_without_the_tools(capsys):
    assert cli.main(["kernels", "report", "--list"]) == 0
    names = capsys.readouterr().out.split()
    assert names[:8] == ["gemm_v1_naive", "gemm_v2_tiled", "gemm_v3_regblock", "gemm_v4_fixed_loads",
                         "gemm_v5_index32", "gemm_v6_vec4", "gemm_v7_unroll_k", "gemm_v8_prefetch"]
    assert {"quantize_v1_arith", "rnn_v3_persistent_grid", "axpy"} <= set(names)


def test_missing_tools_are_named_with_the_install(monkeypatch, capsys):
    monkeypatch.setattr(static_report, "find_tool", lambda name: None if name == "nvdisasm" else "/x/ptxas")
    assert cli.main(["kernels", "report", "--only", "gemm_v3_regblock"]) == 3
    err = capsys.readouterr().err
    assert "nvdisasm not found" in err and "pip install -e '.[kernels]'" in err


def test_unknown_kernel_or_arch(capsys):
    assert cli.main(["kernels", "report", "--only", "gemm_v9"]) == 2
    assert "unknown kernel(s) ['gemm_v9']" in capsys.readouterr().err
    try:
        cli.main(["kernels", "report", "--arch", "sm_70"])
    except SystemExit as exit:
        assert exit.code == 2
    assert "invalid choice: 'sm_70'" in capsys.readouterr().err


def test_doctor_says_whether_the_tools_are_there(monkeypatch):
    for found, expected in [({"ptxas": "13.5 (/a/ptxas)", "nvdisasm": "13.5 (/a/nvdisasm)"},
                             "cuda tools   ptxas 13.5 (/a/ptxas), nvdisasm 13.5 (/a/nvdisasm)"),
                            ({"ptxas": None, "nvdisasm": None},
                             "cuda tools   ptxas and nvdisasm not found: needed by `scaledl kernels report` and by the "
                             "static report lab 02's checks print for its Question 2.4 (the [kernels] extra: pip "
                             "install -e '.[kernels]' in the book's checkout, as `make lab` does)")]:
        monkeypatch.setattr(static_report, "tool_versions", lambda found=found: found)
        out = io.StringIO()
        assert cli.doctor(out) == 0  # the book runs without them
        assert expected in out.getvalue()


@pytest.mark.parametrize("cc, row", [((7, 5), "the T4 row of `scaledl kernels report --arch sm_75`: 1024 threads, "
                                               "16 blocks, 64 KiB"),
                                     ((8, 9), "the L4 row of `scaledl kernels report --arch sm_89`: 1536 threads, "
                                              "24 blocks, 100 KiB"),
                                     ((9, 0), "the H100 SXM row of `scaledl kernels report --arch sm_90`: 2048 "
                                              "threads, 32 blocks, 228 KiB")])
def test_doctor_on_a_gpu_names_its_architecture_s_row(monkeypatch, cc, row):
    from scaledl import device, doctor

    gpu = device.GpuInfo(name="Fake GPU", count=1, driver_cuda_version="13.0", compute_capability=cc, memory_GiB=15)
    monkeypatch.setattr(device, "decide", lambda *a, **k: device.Decision("cuda", "faked", gpu))
    monkeypatch.setattr(device, "cuda", lambda: (_ for _ in ()).throw(RuntimeError("no runtime here")))
    monkeypatch.setattr(doctor, "smoke_test", lambda: (True, "faked"))
    out = io.StringIO()
    doctor.doctor(out)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("arch "))
    assert row in line and line.startswith(f"arch         sm_{cc[0]}{cc[1]}, ")


def test_doctor_says_when_the_report_has_no_row_for_the_gpu():
    from scaledl.doctor import arch_line

    line = arch_line((10, 0))
    assert line.startswith("arch         sm_100: the static report has no row for it") and "sm_75" in line
