"""``scaledl bench``'s rows as data: every kernel checked, then timed beside its baseline as a ratio.

On a GPU the baselines are CuPy's (cuBLAS SGEMM, device copy, CUB sum) at ``scaledl bench``'s sizes. On the
simulator the same code runs as a dry run: NumPy stand-ins for CuPy and tiny odd sizes, so every check still
runs, but no time, rate, ratio or target there says anything about hardware (the report says so).
"""

from __future__ import annotations

import dataclasses

from scaledl import device
from scaledl._optional import install_command


def run(quick: bool, *, progress=print) -> dict:
    """The bench step. It fails when a kernel or baseline misses its reference, or CuPy is absent on a GPU;
    a missed speed target is reported beside its ratio and does not fail the step (it is a goal, not a bug)."""
    from scaledl.kernels import bench

    if device.on_gpu():  # pragma: no cover - needs a GPU
        cp = bench._import_cupy()
        if cp is None:
            return {"status": "failed", "mode": "gpu", "rows": [], "errors": [
                f"CuPy is not installed, so there is no baseline: {install_command('cu12')} (or cu13)"]}
        baselines, sizes, mode = bench.CupyBaselines(cp), bench.gpu_sizes(quick), "gpu"
    else:
        baselines, sizes, mode = bench.HostBaselines(), bench.DRY_RUN_SIZES, "dry run"
    rows, errors = [], []
    for section in bench.SECTIONS:
        progress(f"bench {section} ({mode})")
        try:
            rows += bench.measure(section, baselines, sizes)
        except RuntimeError as err:  # one wrong kernel stops its section only; the others still report
            errors.append(f"{section}: {err}")
        except Exception as err:  # anything else a section meets on a GPU (CuPy, a launch) stops it only too
            errors.append(f"{section}: {type(err).__name__}: {err}")
    records = []
    for r in rows:
        record = dataclasses.asdict(r)
        if record["baseline"] == "cuBLAS":  # bench's short column name; say which baseline this run used
            record["baseline"] = baselines.gemm_name
        judged = mode == "gpu" and r.target is not None and r.ratio is not None
        record["target_met"] = (r.ratio >= r.target) if judged else None
        records.append(record)
    missed = [r["kernel"] for r in records if r["target_met"] is False]
    reason = (f"{len(records)} rows, {len(errors)} section(s) failed their check; "
              + ("dry run: NumPy baselines, tiny sizes, targets not judged" if mode == "dry run" else
                 f"targets missed: {', '.join(missed) or 'none'}"))
    return {"status": "failed" if errors else "passed", "reason": reason, "mode": mode,
            "sizes": dataclasses.asdict(sizes), "rows": records, "errors": errors, "targets_missed": missed}
