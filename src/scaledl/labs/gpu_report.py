"""What a student's kernel would do on a GPU, printed by a lab's check after its verdict, without a GPU.

A check (:func:`scaledl.labs.check.check_gemm`) proves a kernel right on whatever backend runs it. Given a
:class:`GpuShape` (the student's kernel built at the GPU's sizes, and its threads per block), it then prints the
kernel's static report: what ``scaledl kernels report`` says of the book's kernels (Chapter 04), here for the
student's own, compiled for an H100/H200 SM (sm_90) by :func:`scaledl.kernels.static_function.report_kernel`:
registers, blocks and warps per SM, global loads by width, the bytes a thread has in flight, the inner loop's
FFMA share. Where ptxas, nvdisasm or libNVVM is missing (Colab, an install without the dev extra) it prints one
line saying so; nothing here ever fails a check.

>>> from scaledl.kernels import static_record
>>> r = static_record.recorded(["gemm_v2_tiled"])["gemm_v2_tiled"]
>>> print("\\n".join(report_lines(r, "TILE = 16")))
Static report of your kernel at the GPU's sizes (TILE = 16), compiled for sm_90 (an H100/H200 SM), no GPU needed:
  registers: 32 a thread, no spills; 256 threads a block -> 8 blocks, 64 warps per SM (limited by threads)
  global loads in the kernel: 2x32 (NxW: N loads of W bits); 8 bytes in flight before a thread uses the first
  inner loop: 16 FFMA of 96 instructions, FFMA share 17 %; shared loads 16x32 4x128, 3.06 integer per FFMA
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from scaledl.kernels import static_report as sr

__all__ = ["GEMM_SIGNATURE", "GpuShape", "report_lines", "static_report_lines"]

GEMM_SIGNATURE = "float32[:, ::1], float32[:, ::1], float32[:, ::1]"  # kernel(A, B, C), C-contiguous float32
ARCH = "sm_90"  # the H100/H200 of the book's GPU runs


@dataclass(frozen=True)
class GpuShape:
    """A student's kernel built at the GPU's sizes (``make_regblock_kernel(16, 4)``), the threads per block it is
    launched with there, and how to name those sizes in the report (``"TILE = 16, R = 4"``)."""

    kernel: object
    threads_per_block: int
    label: str = ""
    signature: str = GEMM_SIGNATURE


def _widths(counts: dict) -> str:
    return " ".join(f"{n}x{w}" for w, n in sorted(counts.items())) or "none"


def report_lines(r: sr.KernelReport, label: str = "") -> list[str]:
    """The report of one compiled kernel as a few lines of text (``label``: the sizes it was built at)."""
    sizes = f" ({label})" if label else ""
    lines = [f"Static report of your kernel at the GPU's sizes{sizes}, compiled for {r.arch} (an H100/H200 SM), "
             "no GPU needed:"]
    spills = "no spills" if not r.spill_bytes else f"{r.spill_bytes} bytes spilled to local memory"
    lines.append(f"  registers: {r.registers} a thread, {spills}; {r.threads_per_block} threads a block -> "
                 f"{r.blocks_per_sm} block{'s' * (r.blocks_per_sm != 1)}, {r.warps_per_sm} warps per SM "
                 f"(limited by {r.occupancy.limited_by})")
    prefetch = " (across the FFMA loop: a prefetch)" if r.in_flight.over_inner_loop else ""
    lines.append(f"  global loads in the kernel: {_widths(r.kernel.ldg)} (NxW: N loads of W bits); "
                 f"{r.in_flight.bytes} bytes in flight before a thread uses the first{prefetch}")
    if r.loop is not None and r.loop.ffma:
        lp = r.loop
        lines.append(f"  inner loop: {lp.ffma} FFMA of {lp.instructions} instructions, FFMA share "
                     f"{100 * lp.ffma_share:.0f} %; shared loads {_widths(lp.lds)}, {lp.integer_per_ffma:.2f} "
                     "integer per FFMA")
    else:
        lines.append("  inner loop: no FFMA in any loop")
    return lines


def static_report_lines(shape: GpuShape, arch: str = ARCH) -> list[str]:
    """Compile ``shape.kernel`` for ``arch`` and return :func:`report_lines`; where that cannot be done here, one
    line saying why (tools missing, a global that cannot be sent, Numba's compiler rejecting the kernel). Never
    raises for those: a check calls it after its verdict."""
    from scaledl.kernels import static_function as sf

    try:
        r = sf.report_kernel(shape.kernel, shape.signature, shape.threads_per_block, arch)
    except sr.ToolsMissing as err:
        return [f"Static report skipped: it needs ptxas, nvdisasm and libNVVM ({err})."]
    except sf.KernelNotPortable as err:
        return [f"Static report skipped: {err}."]
    except sf.KernelRejected as err:
        return [f"Static report: Numba's CUDA compiler rejects this kernel, so a GPU could not run it (the simulator "
                f"never compiles a kernel): {err}"]
    if r.error:
        return [f"Static report skipped: {r.error}"]
    return report_lines(r, shape.label)


def print_static_report(shape: GpuShape, report=sys.stdout) -> list[str]:
    """:func:`static_report_lines`, printed to ``report`` (None: not printed) after a blank line; returns them."""
    lines = static_report_lines(shape)
    if report is not None:
        print("\n" + "\n".join(lines), file=report)
    return lines
