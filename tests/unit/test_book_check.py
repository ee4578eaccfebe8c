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
    from scaledl.labs.release import student_version

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
    from scaledl.labs.release import student_version

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
