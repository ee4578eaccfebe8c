"""``scaledl book set-repository URL``: every copy of the repository URL follows book.toml's, the README's,
CONTRIBUTING's, pyproject's and the Colab links included; other URLs stay. About 5 s."""

import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from scaledl.book import load
from scaledl.book.repository import set_repository

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the shared tracked module
from tracked import copy_tracked  # noqa: E402
OLD, NEW = "https://example.org/r", "https://github.com/my-course/sdl-fork"
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def _setup(extra=""):
    return ('try:\n    import scaledl\nexcept ModuleNotFoundError:\n'
            f'    %pip install --quiet "scaledl{extra} @ git+{OLD}"\n')


@pytest.fixture
def book(write_book):
    root = write_book(write_book.chapter("00", "chapters/00_a.ipynb", status="draft"),
                      write_book.lab("lab01", "labs/lab01_x.ipynb", "labs/solutions/lab01_x.ipynb"))
    chapter = new_notebook(metadata={"kernelspec": KERNELSPEC}, cells=[
        new_markdown_cell(f"[Open in Colab](https://colab.research.google.com/github/x/y/blob/main/a.ipynb) "
                          f"or {OLD}/issues"),
        new_code_cell(_setup("[mpi]"))])
    nbformat.write(chapter, root / "chapters/00_a.ipynb")
    lab = new_notebook(metadata={"kernelspec": KERNELSPEC}, cells=[
        new_code_cell(_setup()),
        new_code_cell("def f():\n    ### BEGIN SOLUTION Task 1\n    return 1\n    ### END SOLUTION")])
    nbformat.write(lab, root / "labs/solutions/lab01_x.ipynb")
    (root / "README.md").write_text(f"Clone {OLD}.git; not {OLD}-archive.\n")
    (root / "CONTRIBUTING.md").write_text(f"Issues: {OLD}/issues\n")
    (root / "pyproject.toml").write_text('[project]\nname = "scaledl"\n\n[project.urls]\n'
                                         'Homepage = "https://example.org/book"\n'
                                         'Repository = "https://github.com/someone/else"\n')
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text(f"Fork {OLD}\n")
    return root


def test_every_copy_of_the_url_follows(book):
    changed = set_repository(load(book), NEW + "/")
    assert set(changed) == {"book.toml", "chapters/00_a.ipynb", "labs/solutions/lab01_x.ipynb",
                            "labs/lab01_x.ipynb", "README.md", "CONTRIBUTING.md", "pyproject.toml",
                            "docs/guide.md"}
    assert load(book).repository == NEW
    assert (book / "README.md").read_text() == f"Clone {NEW}.git; not {OLD}-archive.\n"
    assert (book / "CONTRIBUTING.md").read_text() == f"Issues: {NEW}/issues\n"
    assert (book / "docs/guide.md").read_text() == f"Fork {NEW}\n"
    pyproject = (book / "pyproject.toml").read_text()
    assert f'Repository = "{NEW}"' in pyproject and 'Homepage = "https://example.org/book"' in pyproject
    chapter = nbformat.read(book / "chapters/00_a.ipynb", 4)
    assert f'"scaledl[mpi] @ git+{NEW}"' in chapter.cells[1].source
    assert f"{NEW}/issues" in chapter.cells[0].source
    assert "colab.research.google.com/github/x/y/" in chapter.cells[0].source  # another repository's link
    for rel in ("labs/solutions/lab01_x.ipynb", "labs/lab01_x.ipynb"):
        assert f'"scaledl @ git+{NEW}"' in nbformat.read(book / rel, 4).cells[0].source
    assert set_repository(load(book), NEW) == []  # a second run changes nothing


def test_a_bad_url_changes_nothing(book):
    before = (book / "README.md").read_text()
    with pytest.raises(ValueError, match="repository URL 'github.com/x' should look like https://"):
        set_repository(load(book), "github.com/x")
    assert (book / "README.md").read_text() == before


def test_the_real_book_keeps_no_copy_of_its_old_url(tmp_path):
    copy_tracked(tmp_path, "book.toml", "README.md", "CONTRIBUTING.md", "pyproject.toml", "chapters", "labs", "docs",
                 "INSTRUCTORS.md")
    old = load(tmp_path).repository
    changed = set_repository(load(tmp_path), NEW)
    assert {"book.toml", "README.md", "CONTRIBUTING.md", "pyproject.toml"} <= set(changed)
    old_gh = old.removeprefix("https://github.com/")
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix in (".md", ".toml", ".ipynb"):
            text = path.read_text()
            assert old not in text and f"colab.research.google.com/github/{old_gh}" not in text, path


def test_kaggle_links_follow_the_repository():
    from scaledl.book.repository import replace_url
    from scaledl.book.site import kaggle_url

    old = "https://github.com/a/b"
    link = kaggle_url(old, "chapters/00_a.ipynb")
    assert replace_url(f"[Open in Kaggle]({link})", old, NEW) == \
        f"[Open in Kaggle]({kaggle_url(NEW, 'chapters/00_a.ipynb')})"
