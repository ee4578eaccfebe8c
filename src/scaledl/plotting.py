"""Point labels that keep clear of each other, of the markers, the legend and the lines on the axes.

Matplotlib's ``annotate`` puts every label at the same offset from its point, so two points close together
get labels printed over each other (chapter 07's formats at nearly equal cost, chapter 03's roofline points
near the ridge). :func:`label_points` tries a few places around each point and keeps the first that covers
nothing, or failing that the one that covers least.
"""

from __future__ import annotations

import math

# Places tried around a point, in order: (dx, dy) in points, then the text's alignment. Right of the point
# first (how a reader scans a scatter plot), above before below.
PLACES = (
    (5, 3, "left", "bottom"), (5, -3, "left", "top"),
    (-5, 3, "right", "bottom"), (-5, -3, "right", "top"),
    (0, 6, "center", "bottom"), (0, -6, "center", "top"),
)
DISTANCES = (1, 2.5)  # the places above, then the same directions farther out

# What a place costs per thing its text box covers: another label or a marker hides information, text
# cut off by the axes' edge or under the legend too; a label nearer another point than its own misleads (the
# reader pairs a label with the closest marker); a line running through the text only makes it harder to read.
COST_LABEL, COST_MARKER, COST_OUTSIDE, COST_LEGEND, COST_NEARER_OTHER, COST_LINE = 100, 100, 100, 50, 50, 1
DEFAULT_MARKER_AREA_PT2 = 36.0  # scatter's default size (rcParams["lines.markersize"] ** 2)


def label_points(ax, xs, ys, labels, *, sizes=None, fontsize: float = 9, **text_kw) -> list:
    """Label each point ``(xs[i], ys[i])`` with ``labels[i]`` where the text overlaps as little as possible.

    Call it after the axes' scales, limits, labels and legend are set (it draws the figure once to measure
    text). Points are placed in the order given, so list the ones whose label matters most first.

    Args:
        ax: the Matplotlib axes holding the points.
        xs, ys, labels: equal-length sequences; ``xs``/``ys`` in data coordinates.
        sizes: the markers' areas in points^2 as given to ``scatter(s=...)`` (one number or one per point);
            default 36, scatter's own default.
        fontsize, text_kw: passed on to ``ax.annotate``.

    Returns:
        The Annotation of each label, in the order given.

    Raises:
        ValueError: when ``xs``, ``ys``, ``labels`` (and ``sizes``, if a sequence) differ in length, or a
            size is negative.
    """
    from matplotlib.transforms import Bbox

    xs, ys, labels = list(xs), list(ys), [str(s) for s in labels]
    if not (len(xs) == len(ys) == len(labels)):
        raise ValueError(f"xs, ys and labels must have the same length, got {len(xs)}, {len(ys)} and "
                         f"{len(labels)}")
    if sizes is None:
        sizes = [DEFAULT_MARKER_AREA_PT2] * len(xs)
    elif isinstance(sizes, (int, float)):
        sizes = [float(sizes)] * len(xs)
    else:
        sizes = [float(s) for s in sizes]
        if len(sizes) != len(xs):
            raise ValueError(f"sizes must be one number or one per point ({len(xs)}), got {len(sizes)}")
    if any(not s >= 0 for s in sizes):
        raise ValueError(f"sizes must be marker areas >= 0 in points^2, got {sizes!r}")

    fig = ax.figure
    fig.draw_without_rendering()  # settles limits and layout, so display coordinates are final
    renderer = fig.canvas.get_renderer()
    px_per_pt = fig.dpi / 72.0

    markers, centres = [], []
    for x, y, s in zip(xs, ys, sizes):
        cx, cy = ax.transData.transform((x, y))
        r = math.sqrt(s) / 2 * px_per_pt
        markers.append(Bbox.from_bounds(cx - r, cy - r, 2 * r, 2 * r))
        centres.append((cx, cy))
    lines = [line.get_transform().transform_path(line.get_path()) for line in ax.get_lines()]
    legend = ax.get_legend()
    legend_box = legend.get_window_extent(renderer) if legend is not None else None
    frame = ax.get_window_extent(renderer)

    def cost(box, own: int) -> int:
        c = COST_LABEL * sum(box.overlaps(b) for b in placed)
        c += COST_MARKER * sum(box.overlaps(m) for j, m in enumerate(markers) if j != own)
        c += COST_OUTSIDE * (not (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0
                                  and box.y1 <= frame.y1))
        c += COST_LEGEND * (legend_box is not None and box.overlaps(legend_box))
        c += COST_LINE * sum(path.intersects_bbox(box, filled=False) for path in lines)
        mine = _distance(box, centres[own])
        c += COST_NEARER_OTHER * sum(_distance(box, p) < mine for j, p in enumerate(centres) if j != own)
        return c

    placed, annotations = [], []
    for i, (x, y, text) in enumerate(zip(xs, ys, labels)):
        r_pt = math.sqrt(sizes[i]) / 2  # start outside this point's own marker
        best = None
        for k in DISTANCES:
            for dx, dy, ha, va in PLACES:
                off = (math.copysign(abs(dx) * k + r_pt, dx) if dx else 0.0,
                       math.copysign(abs(dy) * k + r_pt, dy) if dy else 0.0)
                ann = ax.annotate(text, (x, y), xytext=off, textcoords="offset points", ha=ha, va=va,
                                  fontsize=fontsize, **text_kw)
                box = ann.get_window_extent(renderer).padded(px_per_pt)
                c = cost(box, i)
                if best is None or c < best[0]:
                    if best is not None:
                        best[1].remove()
                    best = (c, ann, box)
                else:
                    ann.remove()
                if c == 0:
                    break
            if best[0] == 0:
                break
        placed.append(best[2])
        annotations.append(best[1])
    return annotations


def _distance(box, point) -> float:
    """Distance in pixels from ``point`` (x, y) to the nearest point of ``box`` (0 inside it)."""
    x, y = point
    dx = max(box.x0 - x, 0.0, x - box.x1)
    dy = max(box.y0 - y, 0.0, y - box.y1)
    return math.hypot(dx, dy)
