"""The ``scaledl`` command (also ``python -m scaledl``).

    scaledl doctor                  what backend the book uses and why, versions, a kernel smoke test
    scaledl book check              fast static checks of book.toml and every notebook
    scaledl book execute [NAME...]  re-execute notebooks in place (all validated ones without NAME)
    scaledl book list [--validated] the notebooks of the book, one path a line
    scaledl book html [--out DIR]   a static HTML copy of the book
    scaledl book set-repository URL point book.toml and every setup cell at an instructor's fork
    scaledl book hub-links HUB      nbgitpuller links that open every chapter and lab on a JupyterHub
    scaledl book workspace [--dir D] [--reset NB] [--notices-after-start]  the reader's copy `make lab` opens
    scaledl book readme             rewrite the README's table of chapters and labs from book.toml
    scaledl book journey [--write] [NAME...]  each notebook's opening and "where next" cells, folded answers
    scaledl course release OUT      a student bundle (no solution, hidden test or answer key) in OUT
    scaledl course grade DIR --lab L grade a folder of submitted lab notebooks (hidden tests, CSV, feedback)
    scaledl course gradescope LAB   LAB-gradescope.zip: the lab's autograder for Gradescope (the same grader)
    scaledl course export GRADES...  the labs' grades as a Canvas import and a roster CSV for other LMSs
    scaledl bench [...]             GPU only: check, then time every kernel against CuPy/cuBLAS baselines
    scaledl bench netsim [...]      CPU: ranks against seconds and memory for the network simulator
    scaledl bench mpi --hosts H     MPI across hosts: fitted alpha/beta, each all-reduce against netsim and MPICH
    scaledl kernels report [--arch A] [--only NAME...]  registers, occupancy and inner loop of every kernel (no GPU)
    scaledl kernels report --recorded [...]  the same, as recorded in the package (no ptxas needed)
    scaledl validate [--out DIR]    doctor, tests/gpu, bench and the GPU notebooks in one report (any machine)
"""

from __future__ import annotations

import argparse
import os
import sys

from scaledl._args import UsageError
from scaledl import device

from scaledl.doctor import doctor  # noqa: F401  (chapter 00 imports it from here)

def _book_command(args) -> int:
    from scaledl.book import load

    book = load()
    if args.book_command == "check":
        from scaledl.book.check import check_book, placeholder_warnings, student_work
        from scaledl.course.bundle import check_bundle, is_student_bundle

        bundle = is_student_bundle(book.root)  # a student bundle has no solutions to check labs against
        problems = check_bundle(book) if bundle else check_book(book)
        for p in problems:
            print(p)
        for w in placeholder_warnings(book):
            print(w)
        for f in [] if bundle else student_work(book):
            print(f"{f}: student work kept (edited or run since it was generated; no command overwrites it)")
        validated = sum(e.validated for e in book.entries)
        print(f"book check: {len(problems)} problem(s); {validated} of {len(book.entries)} notebooks validated, "
              f"the rest planned")
        return 1 if problems else 0
    if args.book_command == "list":
        for e in book.entries:
            if not args.validated or e.validated:
                print(e.executed_file if args.validated else f"{e.id:6} {e.status:8} {e.file}")
        return 0
    if args.book_command == "execute":
        from scaledl.book.execute import run

        for name in args.names:  # fail on a bad name before spending minutes on the good ones
            entry = book.resolve(name)
            if not entry.validated:
                raise UsageError(f"{entry.kind} {entry.id} ({entry.title!r}) is planned in book.toml and not "
                                 f"written yet: there is no {entry.executed_file} to execute")
        device.announce()
        return run(book, args.names, progress=not args.quiet)
    if args.book_command == "html":
        from pathlib import Path

        from scaledl.book.html import build

        written = build(book, Path(args.out))
        print(f"wrote {len(written)} files to {args.out}")
        return 0
    if args.book_command == "readme":
        from scaledl.book.toc import update_readme

        print("README.md updated from book.toml" if update_readme(book) else "README.md already up to date")
        return 0
    if args.book_command == "journey":
        from scaledl.book import journey

        if not book.journey:
            raise UsageError("book.toml gives no entry a 'teaches' field: there is no journey to write")
        entries = [book.resolve(n) for n in args.names] or [e for e in book.entries if e.validated]
        if not args.write:
            import nbformat

            found = [p for e in entries for p in journey.problems(
                nbformat.read(book.path(e.executed_file), as_version=4), book, e)]
            print("\n".join(found) if found else f"{len(entries)} notebook(s) in step with book.toml")
            return 1 if found else 0
        written = [f for e in entries for f in journey.write(book, e)]
        print("\n".join(f"updated {f}" for f in written) if written else "nothing to change")
        return 0
    if args.book_command == "workspace":
        from pathlib import Path

        from scaledl.book import lab_notices, workspace

        folder = Path(args.dir) if os.path.isabs(args.dir) else book.root / args.dir
        for nb in args.reset:
            moved = workspace.reset(book, folder, nb)
            print(f"{nb}: the repository's version" + (f"; yours moved to {moved.name}" if moved else ""))
        if not args.reset:
            report = workspace.sync(book, folder)
            notices = report.notices()
            if args.notices_after_start and lab_notices.defer(folder.resolve(), notices):
                print(f"{report.summary(folder)}; {len(notices)} notice(s) below JupyterLab's start-up lines")
            else:
                print("\n".join(report.lines(folder)))
        return 0
    if args.book_command == "hub-links":
        from pathlib import Path

        from scaledl.book.hub_links import links_markdown

        text = links_markdown(book, args.hub_url, repository=args.repository, branch=args.branch, app=args.app)
        if "YOUR-ORG" in (args.repository or book.repository):
            print("note: book.toml still names the template repository; run `scaledl book set-repository URL` "
                  "with your course's fork first (or pass --repository)", file=sys.stderr)
        if args.out:
            Path(args.out).write_text(text)
            print(f"wrote {args.out}")
        else:
            print(text, end="")
        return 0
    if args.book_command == "set-repository":
        from scaledl.book.repository import set_repository

        changed = set_repository(book, args.url)
        print("\n".join(changed) if changed else "nothing to change")
        return 0
    raise AssertionError(args.book_command)


def _course_command(args) -> int:
    from pathlib import Path

    from scaledl.book import load

    if args.course_command == "release" and args.nbgrader:
        from scaledl.course.nbgrader_exchange import release_labs

        if args.zip:
            raise UsageError("--zip: not with --nbgrader (nbgrader's release_assignment hands the labs out)")
        written = release_labs(load(), Path(args.out), labs=args.lab, force=args.force)
        print(f"wrote {len(written)} notebooks to the nbgrader course {args.out} (source/ and release/, one "
              "assignment per lab); next: `nbgrader release_assignment LAB` there")
        return 0
    if args.course_command == "release" and args.lab:
        raise UsageError(f"--lab {args.lab[0]}: only with --nbgrader (the student bundle holds every lab)")
    if args.course_command == "release":
        from scaledl.course.release import release

        written = release(load(), Path(args.out), force=args.force, zip_too=args.zip)
        print(f"wrote a student bundle of {len(written)} files to {args.out}"
              + (f" and {Path(args.out).name}.zip" if args.zip else ""))
        return 0
    if args.course_command == "grade":
        from scaledl.course.grade import grade_lab

        grade_lab(args.lab, args.submissions, out=args.out, timeout_s=args.timeout, sandbox=args.sandbox,
                  jobs=args.jobs, seed=args.seed)
        return 0
    if args.course_command == "export":
        from scaledl.course.lms_export import export

        done = export(args.results, out=args.out, canvas=args.canvas, roster=args.roster,
                      written_max=args.written_max)
        left = sum(not p[3].startswith("no score for") for p in done.problems)
        print(f"wrote {', '.join(str(f) for f in done.files)}: {done.scores} score(s)"
              + (f"; {left} submission(s) left blank, listed above and in {done.files[-1]}" if left else ""))
        return 0
    if args.course_command == "gradescope":
        from scaledl.course.gradescope_zip import build

        path = build(args.lab, Path(args.out), book=load(), timeout_s=args.timeout, sandbox=args.sandbox)
        print(f"wrote {path}: upload it as the assignment's autograder (the instructor guide's Gradescope section)")
        return 0
    raise AssertionError(args.course_command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scaledl", description="The Scaling Deep Learning book's tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="backend and why, GPU, versions; exit 0 when the book can run")
    book = sub.add_parser("book", help="check, list, execute or export the book's notebooks")
    bsub = book.add_subparsers(dest="book_command", required=True)
    bsub.add_parser("check", help="static checks of book.toml and the notebooks (no kernel)")
    lst = bsub.add_parser("list", help="the book's notebooks")
    lst.add_argument("--validated", action="store_true", help="only executed files nbval validates, as paths")
    ex = bsub.add_parser("execute", help="re-execute notebooks in place in a fresh kernel")
    ex.add_argument("names", nargs="*", help="chapter or lab ids (01, lab02), file names or paths; "
                                             "none: every notebook that is not planned")
    ex.add_argument("--quiet", action="store_true", help="no progress bar")
    html = bsub.add_parser("html", help="a static HTML copy of the book")
    html.add_argument("--out", default="_build/html")
    bsub.add_parser("readme", help="rewrite README.md's table of chapters and labs (with statuses) from book.toml")
    jr = bsub.add_parser("journey", help="each notebook's opening (book-intro) and closing (book-nav) cells "
                                         "from book.toml, and folded answer keys: report, or --write them")
    jr.add_argument("names", nargs="*", help="chapter or lab ids (01, lab02); none: every written notebook")
    jr.add_argument("--write", action="store_true", help="update the notebooks (markdown cells only; a lab's "
                                                        "student copy is remade unless it holds student work)")
    ws = bsub.add_parser("workspace", help="make or refresh the reader's copy of the book that `make lab` opens "
                                           "(new and untouched files from the repository; the reader's kept)")
    ws.add_argument("--dir", default="workspace", help="the copy's folder, relative to the book (default workspace)")
    ws.add_argument("--reset", nargs="*", default=[], metavar="NB",
                    help="take the repository's version of these files (yours is moved aside, never deleted)")
    ws.add_argument("--notices-after-start", action="store_true",
                    help="print the notices (files kept, outputs replaced) once the JupyterLab serving the copy "
                         "has printed its start-up lines, where they stay in sight (make lab)")
    hub = bsub.add_parser("hub-links", help="nbgitpuller links that open every chapter and lab on a JupyterHub "
                                            "(markdown, one per notebook)")
    hub.add_argument("hub_url", help="the JupyterHub's address, e.g. https://hub.example.edu")
    hub.add_argument("--repository", help="the repository students clone: the students' copy (`scaledl course "
                                          "release`, pushed to git), which has no solutions (default: book.toml's)")
    hub.add_argument("--branch", default="main", help="its branch (default main)")
    hub.add_argument("--app", default="lab", choices=("lab", "classic"), help="JupyterLab (default) or the classic "
                                                                              "notebook")
    hub.add_argument("--out", help="write the markdown here instead of printing it")
    repo = bsub.add_parser("set-repository", help="set the repository URL in book.toml and the setup cells")
    repo.add_argument("url", help="https://github.com/ORG/REPO of your fork")
    course = sub.add_parser("course", help="run a course: release the student bundle, grade submitted labs")
    csub = course.add_subparsers(dest="course_command", required=True)
    rel = csub.add_parser("release", help="write the students' copy of the book: chapters without answer "
                                          "keys, student labs, the package; no solution or hidden test")
    rel.add_argument("out", help="folder to write (outside the repository); `git init` it or use --zip")
    rel.add_argument("--force", action="store_true", help="replace a non-empty OUT's contents (keeps its .git)")
    rel.add_argument("--zip", action="store_true", help="also write OUT.zip, for an LMS")
    rel.add_argument("--nbgrader", action="store_true", help="OUT is an nbgrader course: write each lab's "
                                                             "source/LAB/ and release/LAB/ there, nothing else")
    rel.add_argument("--lab", action="append", help="with --nbgrader: only this lab (repeat for more; default all)")
    grade = csub.add_parser("grade", help="grade a folder of submitted lab notebooks with the hidden tests; "
                                          "writes grades.csv and one feedback HTML per student")
    grade.add_argument("submissions", help="folder of .ipynb files: any names, a folder per student, or "
                                           "nbgrader's submitted/STUDENT/ASSIGNMENT/ layout (an nbgrader "
                                           "course's submitted/: its gradebook and feedback/ get the results)")
    grade.add_argument("--lab", required=True, help="the lab's id in book.toml, e.g. lab03")
    grade.add_argument("--out", default=None, help="output folder (default grades-LAB)")
    grade.add_argument("--timeout", type=float, default=300.0, help="seconds per notebook (default 300)")
    grade.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "user", "none"),
                       help="how student code is isolated (default auto: the strongest available; see the "
                            "instructor guide's threat model; none must be asked for by name)")
    grade.add_argument("--jobs", type=int, default=1, help="notebooks graded at once (default 1)")
    grade.add_argument("--seed", type=int, default=None, help="seed of the hidden tests' inputs (default: new "
                                                             "each run; recorded in batch.json)")
    exp = csub.add_parser("export", help="the labs' grades (grader output folders) as a Canvas gradebook import "
                                         "and a plain roster CSV; unmatched submissions are listed, never guessed")
    exp.add_argument("results", nargs="+", help="grader output folders (grades-LAB/, one per lab)")
    who = exp.add_mutually_exclusive_group(required=True)
    who.add_argument("--canvas", help="Canvas's gradebook export (Grades > Export): the roster, and the format")
    who.add_argument("--roster", help="a plain roster CSV: a student id column, a name, optionally email, sid")
    exp.add_argument("--out", default="lms-export", help="output folder (default lms-export)")
    exp.add_argument("--written-max", type=float, default=0.0, help="points of the written answers, added to "
                                                                     "each lab's points possible (default 0)")
    gs = csub.add_parser("gradescope", help="write LAB-gradescope.zip, the lab's autograder for Gradescope: "
                                           "setup.sh, run_autograder, the book's wheel, the solutions (the "
                                           "hidden tests); it grades as `course grade` does")
    gs.add_argument("lab", help="the lab's id in book.toml, e.g. lab03")
    gs.add_argument("--out", default=".", help="folder to write the zip in (default: here)")
    gs.add_argument("--timeout", type=float, default=300.0, help="seconds per notebook (default 300; keep "
                                                                 "Gradescope's limit above it)")
    gs.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "user", "account"),
                    help="the sandbox level every run asks for, and setup.sh checks (default auto: the strongest "
                         "that works in the container)")
    bench = sub.add_parser("bench", help="GPU only: check every kernel variant, then time it against a "
                                         "baseline measured in the same run; `bench netsim`: the network "
                                         "simulator's ranks against seconds, on the CPU; `bench mpi`: "
                                         "a network measured across hosts against the simulator")
    bench.add_argument("bench_args", nargs=argparse.REMAINDER, help="passed to scaledl.kernels.bench")
    kernels = sub.add_parser("kernels", help="what the compiler makes of the book's kernels, without a GPU")
    report = kernels.add_subparsers(dest="kernels_command", required=True).add_parser(
        "report", help="registers, spills, shared memory, occupancy and the inner loop of each kernel (PTX, "
                       "ptxas -v, SASS), and the GEMM model's predictions")
    report.add_argument("--arch", default="sm_90", choices=("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_120"),
                        help="sm_90: H100/H200 (default); sm_75: T4; sm_80: A100; sm_86: A10, RTX 30; "
                             "sm_89: L4, RTX 40; sm_120: RTX PRO 6000 Blackwell, RTX 50")
    report.add_argument("--only", nargs="+", metavar="NAME", help="these kernels (default: all; --list names them)")
    report.add_argument("--save", metavar="DIR", help="also write each kernel's PTX, ptxas -v output and SASS")
    report.add_argument("--list", action="store_true", help="print the kernels' names and exit")
    report.add_argument("--recorded", action="store_true", help="the report recorded in the package (sm_90), "
                                                               "where ptxas and nvdisasm are missing")
    report.add_argument("--write-record", action="store_true", help="rewrite the package's record with this "
                                                                   "machine's tools (scaledl.kernels.static_record)")
    from scaledl.validate import add_arguments as add_validate_arguments

    add_validate_arguments(sub.add_parser("validate", help="doctor, tests/gpu, bench and every GPU notebook's "
                                                           "cells, in one report (markdown + JSON); on the "
                                                           "simulator without a GPU"))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "doctor":
            return doctor()
        if args.command == "book":
            return _book_command(args)
        if args.command == "course":
            return _course_command(args)
        if args.command == "bench":
            if args.bench_args[:1] == ["netsim"]:  # CPU only: no device to announce
                from scaledl.comm.netsim_bench import main as netsim_bench_main

                return netsim_bench_main(args.bench_args[1:])
            if args.bench_args[:1] == ["mpi"]:  # a network, measured across hosts: no device either
                from scaledl.comm.cluster_bench import main as cluster_bench_main

                return cluster_bench_main(args.bench_args[1:])
            from scaledl.kernels.bench import main as bench_main

            device.announce()
            return bench_main(args.bench_args)
        if args.command == "kernels":
            from scaledl.kernels.static_record import run_from_args as kernels_report

            return kernels_report(args)
        if args.command == "validate":
            from scaledl.validate import run_from_args

            device.announce()
            return run_from_args(args, " ".join(["scaledl", *(sys.argv[1:] if argv is None else argv)]))
    except (UsageError, FileNotFoundError, device.BackendError) as err:  # a ValueError elsewhere is a bug: traceback
        print(f"scaledl: error: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:  # an optional package (scaledl._optional): say which extra brings it
        from scaledl._optional import explain

        command = " ".join(x for x in ("scaledl", args.command, getattr(args, f"{args.command}_command", None))
                           if x)
        text = explain(err, f"`{command}`")
        if text is None:
            raise
        print(f"scaledl: error: {text}", file=sys.stderr)
        return 2
    raise AssertionError(args.command)
