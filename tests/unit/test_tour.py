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
    ax = fig.axes[0]
    assert "4 blocks" in ax.get_title() and "28 idle threads" in ax.get_title()
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"block {b}" for b in range(4)]


@pytest.mark.parametrize("n, tpb", [(100, 32), (2000, 32), (5000, 1024)])
def test_view_axis_starts_at_thread_0_and_the_title_fits(n, tpb):
    """A thread index is never negative, so the x axis starts at 0; the title stays inside the figure."""
    fig = launch_view(n, tpb)
    ax = fig.axes[0]
    assert ax.get_xlim() == (0, tpb)
    renderer = fig.canvas.get_renderer()
    title, frame = ax.title.get_window_extent(renderer), fig.bbox
    assert frame.x0 <= title.x0 and title.x1 <= frame.x1 and title.y1 <= frame.y1
