"""Grade issue 19's hostile corpus with real ``nbgrader autograde`` and print how it fares, for comparison.

A measurement script, not a test (pytest collects nothing here)::

    .venv/bin/python tests/grading/nbgrader_compare.py [lab03 lab04 ...] [--keep DIR]

For each lab it builds an nbgrader course in a temp dir (source = the lab's solution notebook, whose hidden
tests judge inside the student's kernel when no grader is around), submits every case of
``tests/grading/corpus.py`` as one student, runs ``nbgrader autograde LAB --force`` once for the whole batch
(as an instructor would), and reads each student's score from the gradebook. Where a submission kills the
batch it says so, leaves that student out and runs autograde again (without --force) for the rest, which is
what an instructor would have to do. Afterwards it looks for processes the students left running (every
process nbgrader started carries a marker in its environment), reports and kills them by pid.

Student code runs with this script's rights under nbgrader: the 'writer' case overwrites the throw-away files
made here (never repository files), and the 'envleak' case reads the environment, so nbgrader runs with a
minimal environment, and the temp dir (which holds those outputs) is removed unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

VENV_BIN = Path(sys.executable).parent
TIMEOUT_S = {"lab03": 150, "lab04": 150, "lab05": 150, "lab06": 150}  # as tests/grading/test_hostile.py
MARKER = "NBGRADER_COMPARE_TOKEN"
MAX_RUNS = 6  # autograde reruns after crashes, at most


def sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def nbgrader_env(home: Path, token: str) -> dict[str, str]:
    """A minimal environment: what the students' kernels can print is only this."""
    return {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
            "SCALEDL_BACKEND": "simulator", "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTER_CONFIG_DIR": str(home / "jupyter"), "MPLBACKEND": "Agg",
            corpus.CANARY: f"canary-{token}", MARKER: token}


def nbgrader(args, cwd, env, log=None, timeout=None):
    """Run ``nbgrader ARGS`` in its own session (a student's ``killpg(0)`` must not reach this script).

    Returns (returncode, [(seconds since start, line)]).
    """
    start = time.monotonic()
    proc = subprocess.Popen([str(VENV_BIN / "nbgrader"), *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
    lines = []
    for line in proc.stdout:
        lines.append((time.monotonic() - start, line.rstrip("\n")))
        if log is not None:
            log.write(f"{lines[-1][0]:8.1f} {line}")
            log.flush()
    rc = proc.wait(timeout=timeout)
    return rc, lines


def marked_processes(token: str) -> list[dict]:
    """Processes (other than this one) whose environment carries this run's marker: nbgrader's descendants."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if needle not in (d / "environ").read_bytes().split(b"\0"):
                continue
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            cwd = os.readlink(d / "cwd")
            stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
            ppid, pgid, sid = int(stat[1]), int(stat[2]), int(stat[3])
        except OSError:
            continue
        found.append({"pid": int(d.name), "ppid": ppid, "pgid": pgid, "sid": sid, "cmd": cmd, "cwd": cwd})
    return found


def make_course(lab: str, course: Path, env: dict, students: list[str]) -> None:
    lab_root = course / "source" / lab
    lab_root.mkdir(parents=True)
    nbformat.write(corpus.solution(lab), lab_root / f"{lab}.ipynb")
    t = TIMEOUT_S[lab]
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        "c.CourseDirectory.course_id = 'scaledl_compare'\n"
        f"c.Execute.timeout = {t}\n"
        f"c.ExecutePreprocessor.timeout = {t}\n")
    for args in (["db", "assignment", "add", lab],
                 ["db", "student", "import", str(course / "students.csv")],
                 ["generate_assignment", lab, "--force"]):
        if args[1] == "student":
            (course / "students.csv").write_text("id\n" + "".join(f"{s}\n" for s in students))
        rc, lines = nbgrader(args, course, env)
        if rc != 0:
            raise RuntimeError(f"nbgrader {' '.join(args)} failed ({rc}):\n" + "\n".join(l for _, l in lines[-20:]))


def submit(lab: str, cases: Path, course: Path) -> dict[str, str]:
    """Copy each corpus notebook in as one student's submission; returns {student: how}."""
    how = {}
    for nb in sorted(cases.glob("*.ipynb")):
        student = nb.stem
        if student == "dup":  # the older of two uploads: nbgrader's exchange keeps only the latest
            continue
        if student == "dup (1)":
            student, how["dup"] = "dup", "submitted the newer upload 'dup (1).ipynb' (the exchange keeps one)"
        dest = course / "submitted" / student / lab
        dest.mkdir(parents=True)
        shutil.copy(nb, dest / f"{lab}.ipynb")
        how.setdefault(student, "")
    return how


SANITIZING = re.compile(r"Sanitizing .*/submitted/([^/]+)/")
WHY = re.compile(r"Cell '[^']*' does not exist in the database|Cell with id '[^']*' exists multiple times!")
EXC = re.compile(r"\b[\w.]*(Error|Exception): .*")  # the exception line closing a traceback
FAILED = re.compile(r"There was an error processing assignment '[^']*' for student '([^']*)'")


def autograde_batches(lab, course, env, students, logfile):
    """Run autograde until every student is processed; returns per-student info and per-run summaries."""
    info = {s: {"outcome": None, "seconds": None, "errors": []} for s in students}
    runs, excluded = [], []
    for run in range(MAX_RUNS):
        args = ["autograde", lab] + (["--force"] if run == 0 else [])
        if excluded:
            args.append(f"--CourseDirectory.student_id_exclude={','.join(excluded)}")
        logfile.write(f"\n$ nbgrader {' '.join(args)}\n")
        t0 = time.monotonic()
        rc, lines = nbgrader(args, course, env, log=logfile)
        wall = time.monotonic() - t0
        order = [(t, m.group(1)) for t, l in lines if (m := SANITIZING.search(l))]
        for i, (t, s) in enumerate(order):
            end = order[i + 1][0] if i + 1 < len(order) else wall
            info[s]["seconds"] = end - t
        current = None
        for t, l in lines:
            if m := SANITIZING.search(l):
                current = m.group(1)
            if current and (WHY.search(l) or EXC.search(l)):
                info[current]["errors"].append((WHY.search(l) or EXC.search(l)).group(0).strip())
            if m := FAILED.search(l):
                info[m.group(1)]["outcome"] = "failed"
        crashed = order[-1][1] if (rc < 0 and order) else None
        runs.append({"args": args, "rc": rc, "wall": wall, "graded": [s for _, s in order], "crashed": crashed,
                     "tail": [l for _, l in lines[-8:]]})
        if crashed:
            info[crashed]["outcome"] = "crashed the batch"
            excluded.append(crashed)
            continue
        break
    return info, runs


def scores(course: Path, lab: str, students: list[str]) -> dict[str, dict]:
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for s in students:
            try:
                sub = gb.find_submission(lab, s)
            except MissingEntry:
                out[s] = None
                continue
            cells = {}
            for nb in sub.notebooks:
                for g in nb.grades:
                    cells[g.name] = (g.score, g.max_score, g.needs_manual_grade)
            out[s] = {"score": sub.score, "max": sub.max_score, "cells": cells,
                      "manual": sub.needs_manual_grade}
    return out


def grade_lab(lab: str, work: Path, token: str) -> dict:
    cases, course, home = work / "cases", work / "course", work / "home"
    for d in (cases, course, home / "runtime", home / "jupyter"):
        d.mkdir(parents=True)
    env = nbgrader_env(home, token)
    targets, before = {}, {}
    previous_csv = course / "grades.csv"  # last week's export, which the 'detached' case rewrites later
    if lab == corpus.HARM_LAB:
        throwaway = work / "instructor"
        throwaway.mkdir()
        other = throwaway / "zz-other-student.ipynb"
        other.write_text(nbformat.writes(corpus.student_copy(lab)))
        sol = throwaway / "solution-copy.ipynb"
        sol.write_text(nbformat.writes(corpus.solution(lab)))
        peer = course / "submitted" / "solution" / lab / f"{lab}.ipynb"  # created by submit() below
        targets = {str(other): "a fake other student's notebook", str(sol): "a copy of the solution",
                   str(peer): "student 'solution''s submission, in the nbgrader course"}
        previous_csv.write_text("student,total\nsomeone,7\n")
    expected = corpus.build(lab, cases, targets=targets or None, grades_csv=str(previous_csv))
    if lab == corpus.HARM_LAB:  # the endless loop too (test_hostile.py grades it in a batch of its own)
        name, lost = corpus.endless(cases)
        pts = corpus.points(lab)
        expected[name] = corpus.Expect(sum(v for t, v in pts.items() if t not in lost), "TIMEOUT", lost=lost)
    how = submit(lab, cases, course)
    students = sorted(how)
    make_course(lab, course, env, students)
    for p in list(targets) + [str(previous_csv)]:
        before[p] = sha(Path(p))
    with open(work / "autograde.log", "w") as logfile:
        t0 = time.monotonic()
        info, runs = autograde_batches(lab, course, env, students, logfile)
        wall = time.monotonic() - t0
    got = scores(course, lab, students)
    time.sleep(8)  # the 'detached' case rewrites grades.csv 5 s after its cell ran
    changed = {p: label for p, label in list(targets.items()) + [(str(previous_csv), "grades.csv")]
               if sha(Path(p)) != before[p]}
    leftovers = marked_processes(token)
    export_rc, export_lines = nbgrader(["export", "--to", str(work / "export.csv")], course, env)
    return {"lab": lab, "expected": expected, "how": how, "info": info, "runs": runs, "wall": wall,
            "scores": got, "changed": changed, "leftovers": leftovers, "course": course, "env": env,
            "export": (export_rc, [l for _, l in export_lines[-5:]]), "work": work}


def notes_for(lab, s, r) -> list[str]:
    notes = []
    course = r["course"]
    if r["how"].get(s):
        notes.append(r["how"][s])
    got = r["scores"].get(s)
    pts = corpus.points(lab)
    if got:
        zero = [g for g in pts if g in got["cells"] and (got["cells"][g][0] or 0) == 0]
        extra = sorted(set(got["cells"]) - set(pts))
        if zero:
            notes.append("0 on " + ", ".join(zero))
        if extra:
            notes.append("gradebook has extra cells " + ", ".join(extra))
        if got["manual"]:
            notes.append("needs manual grade")
    autograded = course / "autograded" / s / lab / f"{lab}.ipynb"
    if s == "envleak" and autograded.is_file():
        text = autograded.read_text(errors="replace")  # only yes/no facts leave this function
        notes.append("grader env printed: " + ("canary and PATH visible" if r["env"][corpus.CANARY] in text
                                               else "canary not visible"))
        nb = nbformat.reads(text, as_version=4)
        errs = [o.get("ename") for o in nb.cells[-1].outputs if o.get("output_type") == "error"]
        notes.append("/proc/1/environ: " + (f"not read ({errs[0]})" if errs else "read"))
    if s == "flood" and autograded.is_file():
        notes.append(f"autograded notebook {autograded.stat().st_size / 2**20:.0f} MiB")
    if s == "hog" and autograded.is_file():
        text = autograded.read_text(errors="replace")
        notes.append("kernel got MemoryError" if "MemoryError" in text else "allocation went through")
    if s == "writer":
        hit = [label for label in r["changed"].values() if label != "grades.csv"]
        notes.append("overwrote: " + (", ".join(hit) or "nothing"))
    if s == "detached":
        notes.append("grades.csv rewritten later" if any(v == "grades.csv" for v in r["changed"].values())
                     else "grades.csv untouched")
        mine = [p for p in r["leftovers"] if f"/autograded/{s}/" in p["cwd"] + "/"]
        notes.append(f"{len(mine)} of its processes still alive after the batch" if mine
                     else "no process of it left")
    if s == "killer" and r["info"][s]["outcome"] == "crashed the batch":
        notes.append("SIGKILLed nbgrader (the kernel's parent)")
    if s == "loop":
        notes.append(f"{r['info'][s]['seconds'] or 0:.0f} s (cell timeout {TIMEOUT_S[lab]} s each)")
    if r["info"][s]["errors"] and r["info"][s]["outcome"] == "failed":
        seen = list(dict.fromkeys(r["info"][s]["errors"]))[:3]
        notes.append("nbgrader: " + " / ".join(f"`{e[:110]}`" for e in seen))
    return notes


def report(r) -> None:
    lab = r["lab"]
    full = sum(corpus.points(lab).values())
    print(f"\n### {lab} (max {full} points; cell timeout {TIMEOUT_S[lab]} s)\n")
    print("| lab | submission | expected (ours) | nbgrader score | nbgrader outcome | seconds | notes |")
    print("|---|---|---|---|---|---|---|")
    for s in sorted(r["expected"]):
        e = r["expected"][s]
        got = r["scores"].get(s)
        outcome = r["info"].get(s, {}).get("outcome")
        if outcome is None:
            outcome = "ok" if got else "no row"
        score = f"{got['score']:g} / {got['max']:g}" if got else "-"
        secs = r["info"].get(s, {}).get("seconds")
        lost = f" (0 on {', '.join(e.lost)})" if e.lost and len(e.lost) < len(corpus.points(lab)) else ""
        print(f"| {lab} | {s} | {e.total:g} {e.status}{lost} | {score} | {outcome} | "
              f"{'' if secs is None else f'{secs:.0f}'} | {'; '.join(notes_for(lab, s, r))} |")
    n = len(r["info"])
    secs = sorted(v["seconds"] for v in r["info"].values() if v["seconds"] is not None)
    print(f"\n{lab}: {n} submissions, autograde wall time {r['wall']:.0f} s in {len(r['runs'])} run(s), "
          f"{r['wall'] / n:.1f} s per submission on average, median {secs[len(secs) // 2]:.1f} s")
    for run in r["runs"]:
        status = ("completed" if run["rc"] == 0 else
                  f"KILLED by signal {-run['rc']} while grading '{run['crashed']}'" if run["rc"] < 0 else
                  f"exited {run['rc']}")
        print(f"- `nbgrader {' '.join(run['args'])}`: {status}, {run['wall']:.0f} s, "
              f"{len(run['graded'])} submissions started")
    first = r["runs"][0]
    failed = sorted(s for s, v in r["info"].items() if v["outcome"] == "failed")
    done = ("completed the batch" if first["rc"] == 0 else
            f"went through every submission but exited {first['rc']} ({len(failed)} failed: {', '.join(failed)})"
            if first["rc"] > 0 else "did NOT complete the batch: it was killed")
    print(f"- the single batch command `nbgrader {' '.join(first['args'])}` {done}")
    print(f"- files changed by students: {', '.join(r['changed'].values()) or 'none'}")
    print(f"- processes left running after the batch: {len(r['leftovers'])}")
    for p in r["leftovers"]:
        print(f"  - pid {p['pid']} ppid {p['ppid']} sid {p['sid']} cwd {p['cwd'].replace(str(r['work']), '$TMP')}: "
              f"{p['cmd'].replace(str(r['work']), '$TMP')[:120]}")
    print(f"- nbgrader export: rc {r['export'][0]}")


def kill(procs) -> None:
    for p in procs:
        try:
            os.kill(p["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("labs", nargs="*", default=["lab03", "lab04", "lab05", "lab06"])
    ap.add_argument("--keep", type=Path, help="copy each lab's course and logs here (holds the envleak output)")
    ap.add_argument("--logs", type=Path, help="copy each lab's autograde log and export CSV here")
    args = ap.parse_args(argv)
    token = os.urandom(8).hex()
    tmp = Path(tempfile.mkdtemp(prefix="nbgrader-compare-"))
    print(f"nbgrader compare: temp dir {tmp}, marker {MARKER}={token}", flush=True)
    try:
        for lab in args.labs:
            work = tmp / lab
            r = grade_lab(lab, work, token)
            report(r)
            kill(r["leftovers"])
            time.sleep(1)
            still = marked_processes(token)
            print(f"- after killing them by pid: {len(still)} left", flush=True)
            if args.logs:
                (args.logs / lab).mkdir(parents=True, exist_ok=True)
                for f in ("autograde.log", "export.csv"):
                    if (work / f).is_file():
                        shutil.copy(work / f, args.logs / lab / f)
            if args.keep:
                shutil.copytree(work, args.keep / lab, symlinks=True, dirs_exist_ok=True)
    finally:
        kill(marked_processes(token))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
