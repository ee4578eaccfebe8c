"""The next grader removes what a grader killed from outside left behind (issue 41), and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from scaledl.course import mounts


def test_sweep_stale_removes_only_folders_of_a_dead_grader(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(dead.stdout)
    gone = tmp_path / f"scaledl-grade-{dead_pid}-abc"
    (gone / "sub").mkdir(parents=True)
    (gone / "sub" / "notebook.ipynb").write_text("{}")
    mine = tmp_path / f"scaledl-batch-{os.getpid()}-def"          # this process's: alive
    mine.mkdir()
    other = tmp_path / f"someone-else-{dead_pid}-ghi"              # not a grader's folder
    other.mkdir()
    target = tmp_path / "outside"
    target.mkdir()
    (target / "keep.txt").write_text("kept")
    link = tmp_path / f"scaledl-views-{dead_pid}-jkl"              # a link is never followed
    link.symlink_to(target)
    assert mounts.sweep_stale() == [gone]
    assert not gone.exists() and mine.is_dir() and other.is_dir() and link.is_symlink()
    assert (target / "keep.txt").read_text() == "kept"
    assert mounts.sweep_stale() == []
