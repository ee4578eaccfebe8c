"""The chapter-11 study helpers: summaries, the table, Han et al.'s figures, bad input."""

import pytest

from scaledl.sparsity import study
from scaledl.sparsity import views as SV


def test_sweep_summary_mean_and_half_range():
    assert study.sweep_summary([{"accuracy": 0.9}, {"accuracy": 0.96}, {"accuracy": 0.93}]) == (93.0, 3.0)
    with pytest.raises(ValueError, match="at least one"):
        study.sweep_summary([])


def test_sweep_table_columns_per_network():
    rows = [dict(network="a", seed=0, criterion="dense", sparsity=0.0, retrained=False, accuracy=0.9),
            dict(network="a", seed=0, criterion="magnitude", sparsity=0.5, retrained=True, accuracy=0.8),
            dict(network="b", seed=0, criterion="dense", sparsity=0.0, retrained=False, accuracy=0.7),
            dict(network="b", seed=0, criterion="magnitude", sparsity=0.9, retrained=False, accuracy=0.6)]
    text = study.sweep_table(rows)
    first, second = text.split("b: dense")
    assert "50 %" in first and "90 %" not in first and "90 %" in second and "50 %" not in second


def test_han2015_ratios_match_the_paper_rounding():
    for before, after, paper in study.HAN2015_PARAMETERS.values():
        assert round(before / after) == paper


def test_bad_network_and_sparsity():
    with pytest.raises(ValueError, match="network='resnet'"):
        study.trained_network("resnet")
    with pytest.raises(ValueError, match="sparsity"):
        study.sparsity_sweep("mlp", [1.0], seeds=())


def test_pruned_summary_counts():
    out = study.pruned_summary(0.5, 0.5, 0.5)
    assert abs(out["weight_density"] - 0.5) < 1e-12
    assert out["useful_multiplies"] <= out["weight_multiplies"] <= 0.5 + 1e-12
    assert 0.5 < out["accuracy"] <= 1.0


def test_pruning_view_returns_a_figure_naming_the_savings():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = SV.pruning_view(0.9, 0.9, 0.5, retrain_steps=0)
    try:
        assert isinstance(fig, matplotlib.figure.Figure)
        titles = [ax.get_title() for ax in fig.axes]
        assert any("Multiplies saved" in t for t in titles)
    finally:
        plt.close(fig)


def test_sweep_progress_bar_ticks_once_per_row_and_changes_nothing(capsys):
    args = ("mlp", [0.5])
    kw = dict(seeds=(0,), criteria=("magnitude",), retrain_steps=10)
    quiet = study.sparsity_sweep(*args, **kw)
    assert capsys.readouterr().err == ""  # off by default: nothing a notebook would store
    loud = study.sparsity_sweep(*args, **kw, progress=True)
    assert loud == quiet
    err = capsys.readouterr().err  # outside a notebook tqdm.auto is the console bar, on stderr
    assert "mlp sweep" in err and f"{len(quiet)}/{len(quiet)}" in err and len(quiet) == 3
    with pytest.raises(TypeError, match="progress: expected True or False, got 'yes'"):
        study.sparsity_sweep(*args, **kw, progress="yes")
