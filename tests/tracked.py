"""What git does not ignore in the checkout: the files a test may copy or walk.

JupyterLab leaves .ipynb_checkpoints/ beside every notebook it opens, `make lab` keeps the reader's copy in
workspace/, Python leaves __pycache__/: all git-ignored, all there on a reader's or author's machine and never
in a clean clone. A test that walked or copied them would pass in CI and fail after `make lab`; so tests that
copy or walk the book read this list instead: tracked files and new ones not yet added, less what git
ignores. Outside a git checkout (an unpacked sdist) the files on disk are taken, less those three kinds.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_IGNORED_PARTS = {".ipynb_checkpoints", "__pycache__", "workspace", ".git"}


def tracked(*names: str, root: Path = ROOT) -> list[str]:
    """Paths (relative, posix) of the files under each of ``names`` (files or folders) that git does not
    ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *names],
                         cwd=root, capture_output=True)
    if out.returncode == 0 and out.stdout:
        return sorted(p for p in out.stdout.decode().split("\0") if p and (root / p).is_file())
    found = []
    for name in names:
        path = root / name
        paths = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        found += [p.relative_to(root).as_posix() for p in paths
                  if not _IGNORED_PARTS.intersection(p.relative_to(root).parts)]
    return sorted(found)


def copy_tracked(dest: Path, *names: str, root: Path = ROOT) -> list[str]:
    """Copy the tracked files under ``names`` from ``root`` into ``dest``, keeping their relative paths."""
    files = tracked(*names, root=root)
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, dest / rel)
    return files
