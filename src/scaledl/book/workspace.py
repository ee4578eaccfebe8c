"""The reader's working copy of the book: what ``make lab`` opens, so that running a chapter never rewrites the
repository.

Reading this book means running it, and JupyterLab saves what runs (autosave, every two minutes by default):
new outputs, new widget ids, the backend line of this machine. Opened in place, a chapter would differ from
the repository after the first Run All, and the next ``git pull`` would conflict. So ``make lab`` opens a
copy: ``workspace/`` at the root of the checkout (git-ignored, so ``git pull`` never touches it), holding the
chapters, the students' labs (never their solutions) and ``docs/``, which the chapters link to. Authors who
mean to change the repository's notebooks use ``make lab-authors``, which opens the checkout itself.

:func:`sync` makes and refreshes the copy; it never deletes a file and never overwrites one the reader has
changed. A manifest (``.scaledl-workspace.json``) records the fingerprint of the version each file was copied
from, so a file is one of:

  - missing: copied from the repository;
  - unchanged since it was copied, and the repository has a newer version (after ``git pull``): updated;
  - changed by the reader (run, edited, saved): kept, and when the repository has a newer version the report
    says so and how to take it (:func:`reset`, ``make lab-reset NB=...``, which first moves the reader's
    file aside under a dated name).

>>> import tempfile
>>> from scaledl.book import load
>>> with tempfile.TemporaryDirectory() as tmp:
...     first = sync(load(), Path(tmp))
...     again = sync(load(), Path(tmp))
>>> len(first.added) > 30, again.added, again.updated, again.kept
(True, [], [], [])
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from scaledl._args import UsageError
from scaledl.book.toc import Book

__all__ = ["DEFAULT_DIR", "MANIFEST", "Report", "reader_files", "sync", "reset"]

DEFAULT_DIR = "workspace"
MANIFEST = ".scaledl-workspace.json"
_SKIP = (".ipynb_checkpoints", "__pycache__")


@dataclass
class Report:
    """What :func:`sync` did, as paths relative to the book's root."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)        # the reader's, with a newer version in the repository

    def lines(self, workspace: Path) -> list[str]:
        out = [f"workspace {workspace}: {len(self.added)} added, {len(self.updated)} updated from the repository"]
        for rel in self.kept:
            out.append(f"  {rel}: the repository has a newer version; yours is kept "
                       f"(make lab-reset NB={rel} takes the new one and moves yours aside)")
        return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reader_files(book: Book) -> list[str]:
    """What a reader's copy holds: every chapter and student lab that is not planned, and docs/."""
    files = [e.file for e in book.entries if e.validated and book.path(e.file).is_file()]
    docs = book.root / "docs"
    if docs.is_dir():
        files += [p.relative_to(book.root).as_posix() for p in sorted(docs.rglob("*"))
                  if p.is_file() and not any(s in p.parts for s in _SKIP)]
    return files


def _load(workspace: Path) -> dict[str, str]:
    path = workspace / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(workspace: Path, manifest: dict[str, str]) -> None:
    (workspace / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _check(book: Book, workspace: Path) -> Path:
    if not isinstance(workspace, Path):
        raise TypeError(f"workspace must be a pathlib.Path, got {workspace!r}")
    workspace = workspace.resolve()
    root = book.root.resolve()
    for folder in ("chapters", "labs"):
        if workspace == root or workspace == root / folder or (root / folder) in workspace.parents:
            raise UsageError(f"workspace must not be the book's checkout or inside its {folder}/, got {workspace}")
    return workspace


def sync(book: Book, workspace: Path) -> Report:
    """Make or refresh the reader's copy of ``book`` in ``workspace`` (see the module docstring).

    Raises:
        ValueError: ``workspace`` is the checkout itself or inside its chapters/ or labs/.
    """
    workspace = _check(book, workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    manifest = _load(workspace)
    report = Report()
    for rel in reader_files(book):
        src, dst = book.path(rel), workspace / rel
        new = _sha(src)
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
            manifest[rel] = new
            report.added.append(rel)
            continue
        have, copied = _sha(dst), manifest.get(rel)
        if have == new:
            manifest[rel] = new                       # already the repository's version
        elif copied is not None and have == copied:   # untouched by the reader: take the newer version
            shutil.copy2(src, dst)
            manifest[rel] = new
            report.updated.append(rel)
        elif copied != new:                           # the reader's (or unknown): never overwritten
            report.kept.append(rel)
    _save(workspace, manifest)
    return report


def reset(book: Book, workspace: Path, relative: str) -> Path | None:
    """Take the repository's current version of ``relative`` (e.g. "chapters/04_writing_gemm_kernels.ipynb")
    into the workspace. A file the reader changed is first moved aside as ``NAME.mine-YYYYmmdd-HHMMSS.EXT``
    (returned), never deleted; one they did not change is simply replaced (None is returned).

    Raises:
        ValueError: ``relative`` is not one of the reader's files (:func:`reader_files`).
    """
    workspace = _check(book, workspace)
    rel = Path(relative).as_posix().removeprefix("./").removeprefix(f"{workspace.name}/")
    files = reader_files(book)
    if rel not in files:
        raise UsageError(f"NB must be one of the reader's files, e.g. {files[0]}; got {relative!r}")
    dst = workspace / rel
    manifest = _load(workspace)
    moved = None
    if dst.exists() and _sha(dst) not in (manifest.get(rel), _sha(book.path(rel))):
        stamp = time.strftime("%Y%m%d-%H%M%S")
        moved = dst.with_name(f"{dst.stem}.mine-{stamp}{dst.suffix}")
        n = 1
        while moved.exists():                     # two resets within a second: never overwrite the first
            moved, n = dst.with_name(f"{dst.stem}.mine-{stamp}-{n}{dst.suffix}"), n + 1
        dst.rename(moved)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(book.path(rel), dst)
    manifest[rel] = _sha(dst)
    _save(workspace, manifest)
    return moved
