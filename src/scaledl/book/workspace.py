"""The reader's working copy of the book: what ``make lab`` opens, so that running a chapter never rewrites the
repository.

Reading this book means running it, and JupyterLab saves what runs (autosave, every two minutes by default):
new outputs, new widget ids, the backend line of this machine. Opened in place, a chapter would differ from
the repository after the first Run All, and the next ``git pull`` would conflict. So ``make lab`` opens a
copy: ``workspace/`` at the root of the checkout (git-ignored, so ``git pull`` never touches it), holding the
chapters, the students' labs (never their solutions) and ``docs/``, which the chapters link to. Authors who
mean to change the repository's notebooks use ``make lab-authors``, which opens the checkout itself.

:func:`sync` makes and refreshes the copy; it never deletes a file and never loses a reader's edit. A manifest
(``.scaledl-workspace.json``) records, for each file, the fingerprint of the version it was copied from and of
what in it is the reader's (:func:`reader_content`: a notebook's cells, their types and sources, in order), so
a file is one of:

  - missing: copied from the repository;
  - the repository has a newer version (after ``git pull``) and the reader has not changed the file's cells
    (running it, saving it, folding a cell or resizing an output changes only outputs, execution counts and
    JupyterLab's view metadata, which do not count): updated to the new version, outputs included;
  - changed by the reader (a cell's source edited; a cell added, removed, moved or turned from code to markdown):
    kept, and when the repository has a newer version the report says so and how to take it (:func:`reset`,
    ``make lab-reset NB=...``, which first moves the reader's file aside as ``NAME.mine-DATE.ipynb``, the name
    JupyterLab's file browser lists right after ``NAME.ipynb``).

``make lab`` prints those notices after JupyterLab's start-up lines, where the reader looks
(:mod:`scaledl.book.lab_notices`).

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

__all__ = ["DEFAULT_DIR", "MANIFEST", "Report", "reader_content", "reader_files", "sync", "reset"]

DEFAULT_DIR = "workspace"
MANIFEST = ".scaledl-workspace.json"
_SKIP = (".ipynb_checkpoints", "__pycache__")


@dataclass
class Report:
    """What :func:`sync` did, as paths relative to the book's root."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)        # the reader's, with a newer version in the repository
    outputs_replaced: list[str] = field(default_factory=list)  # updated, though run or saved by the reader

    def summary(self, workspace: Path) -> str:
        return f"workspace {workspace}: {len(self.added)} added, {len(self.updated)} updated from the repository"

    def notices(self) -> list[str]:
        """One line per file the reader should hear about: kept (with how to take the new version), or updated
        over their outputs."""
        out = [f"  {rel}: the repository has a newer version; yours is kept "
               f"(make lab-reset NB={rel} takes the new one and moves yours aside)" for rel in self.kept]
        out += [f"  {rel}: updated to the repository's new version; the outputs of your run were replaced (you "
                f"had changed no cell)" for rel in self.outputs_replaced]
        return out

    def lines(self, workspace: Path) -> list[str]:
        return [self.summary(workspace), *self.notices()]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else source


def reader_content(path: Path) -> str:
    """A fingerprint of what in ``path`` is the reader's: for a notebook, its cells in order, each one's type,
    source and attachments. Outputs, execution counts and all metadata (a cell's ``collapsed``, ``scrolled``,
    ``jupyter``, tags, ids; the notebook's kernelspec, language_info and widget state) are left out: JupyterLab
    rewrites them when a reader runs, folds or saves a notebook. Any other file, or a notebook that does not
    parse, is its bytes."""
    data = path.read_bytes()
    if path.suffix == ".ipynb":
        try:
            cells = [[c["cell_type"], _text(c.get("source", "")), c.get("attachments")]
                     for c in json.loads(data)["cells"]]
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        else:
            return "cells " + hashlib.sha256(json.dumps(cells, sort_keys=True).encode()).hexdigest()
    return "bytes " + hashlib.sha256(data).hexdigest()


def _entry(path: Path) -> dict[str, str]:
    return {"file": _sha(path), "content": reader_content(path)}


def _readers_own(dst: Path, copied: dict | None, src: Path) -> bool:
    """Whether replacing ``dst`` by ``src`` would lose a reader's edit: its content is neither that of the
    version it was copied from (``copied``, the manifest's entry) nor that of ``src``."""
    have = reader_content(dst)
    if have == reader_content(src):
        return False
    if copied is None:
        return True                                  # no record of the copy: the reader's, to be safe
    if "content" in copied:
        return have != copied["content"]
    return _sha(dst) != copied.get("file")          # a manifest from before contents were recorded


def reader_files(book: Book) -> list[str]:
    """What a reader's copy holds: every chapter and student lab that is not planned, and docs/."""
    files = [e.file for e in book.entries if e.validated and book.path(e.file).is_file()]
    docs = book.root / "docs"
    if docs.is_dir():
        files += [p.relative_to(book.root).as_posix() for p in sorted(docs.rglob("*"))
                  if p.is_file() and not any(s in p.parts for s in _SKIP)]
    return files


def _load(workspace: Path) -> dict[str, dict]:
    path = workspace / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    # Before contents were recorded an entry was the copied file's sha alone.
    return {rel: {"file": v} if isinstance(v, str) else v for rel, v in data.items() if isinstance(v, (str, dict))}


def _save(workspace: Path, manifest: dict[str, dict]) -> None:
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
            manifest[rel] = _entry(src)
            report.added.append(rel)
            continue
        have, copied = _sha(dst), manifest.get(rel)
        if have == new:
            manifest[rel] = _entry(src)               # already the repository's version
        elif copied is not None and copied.get("file") == new:
            manifest[rel] = _entry(src)               # the repository's version is the one copied: theirs as it is
        elif not _readers_own(dst, copied, src):      # only outputs and view state changed: take the newer version
            if copied is None or have != copied.get("file"):
                report.outputs_replaced.append(rel)
            shutil.copy2(src, dst)
            manifest[rel] = _entry(src)
            report.updated.append(rel)
        else:                                         # the reader's edits: never overwritten
            report.kept.append(rel)
    _save(workspace, manifest)
    return report


def reset(book: Book, workspace: Path, relative: str) -> Path | None:
    """Take the repository's current version of ``relative`` (e.g. "chapters/04_writing_gemm_kernels.ipynb")
    into the workspace. A file the reader changed (:func:`sync`'s rule: its cells, not its outputs) is first
    moved aside as ``NAME.mine-YYYYmmdd-HHMMSS.EXT`` (returned), never deleted; one they did not change is simply
    replaced (None is returned). JupyterLab's file browser sorts names with ``localeCompare`` (numeric, base
    sensitivity), which puts ``NAME.mine-...`` right after ``NAME.ipynb`` (the same stem, then "." and "m" after
    "i"), the dated copies by date; its own copies, ``NAME-Copy1.ipynb``, come before it.

    Raises:
        ValueError: ``relative`` is not one of the reader's files (:func:`reader_files`).
    """
    workspace = _check(book, workspace)
    rel = Path(relative).as_posix().removeprefix("./").removeprefix(f"{workspace.name}/")
    files = reader_files(book)
    if rel not in files:
        raise UsageError(f"NB must be one of the reader's files, e.g. {files[0]}; got {relative!r}")
    src, dst = book.path(rel), workspace / rel
    manifest = _load(workspace)
    moved = None
    if dst.exists() and _sha(dst) != _sha(src) and _readers_own(dst, manifest.get(rel), src):
        stamp = time.strftime("%Y%m%d-%H%M%S")
        moved = dst.with_name(f"{dst.stem}.mine-{stamp}{dst.suffix}")
        n = 1
        while moved.exists():                     # two resets within a second: never overwrite the first
            moved, n = dst.with_name(f"{dst.stem}.mine-{stamp}-{n}{dst.suffix}"), n + 1
        dst.rename(moved)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    manifest[rel] = _entry(dst)
    _save(workspace, manifest)
    return moved
