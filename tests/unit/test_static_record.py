"""The static report recorded in the package (scaledl.kernels.static_record), where ptxas cannot run.

Everything here runs without ptxas, nvdisasm or libNVVM: the tools are hidden where a test needs them missing.
tests/sim/test_static_report.py holds the record against what the installed tools make.
"""

import dataclasses

import pytest

from scaledl import cli
from scaledl.kernels import static_record, static_report
from scaledl.kernels.launch_table import kernel_table
from scaledl.kernels import kernel_model as km


@pytest.fixture
def no_tools(monkeypatch):
    monkeypatch.setattr(static_report, "find_tool", lambda name: None)


def test_the_record_holds_every_kernel_of_the_table_in_order():
    facts = static_record.recorded()
    assert facts.names == tuple(e.name for e in kernel_table()) and facts.recorded and facts.arch == "sm_90"
    assert all(r.error is None and r.ptxas.name == r.name for r in facts.reports)
    assert set(facts.tools) == {"ptxas", "nvdisasm", "numba-cuda"} and all(facts.tools.values())


def test_the_kernel_model_predicts_from_the_record():
    """The facts the model holds (the H200 run's v1 to v3, the ladder's v4 to v8) are the record's: a reader
    without the tools gets the same predictions as `scaledl kernels report`."""
    facts = static_record.recorded()
    for f in [m.facts for m in km.H200_MEASURED[:3]] + list(km.LADDER_FACTS):
        assert km.gemm_facts(facts[f.name], f.name.split("_", 2)[2]) == f


def test_a_record_reads_back_as_it_was_written(tmp_path, monkeypatch):
    facts = static_record.recorded()
    monkeypatch.setattr(static_report, "report", lambda only=None, arch="sm_90": list(facts.reports))
    monkeypatch.setitem(static_record.RECORD_FILES, "sm_90", static_record.write(path=tmp_path / "r.json"))
    again = static_record.recorded()
    assert again.reports == facts.reports and again.tools == static_record.toolchain()


def test_a_report_with_errors_is_not_recorded(tmp_path, monkeypatch):
    bad = dataclasses.replace(static_record.recorded(["axpy"]).reports[0], error="ptxas: boom")
    monkeypatch.setattr(static_report, "report", lambda only=None, arch="sm_90": [bad])
    with pytest.raises(RuntimeError, match="not recording a report with errors: {'axpy': 'ptxas: boom'}"):
        static_record.write(path=tmp_path / "r.json")


def test_without_the_tools_the_record_is_shown_and_says_why(no_tools):
    names = ["gemm_v3_regblock", "gemm_v8_prefetch"]
    facts = static_record.static_facts(names)
    assert facts.recorded and facts.names == tuple(names) and facts.reports == static_record.recorded(names).reports
    line = facts.provenance
    assert line.startswith("Static report for sm_90, recorded in the package (ptxas ") and "numba-cuda" in line
    assert "cannot be made on this machine (ptxas and nvdisasm not found" in line
    assert static_report.INSTALL_HINT in line
    assert facts["gemm_v3_regblock"].registers == 196 and facts["gemm_v3_regblock"].blocks_per_sm == 1


def test_the_provenance_of_a_report_made_here():
    r = static_record.recorded(["axpy"])
    here = static_record.StaticFacts(r.reports, "sm_90", r.tools, False, matches_record=True)
    assert here.provenance == (f"Static report for sm_90, computed here ({r.tools_line}); the same as the package's "
                               "record.")
    other = dataclasses.replace(here, matches_record=False)
    assert "differs from the package's record" in other.provenance


def test_unknown_names_and_architectures():
    with pytest.raises(ValueError, match=r"only: \['gemm_v9'\] not in the record"):
        static_record.recorded(["gemm_v9"])
    with pytest.raises(ValueError, match=r"arch='sm_80': the package records \['sm_75', 'sm_90'\]"):
        static_record.recorded(arch="sm_80")
    with pytest.raises(KeyError, match="'copy': not among"):
        static_record.recorded(["axpy"])["copy"]


def test_the_table_in_text_and_markdown():
    reports = static_record.recorded(["gemm_v3_regblock", "sum_v1_shared"]).reports
    cols = ("kernel", "regs", "blocks/SM", "in flight B", "FFMA share")
    text = static_report.format_table(reports, columns=cols, style="text").splitlines()
    assert text[0].split() == ["kernel", "regs", "blocks/SM", "in", "flight", "B", "FFMA", "share"]
    assert text[2].split() == ["gemm_v3_regblock", "196", "1", "4", "48%"]
    assert text[3].split() == ["sum_v1_shared", "28", "8", "32", "-"]
    md = static_report.format_table(reports).splitlines()
    assert md[0].startswith("| kernel | threads | regs |") and md[2].startswith("| gemm_v3_regblock | 256 | 196 |")
    failed = dataclasses.replace(reports[0], error="ptxas: boom")
    assert static_report.format_table([failed]).splitlines()[2] == "| gemm_v3_regblock | error: ptxas: boom |"
    with pytest.raises(ValueError, match=r"columns \['registers'\] / style 'html'"):
        static_report.format_table(reports, columns=("registers",), style="html")


def test_the_cli_prints_the_record_without_the_tools(no_tools, capsys):
    assert cli.main(["kernels", "report", "--only", "gemm_v3_regblock"]) == 3
    assert "--recorded prints the report recorded in the package" in capsys.readouterr().err
    assert cli.main(["kernels", "report", "--recorded", "--only", "gemm_v3_regblock", "gemm_v8_prefetch"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Static report for sm_90, recorded in the package with ptxas ")
    assert "| gemm_v3_regblock | 256 | 196 |" in out and "| gemm_v8_prefetch |" in out.split("Predicted")[1]


def test_changed_lists_the_columns_one_step_moved():
    facts = static_record.recorded(["gemm_v4_fixed_loads", "gemm_v5_index32"])
    moved = static_report.changed(facts["gemm_v4_fixed_loads"], facts["gemm_v5_index32"])
    assert ("blocks/SM", "1", "2") in moved and all(c != "kernel" and a != b for c, a, b in moved)
    assert static_report.changed(facts["gemm_v5_index32"], facts["gemm_v5_index32"]) == []
    failed = dataclasses.replace(facts["gemm_v5_index32"], error="ptxas: boom")
    with pytest.raises(ValueError, match="gemm_v5_index32 failed to compile, no facts"):
        static_report.changed(facts["gemm_v4_fixed_loads"], failed)
