"""A race, barrier, uninitialized-read and out-of-bounds checker for kernels run on Numba's CUDA simulator.

NVIDIA's compute-sanitizer (racecheck, synccheck, initcheck, memcheck) needs a GPU; this needs none. Inside
``with sanitize() as report:`` every kernel launched on the simulator is watched, and ``report.findings`` lists
what it did wrong, each a :class:`Finding` with a ``kind``:

* ``"race"``: two threads of a block touch one shared-memory element between the same two barriers, at least
  one writing; or two threads of a launch touch one global element, at least one writing, unordered (threads of
  two blocks are never ordered within a launch; threads of one block by a barrier between the accesses), and
  not both with ``cuda.atomic``. Reads alone never race, nor a thread with itself.
* ``"barrier"``: a ``cuda.syncthreads()`` that some threads of a block reach and others do not (they finished,
  or wait at another one), or reach a different number of times; and a block stuck at a barrier that a thread
  spinning elsewhere never reaches (stopped after ``stall_s``, the launch then raises :class:`KernelDeadlock`).
* ``"uninitialized"``: a read (or atomic update) of a shared-memory element that no thread of the block had
  written before it.
* ``"out_of_bounds"``: an index outside a global or shared array, a negative one included (NumPy, so the plain
  simulator, would wrap it to the other end without a word); also a slice bound outside the array.

Each finding names the kernel, the array (the kernel's parameter name for a global array, the variable's name
for a shared one, read off its declaring line), the first element found, the thread(s) involved (block and
thread indices), the source lines as ``path:line``, and says what is wrong and the usual fix::

    race on `sA[1, 3]` in `gemm_tiled` (block (0,0)) between thread (3,1) writing at lab02.py:18 and thread
    (0,1) reading at lab02.py:23, both after the barrier at lab02.py:21: a `cuda.syncthreads()` is missing
    before the next tile overwrites it (at the end of the loop, after the read at lab02.py:23)

A defect that many threads repeat is one finding, ``count``-ed (kind, kernel, array and lines are its key).
Use::

    from scaledl.kernels.sanitizer import sanitize
    with sanitize() as report:
        kernel[grid, block](A, B, C)
    assert not report.findings, str(report)

How it works. ``sanitize()`` replaces, for the ``with`` block only, the simulator's launch, block, thread,
barrier, shared-array and atomic entry points (:mod:`~.hooks`). A kernel's array arguments and its shared arrays
become :class:`~.arrays.Watched` arrays: each element access checks its index against the shape (an access out
of bounds is reported and not performed: a read gives 0) and appends ``(array, byte offset, read/write/atomic,
thread, epoch, code line)`` to a log, the epoch being the number of barriers the thread has passed. When a
block ends, :func:`~.analysis.scan` finds the conflicting pairs and the unwritten reads in its shared-memory log
and :func:`~.analysis.barrier_divergence` compares each thread's list of barrier call sites; when the launch
ends, ``scan`` runs over its global log block by block, the earlier blocks' accesses of each element against
the later ones'. The simulator runs one block after another, so races between blocks are found from that
record, never from timing. Shared memory is filled with NaN (other dtypes: bytes of 0x5A) at each block's
start, as a GPU leaves it garbage. A watchdog thread per block (:mod:`~.stall`) turns a hang at a barrier into
a finding.

What it cannot see:

* Only what the run does: a path or an index that these sizes never take is not checked (use odd sizes, not
  multiples of the block, and more than one block, as ``tests/kernel_cases.py`` does).
* One block at a time: the simulator never runs two blocks at once, so a kernel that waits for another block
  (a spin on a flag another block sets) hangs there, under the sanitizer too; its watchdog only acts while a
  thread of the block waits at a barrier. ``cuda.cg.this_grid().sync()`` works for a grid of one block only,
  and counts as a block barrier.
* No warps: the simulator has no warp intrinsics (shuffles, votes, ``syncwarp``), and every thread is
  independent, so warp-synchronous code (a reduction's last 32 lanes without barriers, which Volta's
  independent thread scheduling broke) is reported as racing. The tests' strict shuffle emulation
  (``kernel_cases.emulated_warp_shuffles``) meets at block barriers, which the checker would count: the
  shuffle kernels (reduce v2, SpMV v3) are not run under it.
* Only global arrays passed as kernel arguments and shared arrays (static, and dynamic per dtype) are watched:
  not local arrays, ``cuda.const`` arrays, arrays a kernel reaches through a global or a closure, or objects
  that are not NumPy arrays (``gemm_traffic.CountingArray``). Two arguments that alias one buffer are watched as
  two arrays (a race between them is missed).
* No memory model: ``threadfence`` is a no-op in the simulator and orders nothing here; only a barrier (or both
  accesses being atomic) orders two accesses, so a flag protocol through fences is reported as a race. Every
  ``cuda.atomic`` on an element is atomic with every other (no scopes).
* "Uninitialized" is about shared memory (global arrays come from the host) and about elements never written
  in the block: a stale value left by an earlier tile is written, to the checker.
* Results after an out-of-bounds access are not the plain simulator's (the read gave 0, the write was dropped).

Cost (``tools/sanitizer_overhead.py``; its record: docs/sanitizer-runs/2026-12-02-overhead.json). At the labs'
sizes (lab 02's largest GEMM check, 37 x 29 @ 29 x 41, in five variants from naive to v8, 90 000 to 165 000
checked accesses each; lab 04's 70 x 45 SpMV; a 7001-element reduction, a 3 x 21 x 20 convolution, an RNN) a
sanitized run took 1.4 to 1.8 times as long as a plain simulator run over all (three runs), and at most about
2.7 times for one launch (the register-blocked GEMMs, whose inner loops are shared-memory reads), in wall and in
CPU time, on two cores that other work loaded (load average 8 to 19). A log entry is about 100 bytes; a block's
shared-memory log is freed when the block ends, a launch's global log when the launch ends.
"""

from __future__ import annotations

from scaledl.kernels.sanitizer.hooks import SanitizerUnavailable, sanitize
from scaledl.kernels.sanitizer.report import KINDS, Finding, Report, ThreadRef
from scaledl.kernels.sanitizer.stall import KernelDeadlock

__all__ = ["sanitize", "Report", "Finding", "ThreadRef", "KINDS", "SanitizerUnavailable", "KernelDeadlock"]
