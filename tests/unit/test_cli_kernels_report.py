"""`scaledl kernels report` and doctor's line about the CUDA tools it needs (ptxas, nvdisasm), without them."""

import io

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
    assert "nvdisasm not found" in err and "pip install nvidia-cuda-nvcc nvidia-cuda-nvdisasm" in err


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
                             "cuda tools   ptxas and nvdisasm not found: needed only for `scaledl kernels report` "
                             "(pip install nvidia-cuda-nvcc nvidia-cuda-nvdisasm")]:
        monkeypatch.setattr(static_report, "tool_versions", lambda found=found: found)
        out = io.StringIO()
        assert cli.doctor(out) == 0  # the book runs without them
        assert expected in out.getvalue()
