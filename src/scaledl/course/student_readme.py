"""The README of the students' bundle (``scaledl course release``), written for students.

The book's own README is the authors': it sends readers to the instructor guide and to ``make test``, neither
of which is in the bundle. This one says what the bundle holds, how to open a notebook, how the checks in a
lab work, and how to hand a lab in. Its table of chapters and labs sits between the README markers
(:data:`scaledl.book.toc.README_START`), so ``scaledl book check`` run in the bundle checks it against
``book.toml`` and ``scaledl book readme`` can rewrite it. Every link in it is relative to the bundle's root
and names a file the bundle holds (tests/unit/test_release_readme.py checks every link of the bundle).

>>> from scaledl.book import load
>>> text = student_readme(load())
>>> "make test" in text or "instructor-guide" in text or "INSTRUCTORS" in text
False
"""

from __future__ import annotations

from scaledl.book.toc import README_END, README_START, Book, status_table

TEMPLATE = """\
# {title}: your course's copy

*{subtitle}*

This folder is the copy of the book your course works from: every chapter with its outputs, and the labs you
hand in. The solutions and the tests your labs are graded with are not in it.

## What is here

- `chapters/`: the chapters, as Jupyter notebooks with their outputs. Read them as they are, or run them and
  change them.
- `labs/`: the labs. Each is a notebook with tasks (code you write), checks that test your code as you go, and
  questions you answer in writing.
- `src/scaledl/`: the book's Python package, which the notebooks import. Without a GPU, its kernels run on
  Numba's CUDA simulator, slowly but with exact results.
- `book.toml`: the table of contents; `pyproject.toml`, `environment.yml` and `Makefile`: how to install the
  package; `references.bib`: the works the book cites; [`LICENSE`](LICENSE): the licence.

{table}

The GPU column says where a GPU is *recommended*: there the notebook also measures the device it runs on.
Every notebook runs without one.

## Opening a notebook

- **Colab.** The *Open in Colab* badge under each notebook's title opens it there. Otherwise *File > Open
  notebook*, then *GitHub* with this repository's address ({repository}) if your course published it there, or
  *Upload* with the `.ipynb` file. For a notebook marked *recommended* above,
  choose a GPU runtime (*Runtime > Change runtime type*) before running it.
- **Kaggle.** *Create > New notebook*, then *File > Import notebook*. In the notebook's settings switch
  *Internet* on (the first code cell installs the book's package) and pick a GPU accelerator where one is
  recommended.
- **A JupyterHub.** Open the notebook from this folder in your home directory. The hub normally has the
  package installed; where it does not, the first code cell installs it.
- **Your own machine** (Python 3.10 or newer, and `make`): `make lab` in this folder installs the package into
  `.venv` and opens JupyterLab; it prints the address to open in your browser. Without `make`:
  `python3 -m venv .venv && .venv/bin/pip install -e ".[lab,mpi,kernels]" && .venv/bin/jupyter lab`.

Run a notebook from the top (*Run > Run All Cells*, or Shift-Enter cell by cell). Its first code cell installs
the `scaledl` package where it is missing (Colab, Kaggle) and does nothing where it is installed.

## Working on a lab

- **Tasks.** Write your code where a cell says `# YOUR CODE HERE (Task 1.1)`, in place of the
  `raise NotImplementedError("Task 1.1")` line under it. Keep the function names and arguments the cell gives.
- **Checks.** The cells after each task run your code on test inputs. When it is right they say so (`all ...
  values match`, `PASSED`); when it is wrong they raise an error and show the first values that differ, `Yours`
  beside `Spec` (what the specification gives). Run them again after every change, and run the whole notebook
  again (*Kernel > Restart Kernel and Run All Cells*) before you hand it in.
- **Graded tests.** A cell that reads `# Task 1.1: 3 points. Hidden tests, with new sizes and seeds, run here
  when the lab is graded.` does nothing in your copy. When your lab is graded, tests run there that call your
  functions on new inputs (other sizes, other random data), on a CPU. Passing the checks in the notebook is a
  good sign, not a guarantee: write code that is right for any size, not only the ones the checks use.
- **Your own work.** A task answered by calling the book's own solution of it (for instance the package's
  quantizer, where the task is to write one) earns no points; where a task asks for a CUDA kernel, the answer
  must launch a kernel you wrote.
- **Written answers.** Answer the questions in the cells that read *Your answer* (double-click one to write in
  it; they are Markdown cells). Your instructor reads and grades them by hand; the points of the tasks above
  are computed by the tests alone.
- **Keep the lab's cells.** Work in the notebook you were given, not a copy pasted into a new one: the grader
  recognises a lab by its cells. Adding cells of your own is fine.

## Handing in a lab

1. Save the notebook (Ctrl-S, or *File > Save*), then run its last working cell, *Check before you hand in*:
   it runs your task cells again and says whether the file will be graded as this lab, which tasks are still
   unanswered and whether each visible check passes. A downloaded file can be checked the same way:
   `python -m scaledl.labs.handin lab02_tiled_gemm.ipynb`.
2. Hand in that one `.ipynb` file, the way your course asks: upload it to the course's site (on Colab,
   *File > Download > Download .ipynb*; on Kaggle, *File > Download notebook*), or, on a JupyterHub with an
   *Assignment List*, *Submit* it there.
3. If you hand in the same lab twice, the most recent file is the one graded.

You get back a feedback page: your points for each task, what the tests found, and your notebook as it ran
for grading.

## Licence

{license} See [`LICENSE`](LICENSE).
"""


def student_readme(book: Book) -> str:
    """The students' README for ``book``: its title, repository and table of chapters and labs filled in."""
    import tomllib

    with open(book.root / "book.toml", "rb") as f:
        subtitle = tomllib.load(f).get("book", {}).get("subtitle", "")
    table = f"{README_START}\n{status_table(book)}\n{README_END}"
    text = TEMPLATE.format(title=book.title, subtitle=subtitle, repository=book.repository, table=table,
                           license=book.license)
    return text if subtitle else text.replace("\n**\n", "\n", 1)
