import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from scaledl.widgets.tour import launch_geometry, launch_view  # noqa: E402


@pytest.mark.parametrize("n, tpb, blocks, idle", [(100, 32, 4, 28), (128, 32, 4, 0), (1, 1024, 1, 1023),
                                                 (1025, 1024, 2, 1023)])
def test_geometry(n, tpb, blocks, idle):
    g = launch_geometry(n, tpb)
    assert (g["blocks"], g["idle_threads"]) == (blocks, idle)
    assert g["threads"] == g["blocks"] * tpb >= n


@pytest.mark.parametrize("args, message", [((0, 32), "n must be a positive int, got 0"),
                                           ((10, 2048), "exceeds CUDA's limit of 1024"),
                                           ((10, 3.0), "threads_per_block must be a positive int, got 3.0")])
def test_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        launch_geometry(*args)


def test_view_draws_one_row_per_block():
    fig = launch_view(100, 32)
    assert "4 blocks, 28 idle threads" in fig.axes[0].get_title()
