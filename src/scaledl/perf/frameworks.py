"""The deep-learning framework table of NVIDIA's 2018 slides, as data, with what it got wrong or what changed.

NVIDIA's slides "Deep Learning is an HPC Workload" (GTC Munich, 2018) list eleven frameworks and, for each,
a productivity layer, whether NVIDIA optimises it, how it runs on several GPUs, whether it runs on several
nodes with NCCL, and whether it trains in mixed precision. :data:`SLIDE_TABLE` holds the cells exactly as the
slide prints them (an empty cell is ``""``); :data:`CORRECTIONS` holds, per cell, what the slide got wrong at
the time or what has changed since, each with its source. :func:`table_markdown` renders both.

>>> len(SLIDE_TABLE), SLIDE_TABLE[2].framework, SLIDE_TABLE[2].multi_node_nccl == ""
(11, 'Chainer', True)
>>> sorted({c.kind for c in CORRECTIONS})
['outdated', 'wrong in 2018']
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["FrameworkRow", "Correction", "Release", "COLUMNS", "SLIDE_TABLE", "RELEASES", "NO_RELEASE_SINCE",
           "CORRECTIONS", "corrections_for", "row", "stopped", "without_releases", "table_markdown"]


@dataclass(frozen=True)
class FrameworkRow:
    """One row of the slide, cells verbatim ("" where the slide leaves the cell empty)."""

    framework: str
    productivity_layer: str
    nv_optimized: str
    multi_gpu: str
    multi_node_nccl: str
    mixed_precision: str


# The slide's column headings, in order, keyed by the FrameworkRow field that holds them.
COLUMNS = {"framework": "FW", "productivity_layer": "Productivity layer", "nv_optimized": "NV Optimized",
           "multi_gpu": "Multi-GPU", "multi_node_nccl": "Multi-Node with NCCL", "mixed_precision": "Mixed Precision"}

# NVIDIA, "Deep Learning is an HPC Workload", slides, GTC Munich 2018: the "Deep learning frameworks" table.
SLIDE_TABLE = (
    FrameworkRow("Caffe", "DIGITS", "Yes", "NCCL", "", "Yes"),
    FrameworkRow("Caffe 2", "", "Yes", "NCCL", "WIP", "WIP"),
    FrameworkRow("Chainer", "", "WIP", "proprietary", "", "No"),
    FrameworkRow("Cognitive Toolkit", "", "Yes", "NCCL/MPI", "Yes", "No"),
    FrameworkRow("DL4J", "", "No", "N/A", "", "No"),
    FrameworkRow("Matlab", "Own", "No", "N/A", "", "No"),
    FrameworkRow("MXNet", "", "Yes", "NCCL/ peer to peer", "", "WIP"),
    FrameworkRow("PyTorch", "", "Yes", "NCCL", "WIP", "WIP"),
    FrameworkRow("TensorFlow", "Keras/DIGITS", "Yes", "NCCL/ Proprietary", "Sockets/ GRPC", "WIP"),
    FrameworkRow("Theano", "Keras", "Yes", "Limited", "", "No"),
    FrameworkRow("Torch", "DIGITS", "Yes", "Yes", "", "No"),
)


@dataclass(frozen=True)
class Correction:
    """What one cell (or, with ``column="status"``, the whole row) should say, and why.

    ``kind`` is ``"wrong in 2018"`` when sources from before the slides contradict the cell, ``"outdated"``
    when the cell was fair in 2018 and has changed since. The slide has no status column: a ``"status"``
    correction records that a framework stopped (see :func:`stopped`), with the date and its source.
    """

    framework: str
    column: str
    kind: str
    short: str  # what the table cell shows
    text: str  # the note under the table
    source: str


@dataclass(frozen=True)
class Release:
    """The latest release of a framework that this book found (``note``: anything else its source says)."""

    framework: str
    name: str
    year: int
    source: str
    note: str = ""


# "No release for years", made a rule: a framework whose latest release came out before NO_RELEASE_SINCE has
# stopped. 2021 is five years before the table was checked (2026). The rule is applied to every row that stopped
# for no other reason (discontinued, merged, in maintenance only, retired: the status corrections below), so each
# of those rows has its latest release here; without_releases() applies it, and CORRECTIONS gets its status notes.
NO_RELEASE_SINCE = 2021
RELEASES = (
    Release("Caffe", "1.0", 2017, "BVLC/caffe on GitHub: its tag 1.0 (April 2017) is the last release",
            "its repository's last change dates from February 2020"),
    Release("DL4J", "1.0.0-M2.1", 2022, "Maven Central, org.deeplearning4j:deeplearning4j-core 1.0.0-M2.1, "
            "published August 2022, the latest release"),
    # For these three only a recent release was looked up, not the latest (offline): the rule needs only one
    # release after its cut-off, so "or later" is what the book can say.
    Release("Matlab", "R2025a or later", 2025, "MathWorks, MATLAB release notes: two releases a year, R2025a in 2025"),
    Release("PyTorch", "2.7 or later", 2025, "pytorch/pytorch on GitHub, release v2.7.0, 2025"),
    Release("TensorFlow", "2.19 or later", 2025, "tensorflow/tensorflow on GitHub, release v2.19.0, 2025"),
)


def without_releases(since: int = NO_RELEASE_SINCE) -> list[str]:
    """The frameworks of :data:`RELEASES` whose latest release came out before the year ``since``.

    >>> without_releases(), without_releases(2023)
    (['Caffe'], ['Caffe', 'DL4J'])
    """
    return [r.framework for r in RELEASES if r.year < since]


def _release_status(since: int) -> tuple:
    return tuple(Correction(r.framework, "status", "outdated", f"no release since {r.name}, {r.year}",
                            f"latest release {r.name} ({r.year}), none since the start of {since} (the book's cut-off "
                            f"for 'no release for years')"
                            + (f"; {r.note}" if r.note else ""), r.source)
                 for r in RELEASES if r.framework in without_releases(since))


CORRECTIONS = (
    Correction("Chainer", "multi_node_nccl", "wrong in 2018",
               "Yes (ChainerMN)",
               "Yes: ChainerMN (2017) all-reduces over NCCL and MPI; the slides' own 'ImageNet in 15 minutes' "
               "ran on 1,024 GPUs in 128 nodes with it",
               "Akiba, Fukuda and Suzuki, 'ChainerMN: Scalable Distributed Deep Learning Framework', "
               "LearningSys workshop at NIPS 2017; Akiba, Suzuki and Fukuda, arXiv:1711.04325, 2017"),
    Correction("TensorFlow", "multi_node_nccl", "wrong in 2018",
               "Yes (Horovod)",
               "Yes, through Horovod (open-sourced by Uber in 2017): ring all-reduce across nodes with NCCL",
               "Sergeev and Del Balso, 'Horovod: fast and easy distributed deep learning in TensorFlow', "
               "arXiv:1802.05799, 2018"),
    Correction("PyTorch", "multi_node_nccl", "wrong in 2018",
               "Yes (0.4.0, April 2018)",
               "Yes: PyTorch 0.4.0 (April 2018) shipped torch.distributed's NCCL 2 backend ('nccl'), which runs "
               "collectives across nodes, and DistributedDataParallel trains over it; the slide, shown in "
               "October 2018, was out of date here",
               "PyTorch 0.4.0 release notes, April 2018, 'Distributed Training: NCCL2 backend'"),
    Correction("PyTorch", "mixed_precision", "outdated",
               "Yes (1.6, 2020)",
               "Yes: automatic mixed precision (torch.cuda.amp) since PyTorch 1.6, 2020",
               "PyTorch 1.6 release notes, 2020"),
    Correction("TensorFlow", "mixed_precision", "outdated",
               "Yes (2.4, 2020)",
               "Yes: the Keras mixed-precision API (tf.keras.mixed_precision), stable since TensorFlow 2.4, 2020",
               "TensorFlow 2.4 release notes, 2020"),
    Correction("Caffe 2", "status", "outdated",
               "merged into PyTorch, 2018",
               "merged into PyTorch in 2018; no longer a separate framework",
               "PyTorch blog, 'The road to 1.0: production ready PyTorch', May 2018"),
    Correction("Chainer", "status", "outdated",
               "maintenance only, 2019",
               "in maintenance only since v7: Preferred Networks moved its research to PyTorch in December 2019",
               "Preferred Networks, announcement of 5 December 2019"),
    Correction("Cognitive Toolkit", "status", "outdated",
               "last main release 2.7, 2019",
               "CNTK 2.7 (2019) was announced as its last main release", "CNTK 2.7 release notes, 2019"),
    Correction("Theano", "status", "outdated",
               "discontinued, 2017",
               "development stopped after Theano 1.0 (November 2017), as MILA announced in September 2017; "
               "already ended when the slides were shown",
               "Y. Bengio, message to the theano-users list, 28 September 2017"),
    Correction("MXNet", "status", "outdated",
               "retired, 2023",
               "the Apache MXNet project was retired to the Apache Attic in 2023", "Apache Attic, 2023"),
    Correction("Torch", "status", "outdated",
               "not in active development, 2018",
               "not in active development, as the torch7 README has said since July 2018 (its C libraries "
               "live on, rewritten, as PyTorch's ATen); already so when the slides were shown",
               "torch/torch7 README on GitHub, section 'Development Status', added 2 July 2018"),
) + _release_status(NO_RELEASE_SINCE)

_KINDS = ("wrong in 2018", "outdated")
_FIELDS = tuple(f.name for f in fields(FrameworkRow))
assert all(c.kind in _KINDS and c.column in _FIELDS + ("status",) for c in CORRECTIONS)


def stopped() -> list[str]:
    """The slide's frameworks that have stopped, in the slide's order: those with a ``status`` correction
    (discontinued, merged into another framework, in maintenance only, retired, or with no release since the
    start of :data:`NO_RELEASE_SINCE`, five years before the table was checked), each with its source in
    :data:`CORRECTIONS`. DL4J, whose latest release is from 2022, is not among them; Caffe (2017) is.

    >>> len(stopped()), stopped()[-1]
    (7, 'Torch')
    """
    named = {c.framework for c in CORRECTIONS if c.column == "status"}
    return [r.framework for r in SLIDE_TABLE if r.framework in named]


def row(framework: str) -> FrameworkRow:
    """The slide's row for ``framework`` (its name as the slide spells it).

    Raises:
        ValueError: a framework the slide does not list.
    """
    for r in SLIDE_TABLE:
        if r.framework == framework:
            return r
    raise ValueError(f"framework={framework!r} is not in the slide's table; expected one of "
                     f"{', '.join(r.framework for r in SLIDE_TABLE)}")


def corrections_for(framework: str) -> list[Correction]:
    """The corrections of one row, in :data:`CORRECTIONS` order (``row`` checks the name)."""
    row(framework)
    return [c for c in CORRECTIONS if c.framework == framework]


def table_markdown() -> str:
    """The slide's table as markdown, a corrected cell shown as ``slide -> correction [n]`` and a status column,
    followed by the numbered notes with their sources."""
    notes: list[str] = []

    def mark(c: Correction) -> str:
        notes.append(f"[{len(notes) + 1}] *{c.kind}*: {c.text}. Source: {c.source}.")
        return f"[{len(notes)}]"

    head = [COLUMNS[f] for f in _FIELDS] + ["Status since"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in SLIDE_TABLE:
        cells = []
        for f in _FIELDS:
            value = getattr(r, f) or "(empty)"
            fixes = [c for c in CORRECTIONS if c.framework == r.framework and c.column == f]
            cells.append(value + "".join(f" -> **{c.short}** {mark(c)}" for c in fixes))
        status = [c for c in CORRECTIONS if c.framework == r.framework and c.column == "status"]
        cells.append(" ".join(f"{c.short} {mark(c)}" for c in status))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""] + [n + "  " for n in notes])
