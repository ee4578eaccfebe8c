"""``scaledl course release``: the student bundle holds no solution, hidden test or answer key, and works.

The leak checks do not trust the release code: they classify the source notebooks' lines by marker and tag
themselves (scaledl.course.leaks), grep every file of the bundle, and are shown to catch planted leaks.
Run time: about 10 s (three releases of the whole book, its `book check` and one chapter's imports).
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from scaledl.book import load
from scaledl.course.bundle import SECRET_MARKERS, is_student_bundle, mark_book_toml
from scaledl.course.leaks import scan, secret_lines
from scaledl.book.site import colab_url, kaggle_url
from scaledl.course.release import release, strip_hidden, student_lab, with_colab_badge

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the shared tracked module
from tracked import copy_tracked  # noqa: E402
BOOK = load(ROOT)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "students"
    release(BOOK, out, zip_too=True)
    return out


def _notebooks(folder):
    return sorted(folder.rglob("*.ipynb"))


def test_bundle_has_every_chapter_and_student_lab_and_no_solution_folder(bundle):
    for e in BOOK.entries:
        if e.validated:
            assert (bundle / e.file).is_file(), e.file
            if e.solution:
                assert not (bundle / e.solution).exists()
    assert not (bundle / "labs" / "solutions").exists()
    for absent in ("tests", ".ci", "docs/instructor-guide.md", "INSTRUCTORS.md"):
        assert not (bundle / absent).exists(), absent
    for present in ("README.md", "LICENSE", "pyproject.toml", "environment.yml", "Makefile", "book.toml",
                    "src/scaledl/__init__.py"):
        assert (bundle / present).is_file(), present
    assert is_student_bundle(bundle) and not is_student_bundle(ROOT)


def test_no_marker_or_secret_tag_in_any_notebook_and_no_marker_outside_the_tools(bundle):
    files = [p for p in bundle.rglob("*") if p.is_file()]
    assert len(files) > 100
    for path in files:
        rel = path.relative_to(bundle).as_posix()
        text = path.read_bytes().decode("utf-8", errors="replace")
        if rel.startswith("src/") and rel.endswith(".py") or rel == "CONTRIBUTING.md":
            continue  # the tools that define the markers, and the authors' guide that explains them
        for marker in (*SECRET_MARKERS, "HIDDEN TESTS"):
            assert marker not in text, f"{rel} holds {marker!r}"
    for path in _notebooks(bundle):
        for cell in json.loads(path.read_text())["cells"]:
            tags = set(cell.get("metadata", {}).get("tags", []))
            assert not tags & {"answer-key", "solution", "hidden-test", "hidden-tests"}, path


def test_no_line_of_a_solution_block_or_answer_key_reaches_the_bundle(bundle):
    secrets = secret_lines(BOOK)
    assert len(secrets) > 100  # every lab's solution blocks and every chapter's answer keys count
    assert scan(bundle, secrets) == []


def test_chapters_keep_their_outputs_and_lose_only_answers(bundle):
    e = next(e for e in BOOK.entries if e.kind == "chapter" and e.validated and
             any("answer-key" in c.metadata.get("tags", []) for c in nbformat.read(BOOK.path(e.file), 4).cells))
    source = with_colab_badge(nbformat.read(BOOK.path(e.file), 4), colab_url(BOOK.repository, e.file),
                              kaggle_url(BOOK.repository, e.file))
    released = nbformat.read(bundle / e.file, 4)
    answers = {"answer-key", "answer-code"}  # worked answers, and the code cells that only compute them
    kept = [c for c in source.cells if not answers.intersection(c.metadata.get("tags", []))]
    assert len(kept) < len(source.cells)
    assert any("answer-code" in c.metadata.get("tags", []) for c in source.cells)
    assert [c.source for c in released.cells] == [c.source for c in kept]
    assert [c.get("outputs") for c in released.cells] == [c.get("outputs") for c in kept]


def test_labs_are_fresh_student_versions(bundle):
    for e in BOOK.entries:
        if e.kind == "lab" and e.validated:
            fresh = student_lab(with_colab_badge(nbformat.read(BOOK.path(e.solution), 4),
                                                 colab_url(BOOK.repository, e.file),
                                                 kaggle_url(BOOK.repository, e.file)))
            released = nbformat.read(bundle / e.file, 4)
            assert released == fresh
            assert any("raise NotImplementedError" in c.source for c in released.cells), e.file


def test_every_released_notebook_opens_in_colab_from_its_title(bundle):
    """The badge under each title links to that very file in book.toml's repository (the students' one), and
    the title's first line, the cells and their ids are the repository's (the grader still knows the lab)."""
    from scaledl.book.student_copy import untouched

    for e in BOOK.entries:
        if not e.validated:
            continue
        released = nbformat.read(bundle / e.file, 4)
        url = colab_url(BOOK.repository, e.file)
        assert url and url.endswith("/" + e.file)
        kaggle = kaggle_url(BOOK.repository, e.file)
        assert kaggle == "https://kaggle.com/kernels/welcome?src=" + url.replace(
            "https://colab.research.google.com/github/", "https://github.com/")
        assert released.cells[0].source.rstrip().endswith(f"({url}) [![Open In Kaggle](https://kaggle.com/static/"
                                                          f"images/open-in-kaggle.svg)]({kaggle})"), e.file
        assert "colab-badge.svg" in released.cells[0].source
        source = nbformat.read(BOOK.path(e.executed_file), 4)
        assert released.cells[0].source.splitlines()[0] == source.cells[0].source.splitlines()[0]
        if e.kind == "lab":
            assert untouched(released), f"{e.file}: the badge broke the student copy's stamp"


def test_bundle_passes_its_own_book_check_and_a_chapter_imports(bundle):
    env = dict(os.environ, PYTHONPATH=str(bundle / "src"), SCALEDL_BACKEND="simulator")
    env.pop("SCALEDL_BOOK_ROOT", None)
    check = subprocess.run([sys.executable, "-m", "scaledl", "book", "check"], cwd=bundle, env=env,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "0 problem(s)" in check.stdout
    chapter = nbformat.read(bundle / "chapters" / "03_networks_are_gemms.ipynb", 4)
    imports = [ln for c in chapter.cells if c.cell_type == "code" for ln in c.source.splitlines()
               if ln.startswith(("import ", "from "))]
    assert imports
    code = "\n".join(imports + ["import scaledl", "print(scaledl.__file__)"])
    run = subprocess.run([sys.executable, "-c", code], cwd=bundle, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert Path(run.stdout.strip().splitlines()[-1]).resolve().is_relative_to(bundle.resolve())


def test_zip_holds_the_bundle_under_one_folder(bundle):
    with zipfile.ZipFile(bundle.with_name("students.zip")) as z:
        names = z.namelist()
    assert "students/book.toml" in names and "students/labs/lab03_quantizer_and_clipping.ipynb" in names
    assert not [n for n in names if "solutions" in n or "/.git/" in n]


def _plant(root: Path) -> tuple[str, list[str]]:
    """Copy the book into ``root`` and give lab03's solution hidden tests in the three forms GRADE may use."""
    copy_tracked(root, "book.toml", "README.md", "chapters", "labs")
    e = BOOK.resolve("lab03")
    path = root / e.solution
    nb = nbformat.read(path, 4)
    lines = ["assert quantize_hidden_probe(seed=9117) == 'ties-to-even'",
             "check_hidden_bypass(seed=4242, tag='tagged')",
             "check_hidden_bypass(seed=5353, tag='nbgrader')"]
    nb.cells.append(nbformat.v4.new_code_cell(f"print('visible check')\n### BEGIN HIDDEN TESTS\n{lines[0]}\n"
                                              f"### END HIDDEN TESTS"))
    nb.cells.append(nbformat.v4.new_code_cell(lines[1], metadata={"tags": ["hidden-test"]}))
    nb.cells.append(nbformat.v4.new_code_cell(lines[2], metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "grade_id": "hidden_task1", "points": 2}}))
    path.write_text(nbformat.writes(nb))
    return e.file, lines


def test_hidden_tests_in_every_form_are_removed_and_a_planted_leak_is_caught(tmp_path):
    src = tmp_path / "book"
    src.mkdir()
    lab, lines = _plant(src)
    book = load(src)
    secrets = secret_lines(book)
    assert {" ".join(x.split()) for x in lines} <= secrets
    out = tmp_path / "out"
    release(book, out)
    text = (out / lab).read_text()
    assert "visible check" in text  # the visible part of a cell with hidden tests stays
    for line in lines:
        assert line.split("(")[0] not in text
    # the scan is able to fail: a solution notebook, or one hidden line, copied into the bundle is found
    shutil.copy2(src / book.resolve("lab03").solution, out / "labs" / "copied.ipynb")
    (out / "notes.txt").write_text("a student's notes\n    " + lines[0] + "\n")
    found = scan(out, secrets)
    assert any(f.startswith("labs/copied.ipynb: holds the marker '### BEGIN SOLUTION'") for f in found)
    assert any(f.startswith("notes.txt: holds a line of") for f in found)
    assert any("copied.ipynb: cell" in f and "nbgrader" in f for f in found)


def test_refuses_a_non_empty_folder_and_the_repository(tmp_path):
    with pytest.raises(ValueError, match="never written into the repository"):
        release(BOOK, ROOT / "_build" / "students")
    with pytest.raises(ValueError, match="never written into the repository"):
        release(BOOK, ROOT.parent)
    out = tmp_path / "students"
    (out / ".git").mkdir(parents=True)
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "old.txt").write_text("last term")
    with pytest.raises(ValueError, match=r"out=.*students' is not empty \(1 entries\); pass --force"):
        release(BOOK, out)
    release(BOOK, out, force=True)
    assert not (out / "old.txt").exists() and (out / ".git" / "HEAD").is_file()  # a re-release keeps git


@pytest.mark.parametrize("source, message", [
    ("### BEGIN HIDDEN TESTS\nx = 1", "never closed"),
    ("x = 1\n### END HIDDEN TESTS", "line 2 closes a hidden-test block that was never opened"),
    ("### BEGIN HIDDEN TESTS\n### BEGIN HIDDEN TESTS\n", "line 2 opens a hidden-test block inside"),
])
def test_unbalanced_hidden_markers_are_errors(source, message):
    with pytest.raises(ValueError, match=message):
        strip_hidden(source, where="lab03 cell 4")


def test_book_toml_without_a_book_table_is_an_error():
    with pytest.raises(ValueError, match=r"expected a \[book\] table"):
        mark_book_toml("[[parts]]\nid = 'I'\n")
