"""What ``scaledl.kernels.sanitizer.sanitize()`` costs over a plain simulator run, at the labs' sizes.

    SCALEDL_BACKEND=simulator python tools/sanitizer_overhead.py [--repeats 3] [--out FILE.json]

Each launch runs ``--repeats`` times plainly and as often under ``sanitize()``, alternating; the best of each
is kept (the simulator's threads share the machine with whatever else runs, which only ever slows a run down),
and the ratio printed, of wall time and of this process's CPU time (every thread's, the simulator's polling
loop included), which other processes' load inflates less. The sizes are lab 02's GEMM checks
(``scaledl.labs.check.GEMM_SIZES``; the largest, 37 x 29 @ 29 x 41), lab 04's SpMV (70 x 45), and a reduction,
a convolution and an RNN as the chapters run them on the simulator. The machine's load average is printed
beside the figures: another session's work inflates both times, not necessarily by the same factor.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from importlib import metadata

import numpy as np


def launches():
    import scipy.sparse as sp

    from scaledl.kernels import gemm
    from scaledl.kernels.conv import conv2d
    from scaledl.kernels.reduce import reduce_sum
    from scaledl.kernels.rnn import rnn_forward
    from scaledl.kernels.spmv import spmv

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((37, 29), np.float32), rng.standard_normal((29, 41), np.float32)
    S = sp.csr_array(rng.standard_normal((70, 45), np.float32) * (rng.random((70, 45)) < 0.1))
    xs = rng.standard_normal(45, np.float32)
    x = rng.standard_normal(7001, np.float32)
    cx, cw = rng.standard_normal((3, 21, 20), np.float32), rng.standard_normal((2, 3, 3, 3), np.float32)
    W = rng.standard_normal((13, 13))
    W *= 0.9 / np.abs(W).sum(axis=1).max()
    rnn = (W, rng.standard_normal((13, 5)), np.zeros(13), rng.standard_normal((6, 3, 5)), np.zeros((3, 13)))
    return {
        "gemm tiled (tile 8) 37x29x41": lambda: gemm(A, B, variant="tiled"),
        "gemm tiled (tile 16) 37x29x41": lambda: gemm(A, B, variant="tiled", tile=16),
        "gemm naive 37x29x41": lambda: gemm(A, B, variant="naive"),
        "gemm regblock 37x29x41": lambda: gemm(A, B, variant="regblock"),
        "gemm prefetch (v8) 37x29x41": lambda: gemm(A, B, variant="prefetch"),
        "spmv warp 70x45": lambda: spmv(S, xs, "warp"),
        "reduce_sum 7001": lambda: reduce_sum(x),
        "conv2d direct 3x21x20": lambda: conv2d(cx, cw, "direct"),
        "rnn persistent_block H=13 T=6": lambda: rnn_forward(*rnn, "tanh", "persistent_block"),
    }


def _timed(run) -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds (all its threads) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(repeats: int) -> list[dict]:
    from scaledl.kernels.sanitizer import sanitize

    rows = []
    for name, run in launches().items():
        run()  # warm: imports, kernel factories' caches
        plain, watched, accesses = [], [], 0
        for _ in range(repeats):
            plain.append(_timed(run))
            with sanitize() as report:
                watched.append(_timed(run))
            assert not report.findings, str(report)
            accesses = report.accesses
        (wall0, cpu0), (wall1, cpu1) = (min(p[0] for p in plain), min(p[1] for p in plain)), \
            (min(w[0] for w in watched), min(w[1] for w in watched))
        rows.append({"launch": name, "plain_s": wall0, "sanitize_s": wall1, "ratio": wall1 / wall0,
                     "plain_cpu_s": cpu0, "sanitize_cpu_s": cpu1, "cpu_ratio": cpu1 / cpu0, "accesses": accesses})
        print(f"{name:32s} wall {wall0:5.2f} -> {wall1:5.2f} s x{wall1 / wall0:.2f}   CPU {cpu0:5.2f} -> {cpu1:5.2f} s "
              f"x{cpu1 / cpu0:.2f}   ({accesses} accesses checked)", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = measure(args.repeats)
    summary = {}
    for key, plain, watched in (("wall", "plain_s", "sanitize_s"), ("cpu", "plain_cpu_s", "sanitize_cpu_s")):
        ratios = sorted(r[watched] / r[plain] for r in rows)
        summary[key] = {"total_ratio": sum(r[watched] for r in rows) / sum(r[plain] for r in rows),
                        "min": ratios[0], "median": ratios[len(ratios) // 2], "max": ratios[-1]}
        print(f"{key}: all together x{summary[key]['total_ratio']:.2f}; per launch x{ratios[0]:.2f} to "
              f"x{ratios[-1]:.2f}, median x{summary[key]['median']:.2f}")
    print(f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs")
    if args.out:
        record = {"rows": rows, "summary": summary, "load_average": [load_before[0], os.getloadavg()[0]],
                  "cpus": os.cpu_count(), "repeats": args.repeats, "python": platform.python_version(),
                  **{name: metadata.version(name) for name in ("numba-cuda", "numba", "numpy")}}
        with open(args.out, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
