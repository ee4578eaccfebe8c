"""What a kernel costs before it runs: registers, spills, shared memory, occupancy and its inner loop, without a GPU.

Each kernel the book launches on a GPU (:func:`scaledl.kernels.launch_table.kernel_table`, at its GPU launch
shape) is compiled the way a GPU would compile it: Numba's CUDA compiler turns it into PTX (in a fresh process
with the backend forced to "cuda", which needs libNVVM but no driver), ``ptxas -v`` assembles the PTX for one
architecture and says how many registers and how much shared memory each thread and block take, and
``nvdisasm`` prints the machine code (SASS). From those, per kernel:

* resident blocks and warps per SM, from :func:`scaledl.kernels.occupancy.occupancy` with the SM's limits
  (sm_90: H100/H200, sm_80: A100), registers rounded up to the allocation unit and the shared memory the
  driver reserves per block added;
* the innermost loop that does the work (:func:`scaledl.kernels.sass.inner_loop`): FFMAs, global and shared
  loads by width, shared stores, and integer/address instructions per FFMA;
* the global loads of the whole kernel by width, and the bytes a thread has in flight before it uses the
  first (:func:`scaledl.kernels.sass.loads_in_flight`); float64 divisions in the PTX.

The first H200 run (docs/gpu-runs/2026-11-26-nvidia-h200) found the GEMM v3 at 196 registers, one block of
256 threads per SM; this report gives the same numbers on a machine with no GPU. ``scaledl kernels report``
prints it; the tools come with the dev extra (``nvidia-cuda-nvcc`` for ptxas, ``nvidia-cuda-nvdisasm``).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from scaledl._args import UsageError
from scaledl.kernels import occupancy as occ
from scaledl.kernels import sass as sass_text
from scaledl.kernels.launch_table import kernel_table

__all__ = ["ToolsMissing", "kernel_table", "ARCHS", "find_tool", "tool_versions", "KernelReport",
           "report", "assemble_ptx", "sm_occupancy", "COLUMNS", "rows", "format_table", "changed",
]


class ToolsMissing(RuntimeError):
    """ptxas, nvdisasm or libNVVM is not installed, so no static report can be made here."""


# The SM's limits per architecture. sm_90's (H100 SXM) are the H200's too: the same GH100 SM, 132 of them.
ARCHS: dict[str, occ.SMLimits] = occ.ARCHS  # sm_75 (T4), sm_80, sm_86, sm_89, sm_90, sm_120: see occupancy.py
# CUDA C++ Programming Guide, "Shared Memory" (compute capability 8.x and 9.0): the driver reserves 1 KB of
# shared memory per block (Nsight Compute's "Driver Shared Memory Per Block", 1.02 KB, in after-ncu.txt).
RESERVED_SHARED_BYTES_PER_BLOCK = 1024
# Registers are allocated per warp in units of 256 (CUDA occupancy calculator, cc 5.0-9.0): 8 per thread.
REGISTERS_PER_THREAD_UNIT = 8
INSTALL_HINT = "the [kernels] extra: pip install -e '.[kernels]' in the book's checkout, as `make lab` does"


# ------------------------------------------------------------------------------------------- the tools
def _tool_dirs() -> list[Path]:
    """Where a CUDA tool may be, first match wins: the pip wheels beside this Python's libNVVM (the PTX comes
    from that NVVM, and a ptxas older than it rejects its PTX), this environment's bin (conda's cuda-nvcc), then
    CUDA_HOME / CUDA_PATH; :func:`find_tool` tries PATH last."""
    dirs = []
    for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path}:
        for sub in ("nvidia/cu13/bin", "nvidia/cu12/bin", "nvidia/cuda_nvcc/bin", "nvidia/cuda_nvdisasm/bin"):
            dirs += [Path(p) for p in glob.glob(os.path.join(site, sub))]
    dirs.append(Path(sys.prefix) / "bin")
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]) / "bin")
    return dirs


def find_tool(name: str) -> str | None:
    """The path of ``ptxas`` or ``nvdisasm``, or None where it is not installed."""
    for d in _tool_dirs():
        if (d / name).is_file() and os.access(d / name, os.X_OK):
            return str(d / name)
    return shutil.which(name)


def tool_versions() -> dict[str, str | None]:
    """``{"ptxas": "13.5 (path)" or None, "nvdisasm": ...}``: what ``scaledl doctor`` prints."""
    out = {}
    for tool in ("ptxas", "nvdisasm"):
        path = find_tool(tool)
        if path is None:
            out[tool] = None
            continue
        try:
            text = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
            m = re.search(r"release (\d+\.\d+)", text)
            out[tool] = f"{m.group(1) if m else 'unknown version'} ({path})"
        except (OSError, subprocess.SubprocessError) as err:
            out[tool] = f"unusable ({type(err).__name__}: {err}) at {path}"
    return out


def _require_tools() -> tuple[str, str]:
    found = {t: find_tool(t) for t in ("ptxas", "nvdisasm")}
    missing = [t for t, p in found.items() if p is None]
    if missing:
        raise ToolsMissing(f"{' and '.join(missing)} not found (looked in the nvidia wheels of this Python, "
                           f"CUDA_HOME/CUDA_PATH and PATH); {INSTALL_HINT}")
    return found["ptxas"], found["nvdisasm"]


# -------------------------------------------------------------------------------------- compile to PTX
# Run in a fresh process: the backend is forced to "cuda" before numba.cuda is imported (no GPU is needed to
# compile), without running scaledl/__init__ (which would decide the backend itself). rnn's grid kernel (its
# cooperative-groups call) and load4's overload are compiled for the current device's compute capability: with
# no device, they are told the target's.
# The start of every compile-only subprocess (here and scaledl.kernels.static_function), after its imports.
COMPILE_PREAMBLE = r'''
os.environ["SCALEDL_QUIET"] = "1"
spec = importlib.util.find_spec("scaledl")
pkg = types.ModuleType("scaledl"); pkg.__path__ = list(spec.submodule_search_locations); sys.modules["scaledl"] = pkg
import scaledl._compat
import scaledl.device as d
d._choose = lambda env: d.Decision("cuda", "forced: compile only", None)
from numba import cuda, types as nt
import numba.cuda.dispatcher as dispatcher
cc = tuple(json.loads(os.environ["SCALEDL_CC"]))
dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
'''
_PTX_SCRIPT = r'''
import importlib, importlib.util, inspect, json, os, sys, types
''' + COMPILE_PREAMBLE + r'''from scaledl.kernels.launch_table import kernel_table
table = {e.name: e for e in kernel_table()}
compile_options = inspect.signature(cuda.compile_ptx).parameters
for name in json.loads(os.environ["SCALEDL_KERNELS"]):
    e = table[name]
    try:
        m = importlib.import_module(e.module)
        kernel, threads = e.kernel(m), e.threads(m)
        sig = eval("(" + e.signature + ",)", dict(vars(nt)))
        # the kernel's own @cuda.jit options, those compile_ptx takes; max_registers goes to ptxas instead
        opts = {k: v for k, v in getattr(kernel, "targetoptions", {}).items()
                if k in ("fastmath", "launch_bounds", "opt", "lineinfo") and k in compile_options}
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=cc, **opts)
    except Exception as err:
        text = f"{type(err).__name__}: {err}"
        if any(s in text for s in ("DynamicLibNotFound", "libNVVM", "libnvvm", "NVVM")):
            print(json.dumps({"missing": text.splitlines()[0]}), flush=True); sys.exit(0)
        print(json.dumps({"name": name, "error": text.replace(chr(10), " ")[:2000]}), flush=True); continue
    path = os.path.join(os.environ["SCALEDL_OUT"], name + ".ptx")
    with open(path, "w") as f:
        f.write(ptx)
    max_registers = getattr(kernel, "targetoptions", {}).get("max_registers")
    print(json.dumps({"name": name, "ptx": path, "threads": threads, "max_registers": max_registers}), flush=True)
'''


def _compile_ptx(names: list[str], cc: tuple[int, int], out_dir: str, timeout_s: float) -> dict[str, dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("SCALEDL_BACKEND", "NUMBA_ENABLE_CUDASIM")}
    env.update(SCALEDL_CC=json.dumps(cc), SCALEDL_KERNELS=json.dumps(names), SCALEDL_OUT=out_dir)
    r = subprocess.run([sys.executable, "-c", _PTX_SCRIPT], capture_output=True, text=True, env=env,
                       timeout=timeout_s)
    rows = {}
    for line in r.stdout.splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        if "missing" in row:
            raise ToolsMissing(f"libNVVM, which compiles kernels to PTX, could not be loaded ({row['missing']}); "
                               "pip install 'numba-cuda[cu13]' (in the book's dev extra)")
        rows[row["name"]] = row
    if r.returncode != 0:
        raise RuntimeError(f"compiling to PTX failed (exit {r.returncode}): {r.stderr[-3000:]}")
    return rows


# ---------------------------------------------------------------------------------------------- report
@dataclass(frozen=True)
class KernelReport:
    """The static facts of one kernel on one architecture (``error`` set and the rest empty if it failed)."""

    name: str
    arch: str
    threads_per_block: int = 0
    ptxas: sass_text.PtxasInfo | None = None
    occupancy: occ.Occupancy | None = None
    loop: sass_text.LoopSummary | None = None  # the inner loop (sass.inner_loop)
    kernel: sass_text.LoopSummary | None = None  # every instruction of the kernel, counted once
    in_flight: sass_text.LoadsInFlight | None = None
    ptx_f64_divisions: int = 0  # div.{rn,rz,rm,rp}.f64 in the PTX: a float64 division, tens of instructions
    error: str | None = None
    texts: dict = field(default_factory=dict, repr=False, compare=False)  # "ptx", "ptxas", "sass"

    @property
    def registers(self) -> int:
        return self.ptxas.registers

    @property
    def spill_bytes(self) -> int:
        return self.ptxas.spill_store_bytes + self.ptxas.spill_load_bytes

    @property
    def warps_per_sm(self) -> int:
        return self.occupancy.warps_per_sm

    @property
    def blocks_per_sm(self) -> int:
        return self.occupancy.blocks_per_sm


def sm_occupancy(threads_per_block: int, registers: int, shared_bytes: int, sm: occ.SMLimits) -> occ.Occupancy:
    """:func:`scaledl.kernels.occupancy.occupancy` with the register allocation unit and the driver's
    per-block shared memory, which that function leaves out."""
    unit = REGISTERS_PER_THREAD_UNIT
    regs = min(-(-registers // unit) * unit, sm.max_registers_per_thread)
    reserved = sm.reserved_shared_per_block if shared_bytes else 0
    limit = sm.max_shared_per_block or sm.shared_bytes
    if shared_bytes > limit:  # the per-block limit applies to what the kernel asks for, without the reservation
        raise ValueError(f"shared_bytes={shared_bytes} exceeds the {limit} bytes a block may have on a {sm.name}")
    return occ.occupancy(threads_per_block, max(regs, 1), shared_bytes + reserved, sm)


def _assemble(name, row, arch, ptxas, nvdisasm, timeout_s) -> KernelReport:
    if "error" in row:
        return KernelReport(name, arch, error=f"PTX: {row['error']}")
    threads = row["threads"]
    threads = math.prod(threads) if isinstance(threads, (list, tuple)) else int(threads)
    return _assemble_file(name, row["ptx"], threads, arch, ptxas, nvdisasm, timeout_s, row.get("max_registers"))


def assemble_ptx(name: str, ptx: str, threads_per_block: int, arch: str = "sm_90",
                 timeout_s: float = 300) -> KernelReport:
    """The static report of a kernel given as PTX text (one compiled elsewhere, e.g. a lab's solution).

    Raises:
        ValueError: an unknown architecture. ToolsMissing: ptxas or nvdisasm is not installed.
    """
    if arch not in ARCHS:
        raise UsageError(f"arch={arch!r} is not supported; expected one of {sorted(ARCHS)}")
    ptxas, nvdisasm = _require_tools()
    with tempfile.TemporaryDirectory(prefix="scaledl-static-") as tmp:
        path = os.path.join(tmp, "kernel.ptx")
        Path(path).write_text(ptx)
        return _assemble_file(name, path, int(threads_per_block), arch, ptxas, nvdisasm, timeout_s)


def _assemble_file(name, ptx_path, threads, arch, ptxas, nvdisasm, timeout_s, max_registers=None) -> KernelReport:
    cubin = ptx_path[:-4] + ".cubin"
    cmd = [ptxas, "-v", "--gpu-name", arch, "-o", cubin, ptx_path]
    if max_registers:  # @cuda.jit(max_registers=N): what numba-cuda passes the compiler, here to ptxas
        cmd[1:1] = ["-maxrregcount", str(int(max_registers))]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0 and "Unresolved extern function" in r.stderr:  # a grid sync calls into cudadevrt,
        # linked at load time: assemble as relocatable code (-c), which leaves that call for the linker
        r = subprocess.run(cmd[:1] + ["-c"] + cmd[1:], capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        why = (r.stderr or r.stdout).strip()[-1000:]
        if "Unsupported .version" in why:
            why += " (this ptxas is older than the libNVVM that wrote the PTX: update nvidia-cuda-nvcc)"
        return KernelReport(name, arch, error=f"ptxas: {why}")
    ptxas_out = r.stdout + r.stderr
    d = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, timeout=timeout_s)
    if d.returncode != 0:
        return KernelReport(name, arch, error=f"nvdisasm: {d.stderr.strip()[-1000:]}")
    info = next(iter(sass_text.parse_ptxas(ptxas_out).values()))  # Numba inlines device functions: one entry
    ptx = Path(ptx_path).read_text()
    if "-c" in r.args:  # relocatable code: ptxas leaves the (visible) shared arrays to the linker, so count
        # them from their PTX declarations, ".shared .align 4 .b8 _cudapy_smem_1[46080];"
        declared = sum(int(n) for n in re.findall(r"\.shared\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\]", ptx))
        info = dataclasses.replace(info, shared_bytes=max(info.shared_bytes, declared))
    code = sass_text.parse_sass(d.stdout)
    return KernelReport(
        name, arch, threads, info, sm_occupancy(threads, info.registers, info.shared_bytes, ARCHS[arch]),
        sass_text.inner_loop(code), sass_text.summarize(code.instructions), sass_text.loads_in_flight(code),
        len(re.findall(r"\bdiv\.(?:rn|rz|rm|rp)\.f64\b", ptx)),
        texts={"ptx": ptx, "ptxas": ptxas_out, "sass": d.stdout})


def report(only=None, arch: str = "sm_90", *, save_dir: str | None = None,
           timeout_s: float = 900) -> list[KernelReport]:
    """The static report of ``only`` (kernel names from :func:`kernel_table`; all by default) on ``arch``.

    Raises:
        ValueError: an unknown architecture or kernel name.
        ToolsMissing: ptxas, nvdisasm or libNVVM is not installed.
    """
    if arch not in ARCHS:
        raise UsageError(f"arch={arch!r} is not supported; expected one of {sorted(ARCHS)}")
    names = [e.name for e in kernel_table()]
    wanted = list(names if not only else only)
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise UsageError(f"only: unknown kernel(s) {unknown}; expected names from {names}")
    ptxas, nvdisasm = _require_tools()
    cc = occ.compute_capability(arch)  # the PTX is generated for this target, then assembled for it
    with tempfile.TemporaryDirectory(prefix="scaledl-static-") as tmp:
        # a few compile processes (each imports numba-cuda, ~3 s), kernels dealt round-robin so the GEMMs spread
        procs = max(1, min(len(wanted), (os.cpu_count() or 1) // 2, 4))
        rows = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=procs) as pool:
            for part in pool.map(lambda k: _compile_ptx(wanted[k::procs], cc, tmp, timeout_s), range(procs)):
                rows.update(part)
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            reports = list(pool.map(lambda n: _assemble(n, rows.get(n, {"error": "no PTX came back"}), arch,
                                                        ptxas, nvdisasm, timeout_s), wanted))
    if save_dir is not None:
        os.makedirs(save_dir, exist_ok=True)
        for rep in reports:
            for kind, text in rep.texts.items():
                Path(save_dir, f"{rep.name}.{arch}.{kind}").write_text(text)
    return reports


def _widths(counts: dict[int, int]) -> str:
    return " ".join(f"{n}x{w}" for w, n in sorted(counts.items())) or "-"


COLUMNS = ("kernel", "threads", "regs", "spill B", "smem B", "blocks/SM", "warps/SM (limit)", "LDG in kernel",
           "in flight B", "loop FFMA", "loop LDG", "loop LDS", "loop STS", "int/FFMA", "FFMA share", "f64 div")


def rows(reports: list[KernelReport]) -> list[dict[str, str]]:
    """One dict per kernel, ``{column: text}`` for every column of :data:`COLUMNS` (a kernel that failed to
    compile: ``{"kernel": name, "error": why}``). See :func:`format_table` for what the columns mean."""
    out = []
    for r in reports:
        if r.error:
            out.append({"kernel": r.name, "error": r.error[:300]})
            continue
        lp = r.loop
        row = {"kernel": r.name, "threads": str(r.threads_per_block), "regs": str(r.registers),
               "spill B": str(r.spill_bytes), "smem B": str(r.ptxas.shared_bytes), "blocks/SM": str(r.blocks_per_sm),
               "warps/SM (limit)": f"{r.warps_per_sm} ({r.occupancy.limited_by})",
               "LDG in kernel": _widths(r.kernel.ldg),
               "in flight B": f"{r.in_flight.bytes}{' +pf' if r.in_flight.over_inner_loop else ''}",
               "f64 div": str(r.ptx_f64_divisions)}
        if lp is None:
            row.update({c: "-" for c in ("loop FFMA", "loop LDG", "loop LDS", "loop STS", "int/FFMA", "FFMA share")})
        else:
            row.update({"loop FFMA": str(lp.ffma), "loop LDG": _widths(lp.ldg), "loop LDS": _widths(lp.lds),
                        "loop STS": _widths(lp.sts),
                        "int/FFMA": f"{lp.integer_per_ffma:.2f}" if lp.ffma else "-",
                        "FFMA share": f"{lp.ffma_share:.0%}" if lp.ffma else "-"})
        out.append(row)
    return out


def format_table(reports: list[KernelReport], columns=COLUMNS, style: str = "markdown") -> str:
    """A table, one kernel a row: ``2x128`` is two 128-bit instructions; "in flight" is the global bytes a
    thread has issued before it uses the first (``+pf``: across the FFMA loop, a prefetch); the loop columns
    count one trip of the inner loop (:func:`scaledl.kernels.sass.inner_loop`). ``columns``: a selection of
    :data:`COLUMNS`; ``style``: ``"markdown"`` or ``"text"`` (aligned columns, for ``print``).

    Raises:
        ValueError: an unknown column or style.
    """
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown or style not in ("markdown", "text"):
        raise UsageError(f"columns {unknown} / style {style!r}: expected columns from {COLUMNS} and a style of "
                         "'markdown' or 'text'")
    table = [[row.get(c, "") if "error" not in row else (row["kernel"] if c == "kernel" else "") for c in columns]
             + ([f"error: {row['error']}"] if "error" in row else []) for row in rows(reports)]
    if style == "markdown":
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for cells, row in zip(table, rows(reports)):
            lines.append(f"| {row['kernel']} | error: {row['error']} |" if "error" in row
                         else "| " + " | ".join(cells) + " |")
        return "\n".join(lines)
    widths = [max(len(c), *(len(cells[k]) for cells in table)) for k, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(columns, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for cells in table:
        lines.append("  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(cells, widths)))
                     + ("  " + cells[-1] if len(cells) > len(columns) else ""))
    return "\n".join(line.rstrip() for line in lines)


def changed(before: KernelReport, after: KernelReport, columns=COLUMNS[1:]) -> list[tuple[str, str, str]]:
    """``(column, before, after)`` for each column of the table (:data:`COLUMNS`) in which two reports differ:
    what one change to a kernel did to its machine code.

    Raises:
        ValueError: a report that holds an error instead of facts.
    """
    a, b = rows([before, after])
    if "error" in a or "error" in b:
        raise UsageError(f"before/after: {before.name if 'error' in a else after.name} failed to compile, no facts")
    return [(c, a[c], b[c]) for c in columns if a[c] != b[c]]
