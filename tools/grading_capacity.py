"""How much grading each lab costs: the figures the instructor guide's Gradescope and class-scale sections state.

    python tools/grading_capacity.py gradescope [--labs lab03 ...] [--out FILE.json]
    python tools/grading_capacity.py throughput [--labs ...] [--copies 6] [--out FILE.json]

``gradescope``: each lab's autograder (``scaledl course gradescope``) set up once in a folder laid out as
``/autograder`` (setup.sh with the system's python3), then ``run_autograder`` on the lab's solution handed in
as a student would, in the ``account`` sandbox (what a container without namespaces leaves), inside a cgroup
holding Gradescope's default container: half of one CPU (v2 ``cpu.max "50000 100000"``, v1 ``cpu.cfs_quota_us``
50000 per 100000) and 768 MB (``memory.max`` / ``memory.limit_in_bytes``, no swap). Records the wall time, the
CPU seconds the cgroup used (``cpuacct.usage`` / ``cpu.stat``: other work on the machine cannot inflate them, so
twice them is the wall time at a half CPU of one's own), the peak memory, OOM kills, points and status. Without
a cgroup it can make, it says so and stops (the guide names the method beside the figures).

``hostile``: the hostile corpus of tests/grading/corpus.py for labs 03-06, one batch per lab: seconds per submission
(wall, and CPU from the cgroup's count) and the mean time of each grading stage (review, the runner's start, the
notebook's cells, the hidden tests, the judge), so that a slowdown has a name.

``throughput``: ``scaledl course grade --jobs 2`` (the local grader, bubblewrap here) on ``--copies`` copies of
each lab's solution and of its untouched student copy: submissions per minute on this machine's two cores, and
the CPU seconds per notebook (a cgroup's count), from which two idle cores' rate follows (2 x 60 / CPU s: each
notebook's kernel keeps one core busy).

Each writes one JSON record (the machine's load average before and after each run included: another session's
work slows a wall time down, never speeds it up); commit it under docs/grading-runs/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "grading"))
import corpus  # noqa: E402  (the solution as a student hands it in)

from scaledl.course import grade as G  # noqa: E402
from scaledl.course import gradescope as GS  # noqa: E402
from scaledl.course import gradescope_zip as GZ  # noqa: E402

GRADESCOPE_CPU = (50_000, 100_000)  # Gradescope's default: 0.5 CPU (quota, period in microseconds)
GRADESCOPE_MEMORY_BYTES = 768 << 20  # its default 768 MB
LABS = [e.id for e in corpus.BOOK.entries if e.kind == "lab" and e.validated]


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class Box:
    """A cgroup (v2, else v1 cpu + cpuacct + memory) with Gradescope's CPU and memory, under this process's."""

    def __init__(self, name: str):
        own = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
        base = Path("/sys/fs/cgroup")
        self.v2 = (base / "cgroup.controllers").exists() and "cpu" in (base / "cgroup.controllers").read_text()
        self.dirs = {}
        if self.v2:
            path = next(p for h, _, p in own if h == "0")
            d = base / path.lstrip("/") / name
            d.mkdir()
            (d / "cpu.max").write_text(f"{GRADESCOPE_CPU[0]} {GRADESCOPE_CPU[1]}")
            (d / "memory.max").write_text(str(GRADESCOPE_MEMORY_BYTES))
            (d / "memory.swap.max").write_text("0")
            self.dirs = {"v2": d}
            return
        where = {c: p for _, cs, p in own for c in cs.split(",")}
        for c in ("cpu", "cpuacct", "memory"):
            d = base / c / where[c].lstrip("/") / name
            d.mkdir()
            self.dirs[c] = d
        (self.dirs["cpu"] / "cpu.cfs_period_us").write_text(str(GRADESCOPE_CPU[1]))
        (self.dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(GRADESCOPE_CPU[0]))
        (self.dirs["memory"] / "memory.limit_in_bytes").write_text(str(GRADESCOPE_MEMORY_BYTES))
        if (self.dirs["memory"] / "memory.memsw.limit_in_bytes").exists():
            (self.dirs["memory"] / "memory.memsw.limit_in_bytes").write_text(str(GRADESCOPE_MEMORY_BYTES))

    @property
    def method(self) -> str:
        return ("cgroup v2: cpu.max 50000 100000, memory.max 768M, memory.swap.max 0" if self.v2 else
                "cgroup v1: cpu.cfs_quota_us 50000 per cpu.cfs_period_us 100000, memory.limit_in_bytes 768M "
                "(the host has no swap)")

    def enter(self) -> None:  # in the child, before exec
        for d in self.dirs.values():
            (d / "cgroup.procs").write_text(str(os.getpid()))

    def cpu_s(self) -> float:
        if self.v2:
            stat = dict(line.split() for line in (self.dirs["v2"] / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e6
        return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e9

    def peak_bytes(self) -> int:
        if self.v2:
            return int((self.dirs["v2"] / "memory.peak").read_text())
        return int((self.dirs["memory"] / "memory.max_usage_in_bytes").read_text())

    def oom_kills(self) -> int:
        name = "memory.events" if self.v2 else "memory.oom_control"
        text = (self.dirs.get("v2") or self.dirs["memory"]).joinpath(name).read_text()
        return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill ")), 0)

    def remove(self) -> None:
        for d in self.dirs.values():
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)


def gradescope(labs: list[str], python: str) -> dict:
    base = Path(tempfile.mkdtemp(prefix="scaledl-capacity-", dir="/tmp"))
    os.chmod(base, 0o755)  # the grading account must reach the virtual environment below
    top = base / "autograder"
    rows, method = [], None
    try:
        wheel = GZ.build_wheel(ROOT, base / "wheel")
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        for lab in sorted(labs, key=lambda x: x != "lab05"):  # lab05's [mpi] first: the others' a subset
            zip_path = GZ.build(lab, base / "zips", book=corpus.BOOK, wheel=wheel)
            shutil.rmtree(top / "source", ignore_errors=True)
            GZ.unpack(zip_path, top)
            start = time.perf_counter()
            setup = subprocess.run(["bash", str(top / "source" / "setup.sh")], capture_output=True, text=True,
                                   env={**env, "AUTOGRADER_ROOT": str(top), "SCALEDL_PYTHON": python})
            setup_s = time.perf_counter() - start
            if setup.returncode:
                raise SystemExit(f"{lab}: setup.sh failed:\n{setup.stdout[-2000:]}\n{setup.stderr[-3000:]}")
            for d in ("submission", "results"):
                shutil.rmtree(top / d, ignore_errors=True)
            (top / "submission").mkdir()
            nbformat.write(corpus.handed_in(corpus.solution(lab)), top / "submission" / f"{lab}.ipynb")
            box = Box(f"scaledl-capacity-{lab}-{os.getpid()}")
            method = box.method
            before = load()
            start = time.perf_counter()
            try:
                ran = subprocess.run([str(top / "run_autograder")], capture_output=True, text=True,
                                     preexec_fn=box.enter,
                                     env={"PATH": "/usr/bin:/bin", "AUTOGRADER_ROOT": str(top),
                                          GS.SANDBOX_VAR: "account"})
                wall = time.perf_counter() - start
                cpu, peak, ooms = box.cpu_s(), box.peak_bytes(), box.oom_kills()
            finally:
                box.remove()
            got = json.loads((top / "results" / "results.json").read_text())
            rows.append({"lab": lab, "points": got["score"], "max": sum(t["max_score"] for t in got["tests"]),
                         "status": got["extra_data"]["status"], "detail": got["extra_data"]["detail"],
                         "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "at_half_cpu_s": round(2 * cpu, 1),
                         "grading_s": got["extra_data"]["seconds"], "peak_MiB": round(peak / 2**20),
                         "oom_kills": ooms, "exit": ran.returncode, "setup_s": round(setup_s, 1),
                         "load_before": before, "load_after": load()})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {"what": "run_autograder on each lab's solution, account sandbox, Gradescope's default container",
            "method": method, "python": python, "rows": rows}


class CpuClock:
    """CPU seconds of this process and everything it starts (a cpuacct or v2 child cgroup holding it): other
    sessions' work on the machine slows a wall time down but adds nothing to these."""

    def __init__(self):
        own = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
        base = Path("/sys/fs/cgroup")
        if (base / "cgroup.controllers").exists() and "cpu" in (base / "cgroup.controllers").read_text():
            self.home = base / next(p for h, _, p in own if h == "0").lstrip("/")
            self.v2 = True
        else:
            self.home = base / "cpuacct" / next(p for _, cs, p in own if "cpuacct" in cs.split(",")).lstrip("/")
            self.v2 = False
        self.dir = self.home / f"scaledl-clock-{os.getpid()}"
        self.dir.mkdir()
        (self.dir / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        if self.v2:
            stat = dict(line.split() for line in (self.dir / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e6
        return int((self.dir / "cpuacct.usage").read_text()) / 1e9

    def close(self) -> None:
        (self.home / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(100):
            try:
                self.dir.rmdir()
                return
            except OSError:
                time.sleep(0.05)


def throughput(labs: list[str], copies: int) -> dict:
    """``copies`` solutions and ``copies`` untouched student copies of each lab, graded with --jobs 2."""
    rows, clock = [], CpuClock()
    try:
        for lab in labs:
            with tempfile.TemporaryDirectory(prefix="scaledl-throughput-") as tmp:
                row = {"lab": lab, "copies": copies}
                for kind, nb in (("solution", corpus.handed_in(corpus.solution(lab))),
                                 ("stub", corpus.student_copy(lab))):
                    subs = Path(tmp) / kind
                    subs.mkdir()
                    for k in range(copies):
                        nbformat.write(nb, subs / f"s{k:02d}.ipynb")
                    before, cpu0 = load(), clock.seconds()
                    start = time.perf_counter()
                    grades = G.grade_folder(subs, lab, out=Path(tmp) / f"out-{kind}", timeout_s=600, jobs=2, seed=1)
                    wall = time.perf_counter() - start
                    cpu = (clock.seconds() - cpu0) / copies
                    want = G.load_lab(lab).maximum if kind == "solution" else 0
                    row[kind] = {"wall_s": round(wall, 1), "per_minute": round(60 * copies / wall, 1),
                                 "cpu_s_per_notebook": round(cpu, 2),
                                 "per_minute_two_idle_cores": round(2 * 60 / cpu, 1),
                                 "all_as_expected": all(g.total == want and g.status == "OK" for g in grades),
                                 "stages_s": stages(grades), "load_before": before, "load_after": load()}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        clock.close()
    return {"what": "scaledl course grade --jobs 2 (bwrap sandbox) on copies of each lab's solution and of its "
                    "untouched student copy; per_minute_two_idle_cores = 2 cores x 60 s / CPU seconds per notebook",
            "rows": rows}


def stages(grades) -> dict[str, float]:
    """Mean seconds per notebook of each grading stage (Grade.stages: review, start, cells, hidden tests, judge),
    so that the next slowdown has a name."""
    names = sorted({k for g in grades for k in getattr(g, "stages", {})})
    return {k: round(sum(g.stages.get(k, 0.0) for g in grades) / max(1, len(grades)), 3) for k in names}


def hostile(labs: list[str]) -> dict:
    """The hostile corpus of tests/grading/corpus.py, one batch per lab (--jobs 2, bwrap), as issue 41 timed it:
    seconds per submission (wall and a cgroup's CPU count), the stage times, and the points against expected."""
    rows, clock = [], CpuClock()
    try:
        for lab in labs:
            with tempfile.TemporaryDirectory(prefix="scaledl-hostile-") as tmp:
                subs = Path(tmp) / "submissions"
                expected = corpus.build(lab, subs)
                before, cpu0 = load(), clock.seconds()
                start = time.perf_counter()
                grades = G.grade_folder(subs, lab, out=Path(tmp) / "out", timeout_s=150, jobs=2, seed=19)
                wall = time.perf_counter() - start
                n = len(grades)
                got = {g.student: (g.total, g.status) for g in grades}
                wrong = {s: (got.get(s), (e.total, e.status)) for s, e in expected.items()
                         if got.get(s) != (e.total, e.status)}
                row = {"lab": lab, "submissions": n, "wall_s": round(wall, 1),
                       "wall_s_per_submission": round(wall / n, 2),
                       "cpu_s_per_submission": round((clock.seconds() - cpu0) / n, 2), "stages_s": stages(grades),
                       "not_as_expected": {s: [list(a) if a else None, list(b)] for s, (a, b) in wrong.items()},
                       "load_before": before, "load_after": load()}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        clock.close()
    return {"what": "the hostile corpus (tests/grading/corpus.py), one batch per lab, scaledl course grade --jobs 2 "
                    "(bwrap); cpu_s_per_submission from a cgroup's count", "rows": rows}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("gradescope", "throughput", "hostile"))
    p.add_argument("--labs", nargs="+", default=LABS)
    p.add_argument("--copies", type=int, default=4)
    p.add_argument("--python", default="/usr/bin/python3", help="the image's python3 stand-in (gradescope)")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    if args.what == "gradescope":
        record = gradescope(args.labs, args.python)
    elif args.what == "hostile":
        record = hostile([lab for lab in args.labs if lab in ("lab03", "lab04", "lab05", "lab06")])
    else:
        record = throughput(args.labs, args.copies)
    record.update(date=time.strftime("%Y-%m-%d"), cpus=os.cpu_count(),
                  kernel=platform.release(), scaledl_python=sys.version.split()[0])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
