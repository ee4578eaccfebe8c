"""Every GPU figure a dated record in the book states is in a committed raw record of the run it cites.

Committed notebook outputs are the simulator's, so what a GPU measured reaches the book as typed markdown: a
cell opening with ``**Measured on an NVIDIA H200 (2026-11-26).**``, then the device, driver and versions and a
link to the run's folder ``docs/gpu-runs/<date>-<device>/``, then a table and a few sentences. Typed numbers
can be mistyped, or come from an output that was never kept (the first run's executed notebooks were not
committed, and about 88 figures typed from them had no record). This test holds each such cell against the
files of its run.

Which cells: every markdown cell of the chapters and labs (solutions and student copies) that opens with
``**Measured on`` (a dated record) or that cites a run folder (``docs/gpu-runs/<run>``) elsewhere.

The records: every file git does not ignore in the run's folder (logs, report.json, report.md, experiments.json,
nvidia-smi.txt, ...; of an executed notebook there, its outputs), except ``SUMMARY_FILES``: the folder's
README is written by hand from the records and from notebook outputs, so counting it would let a typed figure
vouch for itself.

Which numbers are checked:

* the opening line (device, memory, driver, versions): every number; a dotted version (``580.159.04``) must
  appear as written;
* tables: every cell but the first column (it names what was measured: a kernel, a size, a density) and the
  header row. A column whose header says ``datasheet`` holds datasheet figures (below); one whose header names
  a model quantity (``MODEL_COLUMNS``: an intensity, a count of multiplies, the record a row comes from) is
  computed by the notebook, not measured, and is skipped;
* prose: every number that carries a unit of measurement (``UNITS``: ms, us, TFLOP/s, GB/s, %, a factor
  written ``1.54x``, ...), a unit also reaching the numbers joined to it by ``/``, ``-``, ``to``, ``and``,
  ``against``, ``or`` or a comma (``0.440 and 0.460 ms``). Numbers without a unit (a batch, a hidden size, a
  count of steps, a section) describe the experiment, not its result, and so do the book's model figures in
  units no measurement here uses (an intensity in FLOP/B, an assumed latency in ns). Sizes written ``a x b``
  or ``n^k``, dates, code spans and link targets are not figures.

A number passes when

1. it is a record's number rounded to the digits shown: ``50.4`` matches 50.418 and ``50.40`` does not;
   ``1,200`` is 1200; a record may be in another unit of the same quantity (x1000 or /1000: GFLOP/s against
   TFLOP/s, ms against us), a percentage may be a record's fraction (x100), a factor ``0.35x`` a record's
   percentage;
2. or it is a datasheet figure of the run's device as ``scaledl.perf.hardware`` states it (peak rates,
   bandwidth, memory, power, SMs, the clock each peak is quoted at and each peak moved to another's clock), with
   the same changes of unit as in 1 (4,800 GB/s is 4.8 TB/s);
3. or it is a ratio computed from two numbers of the same sentence (prose) or the same table row, each of
   which passes by 1 or 2: ``1.816 / 0.814 = 2.23x``, ``16.3 %`` of cuBLAS's rate, a speedup. The test recomputes it,
   in either order, as a fraction or a percentage (x100), with the same rounding and units as in 1.

A figure of one or two significant digits can match a record by coincidence; the rule catches the failure
that happened, figures that are in no record at all (``test_figures_in_no_record_fail``).

Chapter 04's dated cell is edited by another hand and fails in places: those figures are listed in
``KNOWN_CHAPTER_04``, which must shrink as it is fixed (a listed figure that passes fails the test).
"""

from __future__ import annotations

import bisect
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared tracked module
from tracked import ROOT, tracked  # noqa: E402

RUNS = "docs/gpu-runs"
SUMMARY_FILES = {"README.md"}
TEXT_SUFFIXES = {".txt", ".log", ".md", ".json", ".xml", ".csv", ".ipynb"}
# a column header holding one of these is not a measurement: computed by the notebook, or naming a record
MODEL_COLUMNS = ("intensity", "multiplies", "record")
# a measured figure's units (an intensity in FLOP/B, a latency in ns, a size in MB are model figures in this book)
UNITS = (r"%", r"ms\b", r"us\b", r"µs\b", r"s\b", r"[TGM]FLOP/s", r"[TGM]B/s", r"steps/s", r"calls/s",
         r"nnz/row", r"[MGK]iB\b", r"GHz\b", r"registers?\b", r"warps?\b", r"cycles?\b")
CONNECTOR = re.compile(r"\s*(?:/|-|,|to|and|against|or)\s*$")

# Chapter 04 is being revised by another engineer; until then its dated cell (id a4a39b5d) states lab 02's time
# and rate, 10.7 ms and 12.86 TFLOP/s, which no raw record of docs/gpu-runs/2026-11-26-nvidia-h200 holds (only
# the run's README, typed from the lab's notebook output, which was not kept). The same cell's "1.6x" (lab 02's
# kernel over the same tiling with thread-dependent loops; 1.54x by the README's 12.86 against
# after-experiments2.log's 8.37) passes only by the coincidence the docstring warns of (Nsight Compute's IPC of
# 1.58), as do two figures of Simon Boehm's worklog (69 %, 94 %), a literature source: wrong or not this run's
# all the same. Remove the entry when chapter 04 is fixed.
KNOWN_CHAPTER_04 = {}

HEADER = re.compile(r"^\*\*Measured on an? (?P<device>[^(]+?) \((?P<date>\d{4}-\d\d-\d\d)\)\.\*\*")
RUN_LINK = re.compile(r"docs/gpu-runs/(?P<run>\d{4}-\d\d-\d\d-[\w.-]+?)(?=[/)\s`]|$)")
VERSION = re.compile(r"(?<![\w.])\d+(?:\.\d+){2,}(?![\w.]*\d)")
NUMBER = re.compile(r"(?<![\w.^/])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<x>x(?![\w]))?"
                    r"(?![\w^]|\.\d|,\d{3})")
RECORD_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


# ------------------------------------------------------------------------------------------------ records
@dataclass
class Records:
    """The numbers (sorted, for a range search) and the raw text of one run's records."""

    numbers: list[float]
    text: str
    datasheet: list[float] = field(default_factory=list)

    def has(self, value: float, decimals: int, scales=(1.0, 1e3, 1e-3), datasheet_only: bool = False) -> bool:
        half = 0.5 * 10.0 ** -decimals * (1 + 1e-9) + 1e-12
        pools = (self.datasheet,) if datasheet_only else (self.numbers, self.datasheet)
        for pool in pools:
            for k in scales:  # the record's value times k is what the book shows
                lo, hi = (value - half) / k, (value + half) / k
                lo, hi = min(lo, hi), max(lo, hi)
                i = bisect.bisect_left(pool, lo)
                if i < len(pool) and pool[i] <= hi:
                    return True
        return False


def _notebook_outputs(text: str) -> str:
    nb = json.loads(text)
    out = []
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            out.append("".join(o.get("text", "")))
            out.append("".join(o.get("data", {}).get("text/plain", "")))
    return "\n".join(out)


def record_text(run: str) -> str:
    """The concatenated text of the run's committed records (see the module docstring)."""
    files = [p for p in tracked(f"{RUNS}/{run}") if Path(p).name not in SUMMARY_FILES
             and Path(p).suffix in TEXT_SUFFIXES]
    parts = []
    for p in files:
        text = (ROOT / p).read_text(errors="replace")
        parts.append(_notebook_outputs(text) if p.endswith(".ipynb") else text)
    return "\n".join(parts)


def record_numbers(text: str) -> list[float]:
    values = set()
    for m in RECORD_NUMBER.finditer(text):
        s = m.group()
        values.add(float(s.replace(",", "")))
        if "," in s:  # "1,024" may also be two numbers of a list written without spaces
            values.update(float(part) for part in s.split(",") if part)
    return sorted(values)


def datasheet_numbers(device: str) -> list[float]:
    """The run's device as scaledl.perf.hardware states it (see the module docstring, rule 2)."""
    from scaledl.perf import hardware as hw

    d = hw.get(re.sub(r"^NVIDIA\s+", "", device))
    values = {d.memory_bandwidth_GBps, d.memory_GB, d.power_W}
    values.update(d.peak_TFLOPS(p) for p in d.precisions)
    if d.name in ("H100 SXM", "H200 SXM"):
        values.add(hw.GH100_SXM_SMS)
        clocks = {p: hw.quoted_clock_GHz(d, p) for p in hw.GH100_FLOP_PER_SM_CLOCK}
        values.update(clocks.values())
        values.update(hw.peak_at_clock_TFLOPS(d, p, c) for p in clocks for c in clocks.values())
    return sorted(values)


_RECORDS: dict[tuple[str, str], Records] = {}


def records_of(run: str, device: str) -> Records:
    if (run, device) not in _RECORDS:
        text = record_text(run)
        _RECORDS[run, device] = Records(record_numbers(text), text, datasheet_numbers(device))
    return _RECORDS[run, device]


# ---------------------------------------------------------------------------------------------- the cells
@dataclass(frozen=True)
class RecordCell:
    path: str
    cell_id: str
    run: str
    device: str
    source: str


def record_cells() -> list[RecordCell]:
    """Every dated record, and every other markdown cell that cites a run folder, in the chapters and labs."""
    found = []
    paths = [p for p in tracked("chapters", "labs") if p.endswith(".ipynb")]
    for path in paths:
        nb = json.loads((ROOT / path).read_text())
        dated_device = None
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            src = "".join(cell["source"])
            header, link = HEADER.match(src), RUN_LINK.search(src)
            if header:
                assert link, f"{path} cell {cell.get('id')}: a dated record must link to its run's folder"
                dated_device = header["device"]
            if header or link:
                device = header["device"] if header else (dated_device or "NVIDIA H200")
                found.append(RecordCell(path, cell.get("id", ""), link["run"], device, src))
    return found


def _plain(text: str) -> str:
    """Markdown without what is not prose: code spans, link targets, HTML, dates, sizes, bold marks."""
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"\[([^\]]*)\]", lambda m: "" if re.search(r"[/]|\.\w+$", m[1]) else m[1], text)
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"\d{4}-\d\d-\d\d", " ", text)
    text = re.sub(r"\d+(?:\.\d+)?\^\d+", " ", text)  # 4096^3
    text = re.sub(r"(?<![\w.])\d+(?:\.\d+)?(?: x \d+(?:\.\d+)?)+(?![\w.])", " ", text)  # 4095 x 4095 x 4097
    return text.replace("**", "").replace("*", "")


@dataclass(frozen=True)
class Figure:
    text: str  # as written, with its unit: "50.4", "15 %", "1.54x"
    value: float
    decimals: int
    unit: str


def _figure(m: re.Match, unit: str) -> Figure:
    num = m["num"]
    decimals = len(num.split(".")[1]) if "." in num else 0
    unit = "x" if m["x"] else unit
    shown = num + ("x" if unit == "x" else f" {unit}" if unit == "%" else "")
    return Figure(shown, float(num.replace(",", "")), decimals, unit)


def _unit_after(text: str, end: int) -> str:
    m = re.match(r"\s*(" + "|".join(UNITS) + ")", text[end:])
    return m[1] if m else ""


def figures(text: str, every: bool) -> list[Figure]:
    """The numbers of ``text``: all of them (``every``) or those with a unit (see the module docstring)."""
    matches = list(NUMBER.finditer(text))
    units = [("x" if m["x"] else _unit_after(text, m.end())) for m in matches]
    for i in range(len(matches) - 2, -1, -1):  # "0.440 and 0.460 ms": the unit reaches back
        if not units[i] and units[i + 1] and CONNECTOR.match(text[matches[i].end():matches[i + 1].start()] + ""):
            units[i] = units[i + 1]
    return [_figure(m, u) for m, u in zip(matches, units) if every or u]


def _sentences(prose: str) -> list[str]:
    return [s for s in re.split(r"(?<!\d)[.;](?!\d)|\.(?=\s)|\n\s*\n", " ".join(prose.split("\n"))) if s.strip()]


def _passes(f: Figure, rec: Records, datasheet_only: bool = False) -> bool:
    scales = [1.0, 1e3, 1e-3] + ([100.0] if f.unit == "%" else []) + ([1e-2] if f.unit == "x" else [])
    return rec.has(f.value, f.decimals, scales, datasheet_only)


def _is_ratio(f: Figure, operands: list[Figure]) -> bool:
    half = 0.5 * 10.0 ** -f.decimals * (1 + 1e-9)
    ks = (1.0, 100.0, 1e3, 1e-3)
    for a in operands:
        for b in operands:
            if a is b or b.value == 0 or a.text == f.text:
                continue
            if any(abs(a.value / b.value * k - f.value) <= half for k in ks):
                return True
    return False


def unrecorded(cell: RecordCell) -> list[str]:
    """The figures of ``cell`` that pass none of the three rules, as written."""
    rec = records_of(cell.run, cell.device)
    lines = cell.source.split("\n")
    failed = []
    # the opening line: every number, versions as written
    if HEADER.match(cell.source):
        head = re.sub(r"\]\([^)]*\)", "]", lines[0])
        for v in VERSION.findall(head):
            if v not in rec.text:
                failed.append(v)
        head = VERSION.sub(" ", _plain(head))
        failed += [f.text for f in figures(head, every=True) if not _passes(f, rec)]
        lines = lines[1:]
    prose, table = [], []
    for line in lines + [""]:
        if line.lstrip().startswith("|"):
            table.append(line)
            continue
        if table:
            failed += _table_failures(table, rec)
            table = []
        prose.append(line)
    for sentence in _sentences(_plain("\n".join(prose))):
        every = figures(sentence, every=True)
        passing = [f for f in every if _passes(f, rec)]
        for f in figures(sentence, every=False):
            if not (_passes(f, rec) or _is_ratio(f, passing)):
                failed.append(f.text)
    return failed


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _table_failures(table: list[str], rec: Records) -> list[str]:
    header = [h.lower() for h in _cells(table[0])]
    failed = []
    for row in table[2:]:
        cells = _cells(row)
        row_figures = [f for c in cells[1:] for f in figures(_plain(c), every=True)]
        passing = [f for f in row_figures if _passes(f, rec)]
        for col, text in enumerate(cells[1:], start=1):
            name = header[col] if col < len(header) else ""
            if any(word in name for word in MODEL_COLUMNS):
                continue
            for f in figures(_plain(text), every=True):
                ok = _passes(f, rec, datasheet_only="datasheet" in name) or _is_ratio(f, passing)
                if not ok:
                    failed.append(f.text)
    return failed


# ------------------------------------------------------------------------------------------------ tests
CELLS = record_cells()


def test_the_book_has_its_dated_records():
    dated = {(c.path, c.cell_id) for c in CELLS if HEADER.match(c.source)}
    for path in ("chapters/04_writing_gemm_kernels.ipynb", "chapters/05_energy_and_tensor_cores.ipynb",
                 "chapters/06_winograd_convolution.ipynb", "chapters/12_structured_sparsity.ipynb",
                 "chapters/18_persistent_kernels_and_rnns.ipynb", "labs/solutions/lab01_roofline_your_device.ipynb",
                 "labs/solutions/lab02_tiled_gemm.ipynb"):
        assert any(p == path for p, _ in dated), f"{path} has no dated GPU record"


@pytest.mark.parametrize("cell", CELLS, ids=[f"{c.path.split('/')[-1][:12]}-{c.cell_id}" for c in CELLS])
def test_every_figure_is_in_its_runs_records(cell):
    run_dir = ROOT / RUNS / cell.run
    assert run_dir.is_dir(), f"{cell.path}: cites {RUNS}/{cell.run}, which is not in the repository"
    header = HEADER.match(cell.source)
    if header:
        assert cell.run.startswith(header["date"]), f"{cell.path}: dated {header['date']}, links {cell.run}"
        assert header["device"] in records_of(cell.run, cell.device).text, f"{cell.path}: device not in records"
    failed = unrecorded(cell)
    known = KNOWN_CHAPTER_04.get((cell.path, cell.cell_id), set())
    assert not set(failed) - known, (
        f"{cell.path} cell {cell.cell_id}: figures in no raw record of {RUNS}/{cell.run} (nor the datasheet, nor a "
        f"ratio of two that are): {sorted(set(failed) - known)}")
    assert not known - set(failed), (
        f"{cell.path} cell {cell.cell_id}: {sorted(known - set(failed))} now pass: remove them from KNOWN_CHAPTER_04")


# ------------------------------------------------------------------------------- the rule itself, and that it can fail
RUN = "2026-11-26-nvidia-h200"


def _cell(text: str) -> RecordCell:
    head = (f"**Measured on an NVIDIA H200 (2026-11-26).** NVIDIA H200 (143,771 MiB), driver 580.159.04; "
            f"[report.md](../{RUNS}/{RUN}/report.md).")
    return RecordCell("planted.ipynb", "x", RUN, "NVIDIA H200", head + "\n" + text)


def test_formatting_is_normalised():
    rec = records_of(RUN, "NVIDIA H200")
    f = lambda s: figures(s, every=True)[0]  # noqa: E731
    assert _passes(f("50.4 TFLOP/s"), rec) and not _passes(f("50.40 TFLOP/s"), rec)  # 50,418.4 GFLOP/s
    assert _passes(f("1,324.8 GFLOP/s"), rec) and _passes(f("1324.8 GFLOP/s"), rec) and _passes(f("1.32"), rec)
    assert _passes(f("15 %"), rec)  # report.json's ratio 0.1545 as a percentage
    assert _passes(f("0.35x"), rec)  # bench-new-sections.log's 35 %
    assert _passes(f("37 us"), rec)  # 0.037 ms
    assert _passes(f("61.8 TFLOP/s"), rec) and _passes(f("1.83 GHz"), rec)  # the datasheet's FP32 at 1.83 GHz
    assert [x.text for x in figures("0.440 and 0.460 ms, batch 4, 8192 x 8192, 4096^3, H200, v3", every=False)] \
        == ["0.440", "0.460"]


def test_ratios_are_recomputed_from_recorded_numbers():
    ok = _cell("The dense twin runs at 7,698 GFLOP/s, 16.3 % of cuBLAS's 47,198.")
    assert unrecorded(ok) == []
    wrong = _cell("The dense twin runs at 7,698 GFLOP/s, 17.3 % of cuBLAS's 47,198.")
    assert unrecorded(wrong) == ["17.3 %"]
    table = _cell("| kernel | ms | speedup |\n|---|---|---|\n"
                  "| rnn | 1.816 / 0.814 | 2.23x |\n| rnn | 7.204 / 4.649 | 1.61x |")
    assert unrecorded(table) == ["1.61x"]


def test_figures_in_no_record_fail():
    """A planted number fails; so do the figures the audit found typed from notebooks that were never kept
    (chapter 05's rates, lab 01's ceilings, lab 02's solution), and the README does not vouch for them."""
    planted = _cell("| kernel | time (ms) | TFLOP/s |\n|---|---|---|\n| v3 | 18.582 | 61.37 |\n\n"
                    "It ran at 123.45 GFLOP/s, and a second time at 8.123 ms.")
    assert unrecorded(planted) == ["61.37", "123.45", "8.123"]
    lost = _cell("| 8192^3 | TFLOP/s |\n|---|---|\n| FP32 | 50.7 |\n| TF32 | 372.3 |\n| FP16 | 729.2 |\n\n"
                 "The triad moved 2,681 GB/s and the FMA kernel 40.65 TFLOP/s; lab 02's solution ran at 12.86 "
                 "TFLOP/s, in 10.69 ms.")
    # 50.7 passes by the coincidence the docstring warns of: the 2:4 GEMM took 50.737 ms in the same session
    assert unrecorded(lost) == ["372.3", "729.2", "2,681", "40.65", "12.86", "10.69"]
    assert "12.86" in (ROOT / RUNS / RUN / "README.md").read_text()  # in the summary, not in a raw record
    bad_version = _cell("")
    bad_version = RecordCell(*[bad_version.path, "x", RUN, "NVIDIA H200",
                               bad_version.source.replace("580.159.04", "580.159.05")])
    assert unrecorded(bad_version) == ["580.159.05"]
