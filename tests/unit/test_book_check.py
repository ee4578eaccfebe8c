"""`scaledl book check` on small synthetic books: each class of problem is found, a clean book passes."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from scaledl.book import load, nbfile
from scaledl.book.check import check_book, student_work

KERNELSPEC = nbfile.KERNELSPEC


@pytest.fixture
def make_book(write_book):
    def make(chapter_status="done", lab_status="planned"):
        return write_book(
            write_book.chapter("00", "chapters/00_a.ipynb", status=chapter_status, title="A"),
            write_book.lab("lab01", "labs/lab01_x.ipynb", "labs/solutions/lab01_x.ipynb", status=lab_status))
    return make


def executed_notebook(*sources, outputs=None):
    nb = new_notebook(metadata={"kernelspec": KERNELSPEC})
    nb.cells.append(new_markdown_cell("# A"))
    for i, src in enumerate(sources, 1):
        cell = new_code_cell(src, execution_count=i)
        cell.outputs = [new_output("stream", name="stdout", text=f"{i}\n")]
        nb.cells.append(cell)
    return nb


def test_clean_book_has_no_problems(make_book):
    root = make_book()
    nbfile.write(executed_notebook("print(1)", "print(2)"), root / "chapters/00_a.ipynb")
    assert check_book(load(root)) == []


def test_missing_notebook_and_stray_notebook(make_book):
    root = make_book()
    nbfile.write(executed_notebook("print(1)"), root / "chapters/99_stray.ipynb")
    problems = check_book(load(root))
    assert any("chapters/00_a.ipynb: listed in book.toml as chapter 00 (done) but missing" in p for p in problems)
    assert any("chapters/99_stray.ipynb: on disk but not in book.toml" in p for p in problems)


def test_unexecuted_notebook(make_book):
    root = make_book()
    nb = executed_notebook("print(1)")
    nb.cells[1].outputs = []
    nb.cells[1].execution_count = None
    nbfile.write(nb, root / "chapters/00_a.ipynb")
    problems = check_book(load(root))
    assert any("no stored outputs" in p for p in problems)
    assert any("were never executed" in p for p in problems)


def test_out_of_order_counts_error_output_and_machine_path(make_book):
    root = make_book()
    nb = executed_notebook("a", "b", "c")
    nb.cells[2].execution_count = 7
    nb.cells[3].outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                                      traceback=[])]
    nb.cells[1].outputs = [new_output("stream", name="stdout", text="saved to /home/alice/x.png\n")]
    nbfile.write(nb, root / "chapters/00_a.ipynb")
    problems = check_book(load(root))
    assert any("execution counts [1, 7, 3] are not 1, 2, 3" in p for p in problems)
    assert any("cell 3 stores an error (ZeroDivisionError: division by zero)" in p for p in problems)
    assert any("cell 1 output shows a machine path ('/home/alice/'" in p for p in problems)


def test_wrong_kernelspec(make_book):
    root = make_book()
    nb = executed_notebook("print(1)")
    nb.metadata["kernelspec"] = {"name": "my-venv", "language": "python"}
    nbformat.write(nb, root / "chapters/00_a.ipynb")
    assert any("kernelspec is" in p and "expected name 'python3'" in p for p in check_book(load(root)))


def test_planned_entries_are_not_required(make_book):
    root = make_book(chapter_status="planned")
    assert check_book(load(root)) == []


def test_lab_student_version_must_be_derived_from_solution(make_book):
    from scaledl.book.student_copy import student_version

    root = make_book(chapter_status="planned", lab_status="draft")
    solution = executed_notebook("def f():\n    ### BEGIN SOLUTION Task 1.1\n    return 1\n    ### END SOLUTION")
    nbfile.write(solution, root / "labs/solutions/lab01_x.ipynb")
    nbfile.write(student_version(solution), root / "labs/lab01_x.ipynb")
    assert check_book(load(root)) == []
    # The solution changes and the (untouched) student copy is not remade: a stale copy, reported.
    solution.cells[1].source += "\n# a new hint"
    nbfile.write(solution, root / "labs/solutions/lab01_x.ipynb")
    assert any("labs/lab01_x.ipynb: differs from the student version" in p for p in check_book(load(root)))


def test_a_file_jupyterlab_would_rewrite(make_book):
    root = make_book()
    nb = executed_notebook("print(1)")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["widgets"] = {"state": {"max": 1.0}}
    nbformat.write(nb, root / "chapters/00_a.ipynb")  # nbformat keeps 1.0; JavaScript would save 1
    problems = check_book(load(root))
    assert any("JupyterLab writes" in p and "'Python 3 (ipykernel)'" in p for p in problems)
    assert any("not in the form JupyterLab saves" in p for p in problems)
    nbfile.write(nb, root / "chapters/00_a.ipynb")
    assert check_book(load(root)) == []
    assert '"max": 1\n' in (root / "chapters/00_a.ipynb").read_text()


def test_a_students_edited_copy_is_kept_work_not_a_problem(make_book):
    from scaledl.book.student_copy import student_version

    root = make_book(chapter_status="planned", lab_status="draft")
    solution = executed_notebook("def f():\n    ### BEGIN SOLUTION Task 1.1\n    return 1\n    ### END SOLUTION")
    nbfile.write(solution, root / "labs/solutions/lab01_x.ipynb")
    mine = student_version(solution)
    mine.cells[1].source = mine.cells[1].source.replace("raise NotImplementedError('Task 1.1')", "return 2")
    mine.cells[1].execution_count = 3
    mine.metadata["kernelspec"]["display_name"] = "My env"  # anything a student's Jupyter writes
    nbformat.write(mine, root / "labs/lab01_x.ipynb")
    assert check_book(load(root)) == []
    assert student_work(load(root)) == ["labs/lab01_x.ipynb"]


def test_the_real_book_passes():
    problems = check_book(load())
    assert problems == [], "\n".join(problems)


def test_readme_table_follows_book_toml(make_book):
    from scaledl.book.toc import README_END, README_START, update_readme

    root = make_book(chapter_status="planned")
    (root / "README.md").write_text(f"# T\n\n{README_START}\nstale\n{README_END}\n\nmore\n")
    assert any("README.md: its table" in p and "scaledl book readme" in p for p in check_book(load(root)))
    assert update_readme(load(root)) is True
    text = (root / "README.md").read_text()
    assert "| I P | Chapter 00 | A | planned (not written yet) | not needed |" in text and text.endswith("more\n")
    assert check_book(load(root)) == [] and update_readme(load(root)) is False


def with_answer_key(nb, source, tag="answer-key"):
    """``nb`` with a markdown cell tagged ``tag`` holding ``source`` appended."""
    cell = new_markdown_cell(source)
    cell.metadata["tags"] = [tag]
    nb.cells.append(cell)
    return nb


@pytest.mark.parametrize("prompt", [
    "**2.** Prune the MLP to 95 % globally. How sparse does each layer end up?",  # chapters 11, 12, 17
    "**Exercise 2.** Data parallelism copies the whole training state.",  # chapters 13, 14, 16, 18, 19
    "**Question 1.3.** Why 56.25 % and not 50 %?",  # the labs
    "2. Fit the clean curve from 16 samples instead of 64.",  # chapters 01-10 and 15: a list item
    "## Exercises",
])
def test_an_exercise_inside_an_answer_key_cell_is_reported(make_book, prompt):
    root = make_book()
    nb = with_answer_key(executed_notebook("print(1)"), f"*Answer.* Eight of ten survive.\n\n{prompt}")
    nbfile.write(nb, root / "chapters/00_a.ipynb")
    problems = check_book(load(root))
    assert len(problems) == 1, problems
    assert problems[0].startswith("chapters/00_a.ipynb: cell 2 is tagged 'answer-key' but holds an exercise prompt")
    assert prompt[:20] in problems[0] and "untagged markdown cell" in problems[0]


def test_a_solution_tagged_cell_is_checked_too_and_answers_alone_pass(make_book):
    root = make_book()
    nb = executed_notebook("print(1)")
    # Answers that number their points "(1)", or whose line wraps at a number, hold no prompt.
    with_answer_key(nb, "**Answers.** (1) In a binade the values are even.\n(2) Saturating, as above.")
    with_answer_key(nb, "*Answer.* The loss falls from 0.5 to 0.\n12. The model is a per-frame MLP.")
    nbfile.write(nb, root / "chapters/00_a.ipynb")
    assert check_book(load(root)) == []
    with_answer_key(nb, "*Answer.* Yes.\n\n**3.** Use the saving per isolated zero.", tag="solution")
    nbfile.write(nb, root / "chapters/00_a.ipynb")
    assert [p.split(" but ")[0] for p in check_book(load(root))] == [
        "chapters/00_a.ipynb: cell 4 is tagged 'solution'"]


def test_no_answer_key_cell_of_the_real_book_holds_an_exercise():
    """Every notebook on disk, planned or draft included (book check only reads the validated ones)."""
    from scaledl.book.check import check_answer_keys, notebooks_on_disk

    book = load()
    problems = [p for rel in notebooks_on_disk(book.root)
                for p in check_answer_keys(nbformat.read(book.path(rel), as_version=4), rel)]
    assert problems == [], "\n".join(problems)


# -- Answer code: every code cell of an exercises section is tagged and folded -------------------------------

def _copy_of_the_book(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared tracked module
    from tracked import copy_tracked

    root = tmp_path / "book"
    copy_tracked(root, "book.toml", "chapters", "labs")
    return root


CH19 = "chapters/19_gpus_clusters_accelerators.ipynb"  # its "## Exercises" heading is not a cell's first line


def test_an_unfolded_answer_code_cell_planted_in_a_copy_of_a_chapter_fails_the_check(tmp_path):
    from scaledl.book import journey
    from scaledl.book.site import for_the_site
    from scaledl.book.student_copy import student_version

    root = _copy_of_the_book(tmp_path)
    assert check_book(load(root)) == []                               # the copy passes as the book does
    nb = nbformat.read(root / CH19, as_version=4)
    prompt = next(i for i, c in enumerate(nb.cells) if c.source.startswith("**Exercise 2.**"))
    planted = new_code_cell("print(99 * 7)  # the answer's number, in plain sight")
    planted.outputs = [new_output("stream", name="stdout", text="693\n")]
    nb.cells.insert(prompt + 1, planted)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    for n, cell in enumerate(code, 1):                                # as one run top to bottom numbers them
        cell.execution_count = n
    nbfile.write(nb, root / CH19)
    problems = check_book(load(root))
    assert problems == [f"{CH19}: code cell {prompt + 1} computes exercise answers but is not tagged 'answer-code' "
                        f"(the site and the students' copy leave such cells out); run `scaledl book journey "
                        f"--write 19`"], problems
    # untagged, it is still left out of the static book and of a student's copy
    assert "print(99 * 7)" not in nbformat.writes(for_the_site(nb, links=""))
    assert "print(99 * 7)" not in nbformat.writes(student_version(nb))
    # tagged but shown in full: still a problem
    nb.cells[prompt + 1].metadata["tags"] = ["answer-code"]
    nbfile.write(nb, root / CH19)
    assert [p.split(":")[1] for p in check_book(load(root))] == [
        f" code cell {prompt + 1} is tagged 'answer-code' but not folded"]
    # the book's own tooling folds it, and the check passes again
    book = load(root)
    assert journey.write(book, book.resolve("19")) == [CH19]
    assert check_book(load(root)) == []
    cell = nbformat.read(root / CH19, as_version=4).cells[prompt + 1]
    assert cell.metadata.jupyter == {"source_hidden": True, "outputs_hidden": True} and cell.metadata.collapsed
    assert cell.source.startswith("# Numbers for the answers below (folded") and cell.outputs[0].text == "693\n"


def test_an_answer_key_outside_an_exercises_section_fails_the_check(tmp_path):
    root = _copy_of_the_book(tmp_path)
    nb = nbformat.read(root / CH19, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "## Exercises" in c.source)
    nb.cells[at].source = nb.cells[at].source.replace("## Exercises", "**Exercises**")  # the heading lost
    nbfile.write(nb, root / CH19)
    problems = check_book(load(root))
    assert problems and all("is tagged 'answer-key' but no exercises heading" in p for p in problems), problems
    assert len(problems) == sum("answer-key" in c.metadata.get("tags", []) for c in nb.cells)
