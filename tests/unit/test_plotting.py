"""Point labels placed by scaledl.plotting.label_points stay clear of each other and of the markers."""

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scaledl.numerics.systems import compare  # noqa: E402
from scaledl.perf import roofline as R  # noqa: E402
from scaledl.plotting import label_points  # noqa: E402
from scaledl.perf import views as PV

# Chapter 07's cost-accuracy scatter: e3m2/e5m2 and e2m3/e4m3 sit side by side at equal error.
CH07_FORMATS = ["int4", "int8", "e2m1", "e3m2", "e2m3", "e4m3", "e5m2", "lns4.3", "fp16", "bf16"]


def _boxes(fig, texts):
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in texts]


def _overlapping_pairs(boxes):
    return [(i, j) for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2) if a.overlaps(b)]


def _ch07_scatter():
    rows = compare(CH07_FORMATS)
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [r["multiplier_cost"] for r in rows]
    ys = [100 * r["worst_rel_err_normal"] for r in rows]
    sizes = [20 * r["bits"] for r in rows]
    ax.scatter(xs, ys, s=sizes)
    ax.set_xscale("log")
    ax.set_yscale("log")
    return fig, ax, xs, ys, [r["format"] for r in rows], sizes


def test_fixed_offsets_overlap_on_chapter_07s_scatter():
    """The bug this module fixes: one offset for every label prints e3m2 over e5m2 (the check can fail)."""
    fig, ax, xs, ys, labels, _ = _ch07_scatter()
    texts = [ax.annotate(s, (x, y), textcoords="offset points", xytext=(5, 3)) for x, y, s in zip(xs, ys, labels)]
    fig.draw_without_rendering()
    assert _overlapping_pairs(_boxes(fig, texts))
    plt.close(fig)


def test_labels_clear_of_each_other_the_markers_and_the_frame_on_chapter_07s_scatter():
    fig, ax, xs, ys, labels, sizes = _ch07_scatter()
    texts = label_points(ax, xs, ys, labels, sizes=sizes, fontsize=10)
    assert [t.get_text() for t in texts] == labels
    boxes = _boxes(fig, texts)
    assert _overlapping_pairs(boxes) == []
    frame = ax.get_window_extent(fig.canvas.get_renderer())
    centres = [ax.transData.transform((x, y)) for x, y in zip(xs, ys)]
    for i, box in enumerate(boxes):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, labels[i]
        for j, (cx, cy) in enumerate(centres):
            if j != i:
                assert not box.contains(cx, cy), (labels[i], labels[j])
    plt.close(fig)


def test_each_label_is_nearest_its_own_point():
    """A reader pairs a label with the closest marker: no label may sit nearer another point than its own."""
    fig, ax, xs, ys, labels, sizes = _ch07_scatter()
    boxes = _boxes(fig, label_points(ax, xs, ys, labels, sizes=sizes))

    def dist(box, p):
        return ((max(box.x0 - p[0], 0, p[0] - box.x1)) ** 2 + (max(box.y0 - p[1], 0, p[1] - box.y1)) ** 2) ** 0.5

    centres = [ax.transData.transform((x, y)) for x, y in zip(xs, ys)]
    for i, box in enumerate(boxes):
        assert all(dist(box, centres[i]) <= dist(box, c) for c in centres), labels[i]
    plt.close(fig)


def test_chapter_03_roofline_labels_do_not_overlap():
    v100, h100 = R.roofline_of("V100 SXM2", "fp16"), R.roofline_of("H100 SXM", "fp16")
    points = [R.Point(f"4096 layer, batch {b}", R.dense_layer(4096, 4096, b, "fp16").intensity_FLOP_per_byte)
              for b in (1, 16, 128, 1024)]
    fig = PV.plot_roofline([v100, h100], points, title="Dense 4096x4096 fp16 layers on V100 and H100")
    ax = fig.axes[0]
    boxes = _boxes(fig, ax.texts)
    assert len(boxes) == 4 and _overlapping_pairs(boxes) == []
    legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert not any(b.overlaps(legend) for b in boxes)
    plt.close(fig)


@pytest.mark.parametrize("kwargs, message", [
    (dict(xs=[1, 2], ys=[1], labels=["a", "b"]), r"xs, ys and labels must have the same length, got 2, 1 and 2"),
    (dict(xs=[1], ys=[1], labels=["a"], sizes=[1, 2]), r"sizes must be one number or one per point \(1\), got 2"),
    (dict(xs=[1], ys=[1], labels=["a"], sizes=-4), r"sizes must be marker areas >= 0 in points\^2, got \[-4.0\]"),
])
def test_bad_input(kwargs, message):
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match=message):
        label_points(ax, **kwargs)
    plt.close(fig)
