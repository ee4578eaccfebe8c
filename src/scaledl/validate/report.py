"""Write a validation's report: ``report.json`` (everything) and ``report.md`` (the tables a reader wants)."""

from __future__ import annotations

import json
from pathlib import Path

SCHEMA = "scaledl-validate/1"
STEPS = ("tests", "bench", "notebooks", "hosted")
STATUSES = ("passed", "failed", "skipped", "absent")  # skipped: not run here or not asked for; absent: no files


def _cell(value) -> str:
    """A value as one Markdown table cell: no newline, and a literal bar escaped."""
    text = "" if value is None else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def table(header: tuple[str, ...], rows: list[tuple]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _machine(f: dict) -> list[str]:
    rows = [("Device", f["device"] + (f" x{f['gpu_count']}" if f["gpu_count"] > 1 else "")),
            ("Compute capability", f["compute_capability"] or "-"),
            ("Memory (GiB)", f["memory_GiB"] if f["memory_GiB"] is not None else "-"),
            ("Driver (newest CUDA it supports)", f["driver_cuda_version"] or "-"),
            ("CUDA runtime", f["cuda_runtime_version"] or "-"),
            ("Backend", f"{f['backend']} ({f['backend_reason']})"),
            ("Python", f["python"])]
    rows += [(dist, v) for dist, v in f["versions"].items() if v is not None]
    rows += [("Kernel smoke test", f"{'ok' if f['smoke_ok'] else 'FAILED'}: {f['smoke']}"),
             ("Date", f["date"]), ("Host", f["hostname"])]
    return table(("Machine", ""), rows)


def _ratio(r: dict) -> str:
    return "" if r["ratio"] is None else f"{100 * r['ratio']:.0f} %"


def _target(r: dict) -> str:
    if r["target"] is None:
        return ""
    verdict = {True: "met", False: "MISSED", None: "not judged"}[r["target_met"]]
    return f">= {100 * r['target']:.0f} % ({verdict})"


def markdown(report: dict) -> str:
    """The readable report: a machine table, a step summary, then tests, bench and notebook tables."""
    s = report["steps"]
    out = [f"# scaledl validate: {'PASSED' if report['ok'] else 'FAILED'}", "",
           f"`{report['command']}` on {report['facts']['device']}, {report['started']}; "
           f"{report['seconds']:.0f} s in all.", ""]
    if report["facts"]["backend"] == "simulator":
        out += ["No GPU here: this run checks the tool and the kernels' results on the CPU simulator at tiny "
                "sizes. Its times, rates and ratios say nothing about hardware.", ""]
    out += _machine(report["facts"]) + ["", "## Steps", ""]
    out += table(("Step", "Status", "Detail"), [(name, s[name]["status"], s[name].get("reason", ""))
                                                for name in STEPS if name in s])
    tests = s["tests"]
    out += ["", "## Tests (pytest tests/gpu)", ""]
    if tests["tests"]:
        out += table(("Test", "Status", "Time (s)", "Message"),
                     [(t["name"], t["status"], f"{t['seconds']:.2f}", t["message"]) for t in tests["tests"]])
    else:
        out.append(f"{tests['status']}: {tests.get('reason', '')}")
    bench = s["bench"]
    out += ["", f"## Bench ({bench['mode']})", ""]
    if bench["mode"] == "dry run":
        out += ["NumPy stand-ins replace the CuPy baselines and sizes are tiny: each kernel's result was checked; "
                "no figure below is a measurement of anything but Python.", ""]
    out += table(("Kernel", "Size", "Time (ms)", "Rate", "Baseline", "Ratio to baseline", "Target"),
                 [(r["kernel"], r["size"], f"{r['time_ms']:.3f}", f"{r['rate']:,.1f} {r['unit']}", r["baseline"],
                   _ratio(r), _target(r)) for r in bench["rows"]])
    out += [line for e in bench["errors"] for line in ("", f"**Error:** {e}")]
    nbs = s["notebooks"]
    out += ["", "## Notebooks (book.toml gpu = true)", ""]
    if nbs["notebooks"]:
        out += table(("Notebook", "Status", "Cells passed", "Cells failed", "Not run", "Time (s)", "First error"),
                     [(f"{n['id']} {n['file']}", n["status"], n["cells_passed"], n["cells_failed"],
                       n["cells_not_run"], f"{n['seconds']:.1f}", n["first_error"] or "")
                      for n in nbs["notebooks"]])
    else:
        out.append(f"{nbs['status']}: {nbs.get('reason', '')}")
    if "hosted" in s:
        h = s["hosted"]
        out += ["", "## Hosted-notebook dry run (fresh venv, the wheel only)", "",
                f"{h['status']}: {h.get('reason', '')}"]
        if h.get("notebooks"):
            out += [""] + table(("Notebook", "Status", "Cells passed", "Cells failed", "First error"),
                                [(f"{n['id']} {n['file']}", n["status"], n["cells_passed"], n["cells_failed"],
                                  n["first_error"] or "") for n in h["notebooks"]])
    return "\n".join(out) + "\n"


PARTIAL = "report.partial.json"


def write_partial(report: dict, folder: Path) -> Path:
    """The steps finished so far, as ``report.partial.json``: what is left when a run is killed (a time limit
    on a lent machine, a hung kernel). :func:`validate` removes it once the whole report is written."""
    path = folder / PARTIAL
    path.write_text(json.dumps(dict(report, complete=False), indent=1) + "\n", encoding="utf-8")
    return path


def write(report: dict, folder: Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``folder`` (made if missing); return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    js, md = folder / "report.json", folder / "report.md"
    js.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    md.write_text(markdown(report), encoding="utf-8")
    return js, md
