"""The simulator's figures: every topology and algorithm of the widget draws, the title states the simulated
time beside the closed form, and the ranks control either changes the figure or is disabled with its reason."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from scaledl.comm import netsim as N  # noqa: E402
from scaledl.comm import topology as T  # noqa: E402
from scaledl.comm import views as V  # noqa: E402
from scaledl.comm.cost import ALLREDUCE_ALGORITHMS  # noqa: E402


def _title(fig):
    return fig.axes[0].get_title(loc="left")


def _rank_rows(fig):
    return [int(t) for t in fig.axes[0].get_yticks()]


@pytest.mark.parametrize("topology", V.VIEW_TOPOLOGIES)
def test_every_topology_draws(topology):
    fig = V.allreduce_view("ring", ranks=5, size_MiB=4, topology=topology, chunks=2)
    title = _title(fig)
    assert title.startswith("ring all-reduce of 4 MiB on ") and "closed form" in title
    plt.close(fig)


@pytest.mark.parametrize("alg", ALLREDUCE_ALGORITHMS)
def test_every_algorithm_draws_and_a_uniform_switch_matches_its_closed_form(alg):
    fig = V.allreduce_view(alg, ranks=8, size_MiB=8, topology="switch")
    second_line = _title(fig).split("\n")[1]
    simulated, closed = second_line.removeprefix("simulated ").split(" ms, closed form ")
    if alg != "double_binary_tree":  # that closed form is the pipelined limit
        assert simulated == closed.split(" ms")[0]
    plt.close(fig)


@pytest.mark.parametrize("topology", V.VIEW_TOPOLOGIES)
def test_ranks_changes_the_figure_or_the_control_is_disabled_with_its_reason(topology):
    figs = {p: V.allreduce_view("ring", ranks=p, size_MiB=4, topology=topology) for p in (4, 12)}
    rows = {p: _rank_rows(f) for p, f in figs.items()}
    titles = {p: _title(f) for p, f in figs.items()}
    for f in figs.values():
        plt.close(f)
    disabled, description = V.ranks_control(topology)
    if topology in V.FIXED_RANKS:
        p_fixed, why = V.FIXED_RANKS[topology]
        assert disabled and why in description
        assert rows[4] == rows[12] == list(range(p_fixed))  # the machine's own ranks, whatever is asked
        assert f"{p_fixed} ranks, fixed by the topology" in titles[4]
    else:
        assert not disabled and description == "ranks"
        assert rows[4] == list(range(4)) and rows[12] == list(range(12))
        assert titles[4] != titles[12]


def test_the_explorer_disables_and_relabels_the_ranks_slider_with_the_topology():
    ex = V.allreduce_explorer()
    ranks, topology = ex.controls["ranks"], ex.controls["topology"]
    assert topology.value == "SVAIL PCIe node" and ranks.disabled and "node's 8 GPUs" in ranks.description
    topology.value = "ring with a slow link"
    assert not ranks.disabled and ranks.description == "ranks"
    topology.value = "2 NVSwitch nodes + InfiniBand"
    assert ranks.disabled and ranks.description == "ranks fixed: 2 nodes of 8 GPUs"
    fig = ex.render(ranks=3)
    assert "16 ranks" in _title(fig)
    plt.close(fig)


def test_timeline_rows_legend_and_errors():
    res = N.simulate_allreduce("binomial", T.switch(3, bandwidth_Bps=1e9, latency_s=0), 1e6, gamma=1e-10)
    fig = V.timeline_figure(res, title="t")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "rank" and len(ax.collections) > 0
    assert ax.get_xlim()[0] == 0  # no empty stretch before the collective starts
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["send", "recv", "reduce"]
    plt.close(fig)
    no_gamma = N.simulate_allreduce("ring", T.switch(3, bandwidth_Bps=1e9, latency_s=0), 1e6)
    fig = V.timeline_figure(no_gamma)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["send", "recv"]
    plt.close(fig)
    with pytest.raises(ValueError, match=r"topology: unknown topology 'torus'"):
        V.allreduce_view(topology="torus")
    with pytest.raises(ValueError, match=r"topology: unknown topology 'torus'"):
        V.ranks_control("torus")


def test_bytes_and_seconds_axes_label_powers_in_units():
    fig, ax = plt.subplots()
    ax.loglog(np.logspace(0, 30, 10, base=2), np.logspace(-6, 0, 10))
    ax.set_xlim(1, 2**30)
    ax.set_ylim(1e-6, 1)
    V.bytes_axis(ax.xaxis)
    V.seconds_axis(ax.yaxis)
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1 B", "32 B", "1 KiB", "32 KiB", "1 MiB", "32 MiB",
                                                            "1 GiB"]
    assert list(ax.get_xticks()) == [2.0**e for e in range(0, 31, 5)]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms",
                                                            "1 s"]
    plt.close(fig)
    with pytest.raises(ValueError, match=r"step: expected an int >= 1.*got 0"):
        V.bytes_axis(ax.xaxis, step=0)
