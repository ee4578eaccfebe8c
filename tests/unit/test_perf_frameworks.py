"""The framework table of chapter 19: the slide's cells verbatim, and every correction attached to a real cell."""

import pytest

from scaledl.perf import frameworks as fw

SEED = "/work/shared/seeds/003_1082ca36444b108d.txt"


def test_table_matches_the_slide_cell_for_cell():
    # the slide's rows as tab-separated lines (the seed is the source; the test reads it when present)
    try:
        text = open(SEED, encoding="utf-8").read()
    except FileNotFoundError:
        pytest.skip("source document not present")
    lines = text.split("FW\tProductivity layer")[1].split("\n\n")[0].splitlines()[1:]
    rows = [tuple(line.split("\t")) for line in lines]
    assert rows == [tuple(vars(r).values()) for r in fw.SLIDE_TABLE]


def test_chainer_row_and_its_correction():
    r = fw.row("Chainer")
    assert (r.multi_gpu, r.multi_node_nccl, r.mixed_precision) == ("proprietary", "", "No")
    fixes = fw.corrections_for("Chainer")
    assert [(c.column, c.kind) for c in fixes] == [("multi_node_nccl", "wrong in 2018"), ("status", "outdated")]
    assert "1711.04325" in fixes[0].source  # the slides' own ImageNet-in-15-minutes paper


def test_every_correction_names_a_listed_framework_and_a_source():
    names = {r.framework for r in fw.SLIDE_TABLE}
    for c in fw.CORRECTIONS:
        assert c.framework in names and c.source and c.short


def test_markdown_has_one_line_per_row_and_every_note():
    md = fw.table_markdown()
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + len(fw.SLIDE_TABLE)
    assert all(len(line.split(" | ")) == 7 for line in table)  # 7 columns, no cell with a stray "|"
    for i in range(1, len(fw.CORRECTIONS) + 1):
        assert f"[{i}]" in md
    assert "Sockets/ GRPC -> **Yes (Horovod)**" in md


def test_unknown_framework_is_named():
    with pytest.raises(ValueError, match="framework='Jax' is not in the slide's table"):
        fw.row("Jax")


def test_pytorch_multi_node_was_wrong_already_in_2018():
    # PyTorch 0.4.0 (April 2018) shipped the NCCL 2 backend; the slides were shown in October 2018
    fix = [c for c in fw.corrections_for("PyTorch") if c.column == "multi_node_nccl"]
    assert len(fix) == 1 and fix[0].kind == "wrong in 2018"
    assert "0.4.0" in fix[0].short and "0.4.0" in fix[0].source and "1.0" not in fix[0].short
    wrong = [c.framework for c in fw.CORRECTIONS if c.kind == "wrong in 2018"]
    assert wrong == ["Chainer", "TensorFlow", "PyTorch"]
    assert "WIP -> **Yes (0.4.0, April 2018)**" in fw.table_markdown()


def test_seven_of_the_eleven_frameworks_stopped_each_with_a_source():
    gone = fw.stopped()
    assert gone == ["Caffe", "Caffe 2", "Chainer", "Cognitive Toolkit", "MXNet", "Theano", "Torch"]
    for name in gone:
        (status,) = [c for c in fw.corrections_for(name) if c.column == "status"]
        assert status.source and status.short
    assert "torch7 README" in fw.corrections_for("Torch")[0].source
    assert "1.0" in fw.corrections_for("Caffe")[0].short
    # still going: the four without a status note
    assert sorted({r.framework for r in fw.SLIDE_TABLE} - set(gone)) == ["DL4J", "Matlab", "PyTorch", "TensorFlow"]


def test_no_release_for_years_is_one_cut_off_applied_to_every_row():
    # the rule: no release since the start of 2021 (five years before 2026); Caffe's 1.0 (2017) is under it, DL4J's
    # 1.0.0-M2.1 (2022) is not, so Caffe counts as stopped and DL4J does not
    assert fw.NO_RELEASE_SINCE == 2021
    assert fw.without_releases() == ["Caffe"]
    releases = {r.framework: r for r in fw.RELEASES}
    assert (releases["Caffe"].year, releases["DL4J"].year) == (2017, 2022)
    assert "Caffe" in fw.stopped() and "DL4J" not in fw.stopped()
    # every row that has not stopped for another reason has its latest release on record, so the rule is applied
    # to all of them, and a row under the cut-off has a status note made from its release
    by_hand = {c.framework for c in fw.CORRECTIONS if c.column == "status"} - set(fw.without_releases())
    assert {r.framework for r in fw.SLIDE_TABLE} - by_hand == set(releases)
    for name in releases:
        status = [c for c in fw.corrections_for(name) if c.column == "status"]
        assert len(status) == (name in fw.without_releases())
    (caffe,) = [c for c in fw.corrections_for("Caffe") if c.column == "status"]
    assert "2017" in caffe.short and "2021" in caffe.text and "1.0" in caffe.source
    # a later cut-off would take DL4J too: the list follows the data, not a hand-made choice
    assert fw.without_releases(2023) == ["Caffe", "DL4J"]
