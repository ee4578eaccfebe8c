"""The reader's copy that `make lab` opens (scaledl.book.workspace), and tests that read only what git does not
ignore (tests/tracked.py).

- sync copies every chapter, student lab and docs/ file, never a solution; a second sync does nothing; after
  the repository changes, a file the reader never touched is updated and one they changed is kept and named;
- reset takes the repository's version and moves the reader's aside, never deleting it;
- workspace/ is git-ignored, and the workspace may not be the checkout or inside its chapters/ or labs/;
- JupyterLab's .ipynb_checkpoints/ and the workspace, planted in a checkout, are neither walked nor copied by
  the tests' tree helper, and no test copies or walks the book's folders without it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scaledl.book import load
from scaledl.book.workspace import MANIFEST, reader_files, reset, sync

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the shared tracked module
from tracked import copy_tracked, tracked  # noqa: E402

CHAPTER = "chapters/04_writing_gemm_kernels.ipynb"


@pytest.fixture
def book_copy(tmp_path):
    """A copy of the book (what git does not ignore) in its own folder: the 'repository' a test may change."""
    root = tmp_path / "repo"
    copy_tracked(root, "book.toml", "chapters", "labs", "docs")
    return load(root)


def test_sync_copies_the_readers_files_and_nothing_else(book_copy, tmp_path):
    ws = tmp_path / "ws"
    report = sync(book_copy, ws)
    files = reader_files(book_copy)
    assert sorted(report.added) == sorted(files) and not report.updated and not report.kept
    assert CHAPTER in files and "labs/lab03_quantizer_and_clipping.ipynb" in files
    assert not [f for f in files if "solutions" in f]
    assert any(f.startswith("docs/gpu-runs/") for f in files)       # the chapters link to the GPU records
    for rel in files:
        assert (ws / rel).read_bytes() == book_copy.path(rel).read_bytes()
    assert (ws / MANIFEST).is_file()
    again = sync(book_copy, ws)
    assert (again.added, again.updated, again.kept) == ([], [], [])


def test_after_a_pull_untouched_files_update_and_the_readers_are_kept(book_copy, tmp_path):
    ws = tmp_path / "ws"
    sync(book_copy, ws)
    mine = "chapters/03_networks_are_gemms.ipynb"
    (ws / mine).write_text((ws / mine).read_text() + " ")              # the reader ran and saved it
    for rel in (CHAPTER, mine):                                          # `git pull` brings new versions
        book_copy.path(rel).write_text(book_copy.path(rel).read_text() + "\n")
    report = sync(book_copy, ws)
    assert report.updated == [CHAPTER] and report.kept == [mine]
    assert (ws / CHAPTER).read_bytes() == book_copy.path(CHAPTER).read_bytes()
    assert (ws / mine).read_text().endswith(" ")                         # never overwritten
    assert any(mine in line and "make lab-reset NB=" in line for line in report.lines(ws))
    # a reader's change to a file the repository did not change is theirs, silently
    (ws / CHAPTER).write_text((ws / CHAPTER).read_text() + " ")
    assert sync(book_copy, ws).kept == [mine]


def test_reset_moves_the_readers_file_aside_and_takes_the_repositorys(book_copy, tmp_path):
    ws = tmp_path / "ws"
    sync(book_copy, ws)
    assert reset(book_copy, ws, CHAPTER) is None                         # untouched: nothing to keep
    (ws / CHAPTER).write_text("my work")
    moved = reset(book_copy, ws, CHAPTER)
    assert moved.read_text() == "my work" and moved.name.startswith("04_writing_gemm_kernels.mine-")
    assert (ws / CHAPTER).read_bytes() == book_copy.path(CHAPTER).read_bytes()
    (ws / CHAPTER).write_text("more work")
    second = reset(book_copy, ws, f"./{CHAPTER}")
    assert second != moved and second.read_text() == "more work" and moved.read_text() == "my work"
    assert sync(book_copy, ws).kept == []
    with pytest.raises(ValueError, match="NB must be one of the reader's files.*got 'chapters/nope.ipynb'"):
        reset(book_copy, ws, "chapters/nope.ipynb")


def test_the_workspace_cannot_be_the_checkout(book_copy):
    for bad in (book_copy.root, book_copy.root / "chapters", book_copy.root / "labs" / "x"):
        with pytest.raises(ValueError, match="workspace must not be the book's checkout"):
            sync(book_copy, bad)
    with pytest.raises(TypeError, match="workspace must be a pathlib.Path"):
        sync(book_copy, "workspace")


@pytest.mark.skipif(shutil.which("git") is None or subprocess.run(["git", "rev-parse"], cwd=ROOT,
                                                                   capture_output=True).returncode != 0,
                    reason="not a git checkout")
def test_the_workspace_is_ignored_by_git():
    got = subprocess.run(["git", "check-ignore", "-q", "workspace/chapters/x.ipynb"], cwd=ROOT)
    assert got.returncode == 0, "workspace/ must be in .gitignore: git pull and git status must not see it"


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_planted_checkpoints_and_workspace_are_neither_walked_nor_copied(tmp_path):
    repo = tmp_path / "repo"
    copy_tracked(repo, ".gitignore", "book.toml", "chapters")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    planted = ["chapters/.ipynb_checkpoints/04_writing_gemm_kernels-checkpoint.ipynb",
               "workspace/chapters/04_writing_gemm_kernels.ipynb", "chapters/__pycache__/x.pyc"]
    for rel in planted:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("https://github.com/OLD-ORG/old-url")
    (repo / "chapters" / "new_untracked.ipynb").write_text("{}")       # new, not yet added: still walked
    listed = tracked("chapters", "workspace", root=repo)
    assert not set(planted) & set(listed) and "chapters/new_untracked.ipynb" in listed
    out = tmp_path / "out"
    copy_tracked(out, "chapters", "workspace", root=repo)
    assert not any((out / rel).exists() for rel in planted)
    assert not any("OLD-ORG" in p.read_text() for p in out.rglob("*") if p.is_file())


TREE_WALK = re.compile(r"copytree\(\s*ROOT\b|\(ROOT\s*/\s*\"(chapters|labs|docs)\"\)\.rglob")


def test_no_test_copies_or_walks_the_book_without_the_tracked_helper():
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if ".ipynb_checkpoints" in path.parts or path.name == "tracked.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if TREE_WALK.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "copy or walk the book with tests/tracked.py instead:\n" + "\n".join(offenders)
