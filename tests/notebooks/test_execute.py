"""`scaledl book execute` in a throwaway book: a good notebook is replaced by its executed self, a failing
one is left exactly as it was, and a lab's student copy with edits survives re-execution."""

import os
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


@pytest.fixture
def book(write_book):
    tmp_path = write_book(write_book.chapter("00", "chapters/00_good.ipynb", title="Good"),
                          write_book.chapter("01", "chapters/01_bad.ipynb", title="Bad"),
                          write_book.lab("lab01", "labs/lab01_x.ipynb", "labs/solutions/lab01_x.ipynb", title="X"))
    good = new_notebook(metadata={"kernelspec": KERNELSPEC}, cells=[
        new_markdown_cell("# Good"),
        new_code_cell("import numpy as np\nrng = np.random.default_rng(0)\nprint(rng.integers(0, 100, 3))"),
        new_code_cell("import os\nprint(os.environ['PYTHONHASHSEED'], os.environ['SCALEDL_BACKEND'])"),
    ])
    nbformat.write(good, tmp_path / "chapters/00_good.ipynb")
    bad = new_notebook(metadata={"kernelspec": KERNELSPEC}, cells=[
        new_code_cell("x = 1"), new_code_cell("1 / 0  # the failing cell"), new_code_cell("print('after')"),
    ])
    nbformat.write(bad, tmp_path / "chapters/01_bad.ipynb")
    lab = new_notebook(metadata={"kernelspec": KERNELSPEC}, cells=[
        new_code_cell("def f():\n    ### BEGIN SOLUTION Task 1.1\n    return 42\n    ### END SOLUTION\nprint(f())"),
    ])
    nbformat.write(lab, tmp_path / "labs/solutions/lab01_x.ipynb")
    return tmp_path


def scaledl(root, *args):
    env = dict(os.environ, SCALEDL_BOOK_ROOT=str(root), SCALEDL_BACKEND="simulator")
    quiet = ["--quiet"] if args[0] == "execute" else []
    return subprocess.run([sys.executable, "-m", "scaledl", "book", *args, *quiet], capture_output=True,
                          text=True, env=env, timeout=600)


def test_execute_writes_outputs_deterministically(book):
    r = scaledl(book, "execute", "00")
    assert r.returncode == 0, r.stderr
    # the kernel is started with CurveZMQ (scaledl.book.execute.kernel_config): ipykernel has nothing to warn about
    assert "without encryption" not in r.stdout + r.stderr, r.stderr
    nb = nbformat.read(book / "chapters/00_good.ipynb", as_version=4)
    assert [c.execution_count for c in nb.cells if c.cell_type == "code"] == [1, 2]
    first = nb.cells[1].outputs[0].text
    assert nb.cells[2].outputs[0].text == "0 simulator\n"
    assert "execution" not in nb.cells[1].metadata  # no wall-clock stamps in committed notebooks
    assert scaledl(book, "execute", "00").returncode == 0
    again = nbformat.read(book / "chapters/00_good.ipynb", as_version=4)
    assert again.cells[1].outputs[0].text == first


def test_execute_keeps_a_folded_answer_code_cell_folded(book):
    """The metadata that collapses an answer-code cell in JupyterLab, and its first line, survive execution."""
    path = book / "chapters/00_good.ipynb"
    nb = nbformat.read(path, as_version=4)
    folded = {"collapsed": True, "jupyter": {"outputs_hidden": True, "source_hidden": True}, "tags": ["answer-code"]}
    note = "# Numbers for the answers below (folded so the answers stay hidden until you open them)."
    nb.cells.append(new_code_cell(f"{note}\nprint(6 * 7)", metadata=folded))
    nbformat.write(nb, path)
    assert scaledl(book, "execute", "00").returncode == 0
    cell = nbformat.read(path, as_version=4).cells[-1]
    assert cell.metadata == folded and cell.source.startswith(note + "\n")
    assert cell.outputs[0].text == "42\n" and cell.execution_count == 3


def test_widgets_do_not_make_reexecution_differ(book):
    path = book / "chapters/00_good.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(new_code_cell("import ipywidgets as W\nW.VBox([W.IntSlider(3), W.Dropdown(options=['a', 'b'])])"))
    nbformat.write(nb, path)
    assert scaledl(book, "execute", "00").returncode == 0
    first = path.read_bytes()
    assert b"application/vnd.jupyter.widget-state+json" in first
    assert scaledl(book, "execute", "00").returncode == 0
    assert path.read_bytes() == first


def test_failing_notebook_is_not_overwritten(book):
    path = book / "chapters/01_bad.ipynb"
    before = path.read_bytes()
    r = scaledl(book, "execute", "01")
    assert r.returncode == 1
    assert "chapters/01_bad.ipynb was NOT changed: a cell failed" in r.stderr
    assert "1 / 0  # the failing cell" in r.stderr and "ZeroDivisionError" in r.stderr
    assert path.read_bytes() == before


def test_lab_execution_makes_the_student_version_and_keeps_student_edits(book):
    assert scaledl(book, "execute", "lab01").returncode == 0
    student = book / "labs/lab01_x.ipynb"
    nb = nbformat.read(student, as_version=4)
    assert "raise NotImplementedError('Task 1.1')" in nb.cells[0].source
    assert nb.cells[0].outputs == []
    # The student answers, then the instructor re-executes the solution: the answer must survive.
    nb.cells[0].source = nb.cells[0].source.replace("raise NotImplementedError('Task 1.1')", "return 6 * 7")
    nbformat.write(nb, student)
    edited = student.read_bytes()
    r = scaledl(book, "execute", "lab01")
    assert r.returncode == 0
    assert "has edits of its own, so it was kept" in r.stdout
    assert student.read_bytes() == edited


def test_static_html_copy(book, tmp_path):
    assert scaledl(book, "execute", "00").returncode == 0
    out = tmp_path / "html"
    env = dict(os.environ, SCALEDL_BOOK_ROOT=str(book), SCALEDL_BACKEND="simulator")
    r = subprocess.run([sys.executable, "-m", "scaledl", "book", "html", "--out", str(out)], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    index = (out / "index.html").read_text()
    assert 'href="chapters/00_good.html"' in index  # the site's table of contents, from book.toml
    page = (out / "chapters" / "00_good.html").read_text()
    assert "<title>Good" in page and "0 simulator" in page  # the notebook's title, its stored outputs


def test_set_repository_rewrites_setup_cells_but_not_student_work(book):
    setup = ('try:\n    import scaledl\nexcept ModuleNotFoundError:\n'
             '    %pip install --quiet "scaledl @ git+https://github.com/YOUR-ORG/scaling-deep-learning"\n')
    for rel in ("chapters/00_good.ipynb", "labs/solutions/lab01_x.ipynb"):
        nb = nbformat.read(book / rel, as_version=4)
        nb.cells.insert(0, new_code_cell(setup))
        nbformat.write(nb, book / rel)
    assert scaledl(book, "execute", "lab01").returncode == 0
    bad = scaledl(book, "set-repository", "not a url")
    assert bad.returncode == 2 and "repository URL 'not a url' should look like https://" in bad.stderr
    r = scaledl(book, "set-repository", "https://github.com/my-course/sdl-fork")
    assert r.returncode == 0, r.stderr
    assert 'repository = "https://github.com/my-course/sdl-fork"' in (book / "book.toml").read_text()
    for rel in ("chapters/00_good.ipynb", "labs/solutions/lab01_x.ipynb", "labs/lab01_x.ipynb"):
        assert "git+https://github.com/my-course/sdl-fork\"" in nbformat.read(book / rel, 4).cells[0].source
