"""The static report, recorded in the package: what ``scaledl kernels report`` says where ptxas cannot run.

:mod:`scaledl.kernels.static_report` needs ptxas, nvdisasm and libNVVM (the book's [kernels] extra, which `make lab`
and [dev] install). A reader on Colab, or with the package installed without its extras, has none of them; the
chapters still show the registers, occupancy and inner loops of the book's kernels, from ``static_report_sm90.json``
beside this module: the report of every kernel of :func:`~scaledl.kernels.launch_table.kernel_table` at sm_90, made
with the toolkit versions it names (``scaledl kernels report --write-record`` rewrites it;
tests/sim/test_static_report.py fails when it differs from what the installed tools make, so it cannot drift
unseen).

:func:`static_facts` is what a chapter calls: the report computed here where the tools are, the record where
they are not, and a line saying which (:attr:`StaticFacts.provenance`). The numbers depend on the toolkit: a
newer ptxas may allocate registers differently, so the line names the versions.

>>> facts = recorded(["gemm_v3_regblock"])
>>> facts["gemm_v3_regblock"].registers, facts["gemm_v3_regblock"].blocks_per_sm, facts.recorded
(196, 1, True)
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scaledl._args import UsageError
from scaledl.kernels import occupancy as occ
from scaledl.kernels import sass
from scaledl.kernels import static_report as sr

__all__ = ["RECORD_FILES", "SCHEMA", "StaticFacts", "toolchain", "write", "recorded", "static_facts", "run_from_args"]

SCHEMA = "scaledl-static-report/1"
# sm_90: the H100/H200 of the GPU runs; sm_75: the T4 of Colab's and Kaggle's free tiers, what most students get
RECORD_FILES = {arch: Path(__file__).with_name(f"static_report_{arch.replace('_', '')}.json")
                for arch in ("sm_90", "sm_75")}
_WIDTH_FIELDS = ("ldg", "stg", "lds", "sts")  # LoopSummary's {width in bits: count}: JSON keys are strings


@dataclass(frozen=True)
class StaticFacts:
    """Static reports of some kernels on one architecture, and where they come from.

    ``recorded`` is False when this machine's tools made them, True when they were read from the package's record
    (``why``: what is missing here). ``tools``: the versions that made them. ``matches_record``: for a report
    made here, whether it equals the record (None where the record lacks one of the kernels)."""

    reports: tuple[sr.KernelReport, ...]
    arch: str
    tools: dict
    recorded: bool
    why: str = ""
    matches_record: bool | None = None
    names: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "names", tuple(r.name for r in self.reports))

    def __getitem__(self, name: str) -> sr.KernelReport:
        if name not in self.names:
            raise KeyError(f"{name!r}: not among {list(self.names)}")
        return self.reports[self.names.index(name)]

    @property
    def tools_line(self) -> str:
        """``ptxas 13.5, nvdisasm 13.5, numba-cuda 0.30.4``: the versions the numbers depend on."""
        return ", ".join(f"{k} {v}" for k, v in self.tools.items() if v)

    @property
    def provenance(self) -> str:
        """One line: which architecture, computed here or recorded, with which tools."""
        if self.recorded:
            return (f"Static report for {self.arch}, recorded in the package ({self.tools_line}): it cannot be "
                    f"made on this machine ({self.why}).")
        same = {True: "; the same as the package's record", None: "",
                False: "; it differs from the package's record (another toolkit, or a kernel changed since)"}
        return f"Static report for {self.arch}, computed here ({self.tools_line}){same[self.matches_record]}."


# ------------------------------------------------------------------------------------------- versions
def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def toolchain() -> dict:
    """The versions this machine's report would be made with: ptxas, nvdisasm (None where missing) and numba-cuda,
    whose libNVVM writes the PTX."""
    tools = {}
    for tool, text in sr.tool_versions().items():
        m = re.match(r"\d+\.\d+", text or "")
        tools[tool] = m.group() if m else None
    tools["numba-cuda"] = _version("numba-cuda")
    return tools


# ------------------------------------------------------------------------------------------- the file
def _comparable(r: sr.KernelReport) -> sr.KernelReport:
    """``r`` with ptxas's name of the function (Numba's mangled name, which encodes where the kernel was defined)
    replaced by the table's name: what the record keeps, and what a report made here is compared by."""
    return dataclasses.replace(r, ptxas=dataclasses.replace(r.ptxas, name=r.name)) if r.ptxas else r


def _to_dict(r: sr.KernelReport) -> dict:
    r = _comparable(r)
    return {f.name: (dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v)
            for f in dataclasses.fields(r) if f.name != "texts" for v in [getattr(r, f.name)]}


def _loop(d: dict | None) -> sass.LoopSummary | None:
    if d is None:
        return None
    return sass.LoopSummary(**{k: ({int(w): n for w, n in v.items()} if k in _WIDTH_FIELDS else v)
                               for k, v in d.items()})


def _from_dict(d: dict) -> sr.KernelReport:
    return sr.KernelReport(
        d["name"], d["arch"], d["threads_per_block"],
        sass.PtxasInfo(**d["ptxas"]) if d["ptxas"] else None,
        occ.Occupancy(**d["occupancy"]) if d["occupancy"] else None,
        _loop(d["loop"]), _loop(d["kernel"]),
        sass.LoadsInFlight(**d["in_flight"]) if d["in_flight"] else None,
        d["ptx_f64_divisions"], d["error"])


def write(arch: str = "sm_90", path: str | Path | None = None) -> Path:
    """Make the report of every kernel of the table on ``arch`` with this machine's tools and write it as the
    package's record (``path``: elsewhere); returns the path.

    Raises:
        ValueError: an architecture the package keeps no record of. ToolsMissing: the tools are missing here.
        RuntimeError: a kernel failed to compile (a record of errors would hide them).
    """
    if arch not in RECORD_FILES:
        raise UsageError(f"arch={arch!r}: the package records {sorted(RECORD_FILES)}")
    reports = sr.report(arch=arch)
    failed = {r.name: r.error for r in reports if r.error}
    if failed:
        raise RuntimeError(f"not recording a report with errors: {failed}")
    path = Path(path) if path is not None else RECORD_FILES[arch]
    head = {"schema": SCHEMA, "arch": arch, "tools": toolchain(), "made_by": "scaledl kernels report --write-record"}
    kernels = ",\n".join("  " + json.dumps(_to_dict(r)) for r in reports)  # a line a kernel: diffs name the kernel
    path.write_text(json.dumps(head, indent=1)[:-2] + ',\n "kernels": [\n' + kernels + "\n ]\n}\n")
    return path


def recorded(only=None, arch: str = "sm_90", *, why: str = "") -> StaticFacts:
    """The package's record of ``only`` (kernel names; all by default) on ``arch``.

    Raises:
        ValueError: an architecture without a record, or a kernel the record does not hold.
    """
    if arch not in RECORD_FILES:
        raise UsageError(f"arch={arch!r}: the package records {sorted(RECORD_FILES)}")
    doc = json.loads(RECORD_FILES[arch].read_text())
    if doc.get("schema") != SCHEMA:
        raise UsageError(f"{RECORD_FILES[arch].name}: schema {doc.get('schema')!r}, expected {SCHEMA!r}")
    table = {d["name"]: d for d in doc["kernels"]}
    wanted = list(table if not only else only)
    unknown = [n for n in wanted if n not in table]
    if unknown:
        raise UsageError(f"only: {unknown} not in the record; it holds {list(table)}")
    return StaticFacts(tuple(_from_dict(table[n]) for n in wanted), arch, doc["tools"], True, why)


def static_facts(only=None, arch: str = "sm_90") -> StaticFacts:
    """The static report of ``only`` on ``arch``: made here where ptxas, nvdisasm and libNVVM are installed
    (and compared with the record), else the package's record, saying why.

    Raises:
        ValueError: an unknown architecture or kernel name.
    """
    try:
        reports = tuple(sr.report(only, arch))
    except sr.ToolsMissing as err:
        return recorded(only, arch, why=str(err))
    try:
        record = recorded([r.name for r in reports], arch)
        same = record.reports == tuple(map(_comparable, reports)) and record.tools == toolchain()
    except ValueError:  # no record of this architecture, or of one of these kernels
        same = None
    return StaticFacts(reports, arch, toolchain(), False, matches_record=same)


def run_from_args(args) -> int:
    """``scaledl kernels report`` (the arguments are defined in :mod:`scaledl.cli`; here, not in
    :mod:`~scaledl.kernels.static_report`, which this module imports): the table, then the GEMM
    model's predictions for the GEMM variants in it (sm_90 only: the model is of an H200)."""
    if args.list:
        print("\n".join(e.name for e in sr.kernel_table()))
        return 0
    if getattr(args, "write_record", False):
        print(f"wrote {write(args.arch)}")
        return 0
    if getattr(args, "recorded", False):
        facts = recorded(args.only, args.arch)
        reports, source = list(facts.reports), f", recorded in the package with {facts.tools_line}"
    else:
        try:
            reports, source = sr.report(args.only, args.arch, save_dir=args.save), ""
        except sr.ToolsMissing as err:
            print(f"scaledl: cannot make the static report: {err} (--recorded prints the report recorded in the "
                  f"package)", file=sys.stderr)
            return 3
    sm = sr.ARCHS[args.arch]
    print(f"Static report for {args.arch}{source} (SM limits of the {sm.name}: {sm.registers} registers, "
          f"{sm.max_threads} threads, {sm.shared_bytes} bytes of shared memory)\n")
    print(sr.format_table(reports))
    gemm = [r for r in reports if r.name.startswith("gemm_v") and not r.error]
    if gemm and args.arch == "sm_90":
        from scaledl.kernels import kernel_model as km

        predictions = [km.predict(km.gemm_facts(r, r.name.split("_", 2)[2])) for r in gemm]
        print(f"\nPredicted at 4096^3 on an H200 (scaledl.kernels.kernel_model; expected = ceiling x "
              f"{km.CALIBRATION:.2f}, cuBLAS = {km.CUBLAS_TFLOPS:.1f} TFLOP/s of {km.PEAK_TFLOPS:.0f})\n")
        print(km.format_predictions(predictions))
    return 1 if any(r.error for r in reports) else 0
