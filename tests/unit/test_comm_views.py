"""The simulator's figures: every topology and algorithm of the widget draws, and the title states the
simulated time beside the closed form."""

import matplotlib
import pytest

matplotlib.use("Agg")

from scaledl.comm import netsim as N  # noqa: E402
from scaledl.comm import topology as T  # noqa: E402
from scaledl.comm import views as V  # noqa: E402
from scaledl.comm.cost import ALLREDUCE_ALGORITHMS  # noqa: E402


@pytest.mark.parametrize("topology", V.VIEW_TOPOLOGIES)
def test_every_topology_draws(topology):
    fig = V.allreduce_view("ring", ranks=5, size_MiB=4, topology=topology, chunks=2)
    title = fig.axes[0].get_title()
    assert title.startswith("ring all-reduce, 4 MiB on ") and "closed form" in title
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("alg", ALLREDUCE_ALGORITHMS)
def test_every_algorithm_draws_and_a_uniform_switch_matches_its_closed_form(alg):
    fig = V.allreduce_view(alg, ranks=8, size_MiB=8, topology="switch")
    title = fig.axes[0].get_title()
    simulated, closed = title.split(": ")[1].split(" ms (closed form ")
    if alg != "double_binary_tree":  # that closed form is the pipelined limit
        assert simulated == closed.split(" ms")[0]
    matplotlib.pyplot.close(fig)


def test_timeline_rows_and_errors():
    res = N.simulate_allreduce("binomial", T.switch(3, bandwidth_Bps=1e9, latency_s=0), 1e6, gamma=1e-10)
    fig = V.timeline_figure(res, title="t")
    assert fig.axes[0].get_ylabel() == "rank" and len(fig.axes[0].collections) > 0
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match=r"unknown topology 'torus'"):
        V.allreduce_view(topology="torus")
