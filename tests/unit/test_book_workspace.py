"""The reader's copy that `make lab` opens (scaledl.book.workspace), and tests that read only what git does not
ignore (tests/tracked.py).

- sync copies every chapter, student lab and docs/ file, never a solution; a second sync does nothing; after
  the repository changes, a file the reader never touched is updated and one they changed is kept and named;
- what counts as the reader's change is a notebook's cells (a source edited; a cell added, removed, moved or
  retyped), never its outputs, execution counts or JupyterLab's view metadata: a notebook the reader only ran
  and saved is updated (outputs included) and said so, an edited one is kept byte for byte, whatever else
  they did to it; a manifest written before contents were recorded still works;
- reset takes the repository's version and moves the reader's aside, never deleting it (a notebook only run is
  simply replaced), under a name JupyterLab lists right after the original;
- make lab's notices wait for the JupyterLab serving the workspace to answer, then print; never lost when
  it does not start, not printed when it stopped first;
- workspace/ is git-ignored, and the workspace may not be the checkout or inside its chapters/ or labs/;
- JupyterLab's .ipynb_checkpoints/ and the workspace, planted in a checkout, are neither walked nor copied by
  the tests' tree helper, and no test copies or walks the book's folders without it.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

from scaledl.book import lab_notices, load, nbfile
from scaledl.book.workspace import MANIFEST, reader_content, reader_files, reset, sync

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
    _edit(ws / mine, "source")                                           # the reader edited a cell and saved
    for rel in (CHAPTER, mine):                                          # `git pull` brings new versions
        _pull(book_copy, rel)
    report = sync(book_copy, ws)
    assert report.updated == [CHAPTER] and report.kept == [mine] and report.outputs_replaced == []
    assert (ws / CHAPTER).read_bytes() == book_copy.path(CHAPTER).read_bytes()
    assert "# my note" in (ws / mine).read_text()                        # never overwritten
    assert any(mine in line and "make lab-reset NB=" in line for line in report.lines(ws))
    # a reader's change to a file the repository did not change is theirs, silently
    _edit(ws / CHAPTER, "source")
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


def _run_and_view(path: Path) -> None:
    """What running, folding and saving a notebook in JupyterLab changes, and nothing else: outputs, execution
    counts, a cell's collapsed/scrolled/jupyter metadata, the notebook's kernelspec, language_info and widgets."""
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.execution_count = 100 + i
            cell.outputs = [new_output("stream", name="stdout", text="my run\n")]
            cell.metadata.update(collapsed=True, scrolled=True, jupyter={"outputs_hidden": True, "source_hidden": True})
        elif i == 0:
            cell.metadata["jupyter"] = {"source_hidden": True}
    nb.metadata["kernelspec"]["display_name"] = "Python 3 (my env)"
    nb.metadata["language_info"] = {"name": "python", "version": "3.13.1"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    nbformat.write(nb, path)


def _edit(path: Path, how: str) -> None:
    """A reader's edit of the kind ``how``, as JupyterLab saves it."""
    nb = nbformat.read(path, as_version=4)
    i = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip())
    if how == "source":
        nb.cells[i].source += "\n# my note"
    elif how == "added":
        nb.cells.insert(i + 1, new_code_cell("my_try = 1"))
    elif how == "removed":
        del nb.cells[i]
    elif how == "moved":
        nb.cells[i], nb.cells[i + 1] = nb.cells[i + 1], nb.cells[i]
    elif how == "retyped":
        nb.cells[i] = new_markdown_cell(nb.cells[i].source)
    nbformat.write(nb, path)


def _pull(book, rel: str) -> None:
    """`git pull` brings a new version of ``rel``: its last markdown cell reworded."""
    nb = nbformat.read(book.path(rel), as_version=4)
    last = [c for c in nb.cells if c.cell_type == "markdown"][-1]
    last.source += " (revised)"
    nbfile.write(nb, book.path(rel))


def test_only_cells_count_as_the_readers_change(book_copy, tmp_path):
    ws = tmp_path / "ws"
    sync(book_copy, ws)
    before = reader_content(ws / CHAPTER)
    _run_and_view(ws / CHAPTER)
    assert reader_content(ws / CHAPTER) == before                     # run, folded, saved: not an edit
    for how in ("source", "added", "removed", "moved", "retyped"):
        shutil.copy2(book_copy.path(CHAPTER), ws / CHAPTER)
        _edit(ws / CHAPTER, how)
        assert reader_content(ws / CHAPTER) != before, how
    (ws / "plain.md").write_text("x")
    (ws / "broken.ipynb").write_text("{not json")
    assert reader_content(ws / "plain.md").startswith("bytes ") and reader_content(ws / "broken.ipynb") != before


def test_a_notebook_the_reader_only_ran_is_updated_with_its_new_outputs(book_copy, tmp_path):
    ws = tmp_path / "ws"
    sync(book_copy, ws)
    _run_and_view(ws / CHAPTER)
    assert sync(book_copy, ws).updated == []                          # no new version: their run stays
    assert "my run" in (ws / CHAPTER).read_text()
    _pull(book_copy, CHAPTER)
    report = sync(book_copy, ws)
    assert report.updated == [CHAPTER] and report.outputs_replaced == [CHAPTER] and report.kept == []
    assert (ws / CHAPTER).read_bytes() == book_copy.path(CHAPTER).read_bytes()   # outputs included
    assert any(CHAPTER in line and "outputs of your run were replaced" in line for line in report.notices())
    again = sync(book_copy, ws)
    assert (again.updated, again.kept, again.notices()) == ([], [], [])


@pytest.mark.parametrize("how", ["source", "added", "removed", "moved", "retyped"])
def test_a_readers_edit_is_never_lost(book_copy, tmp_path, how):
    ws = tmp_path / "ws"
    sync(book_copy, ws)
    _edit(ws / CHAPTER, how)
    _run_and_view(ws / CHAPTER)                                       # and ran it, as readers do
    mine = (ws / CHAPTER).read_bytes()
    _pull(book_copy, CHAPTER)
    for _ in range(2):                                                # every later make lab too
        report = sync(book_copy, ws)
        assert report.kept == [CHAPTER] and report.updated == [] and (ws / CHAPTER).read_bytes() == mine
        assert any(f"make lab-reset NB={CHAPTER}" in line for line in report.notices())
    moved = reset(book_copy, ws, CHAPTER)                             # taking the new version keeps theirs
    assert moved.read_bytes() == mine and (ws / CHAPTER).read_bytes() == book_copy.path(CHAPTER).read_bytes()


def test_cells_equal_to_the_new_version_lose_nothing_and_an_old_manifest_still_works(book_copy, tmp_path):
    ws = tmp_path / "ws"
    sync(book_copy, ws)
    other = "chapters/03_networks_are_gemms.ipynb"
    manifest = json.loads((ws / MANIFEST).read_text())
    assert manifest[CHAPTER] == {"file": manifest[CHAPTER]["file"], "content": reader_content(ws / CHAPTER)}
    # a manifest written before contents were recorded: the copied file's sha alone
    (ws / MANIFEST).write_text(json.dumps({rel: entry["file"] for rel, entry in manifest.items()}))
    _pull(book_copy, CHAPTER)
    _pull(book_copy, other)
    shutil.copy2(book_copy.path(CHAPTER), ws / CHAPTER)               # their cells already the new version's
    _run_and_view(ws / CHAPTER)
    _run_and_view(ws / other)                                         # run since the old copy: kept, to be safe
    report = sync(book_copy, ws)
    assert report.updated == [CHAPTER] and report.kept == [other]
    assert (ws / CHAPTER).read_bytes() == book_copy.path(CHAPTER).read_bytes()
    assert isinstance(json.loads((ws / MANIFEST).read_text())[CHAPTER], dict)    # rewritten in the new form


def test_reset_replaces_a_notebook_only_run_without_moving_it_aside(book_copy, tmp_path):
    ws = tmp_path / "ws"
    sync(book_copy, ws)
    _run_and_view(ws / CHAPTER)
    assert reset(book_copy, ws, CHAPTER) is None
    assert (ws / CHAPTER).read_bytes() == book_copy.path(CHAPTER).read_bytes()
    assert [p.name for p in (ws / "chapters").glob("04_*")] == ["04_writing_gemm_kernels.ipynb"]


# JupyterLab 4's file browser (@jupyterlab/filebrowser, the model's sort): names compared with
# localeCompare(other, language, {numeric: true, sensitivity: "base"}), folders first.
JUPYTERLAB_ORDER = ("const names = JSON.parse(process.argv[1]);"
                    "names.sort((a, b) => a.localeCompare(b, 'en', {numeric: true, sensitivity: 'base'}));"
                    "console.log(JSON.stringify(names));")


@pytest.mark.skipif(shutil.which("node") is None, reason="no node to run JupyterLab's comparison")
def test_a_copy_moved_aside_sorts_right_after_its_original_in_jupyterlab(book_copy, tmp_path):
    ws = tmp_path / "ws"
    sync(book_copy, ws)
    moved = []
    for n in range(2):
        _edit(ws / CHAPTER, "source")
        moved.append(reset(book_copy, ws, CHAPTER).name)
        time.sleep(1.1 if n == 0 else 0)                              # two dates
    names = [p.name for p in (ws / "chapters").iterdir()] + ["04_writing_gemm_kernels-Copy1.ipynb"]
    order = json.loads(subprocess.run(["node", "-e", JUPYTERLAB_ORDER, json.dumps(names)], capture_output=True,
                                      text=True, check=True).stdout)
    at = order.index("04_writing_gemm_kernels.ipynb")
    assert order[at + 1:at + 3] == moved and order[at + 3].startswith("05_"), order


class _Api(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"version": "test"}')

    def log_message(self, *args):
        pass


def _server_info(runtime: Path, ws: Path, pid: int, url: str) -> Path:
    runtime.mkdir(exist_ok=True)
    path = runtime / f"jpserver-{pid}.json"
    path.write_text(json.dumps({"root_dir": str(ws), "pid": pid, "url": url, "port": 0}))
    return path


def test_notices_wait_for_the_workspaces_server_to_answer(tmp_path):
    ws, runtime = tmp_path / "ws", tmp_path / "runtime"
    ws.mkdir()
    http = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    url = f"http://127.0.0.1:{http.server_address[1]}/"
    since = time.time()
    stale = _server_info(runtime, ws, os.getpid(), "http://127.0.0.1:9/")    # an older server of the workspace
    os.utime(stale, (since - 60, since - 60))
    _server_info(runtime, tmp_path, os.getpid() + 0, url).rename(runtime / "jpserver-other.json")  # another root

    def start_later():
        time.sleep(0.5)
        _server_info(runtime, ws, os.getpid(), url)                   # the info file, then it answers
        threading.Thread(target=http.serve_forever, daemon=True).start()

    threading.Thread(target=start_later, daemon=True).start()
    out = io.StringIO()
    try:
        seen = lab_notices.show(ws, ["  chapters/x.ipynb: kept"], since, runtime_dir=runtime, out=out, wait_s=20,
                                poll_s=0.05, settle_s=0)
    finally:
        http.shutdown()
    assert seen == "up"
    assert out.getvalue() == "\nmake lab: about your copy of the book in ws/\n  chapters/x.ipynb: kept\n"


def test_notices_are_printed_if_no_server_starts_and_not_after_it_stopped(tmp_path):
    ws, runtime = tmp_path / "ws", tmp_path / "runtime"
    ws.mkdir()
    out = io.StringIO()
    assert lab_notices.show(ws, ["  a"], time.time(), runtime_dir=runtime, out=out, wait_s=0.3, poll_s=0.05) == \
        "timeout"
    assert out.getvalue().endswith("  a\n")                          # JupyterLab failed: never lost
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    threading.Thread(target=gone.wait, daemon=True).start()            # reaped when it ends, as make reaps its server
    since = time.time()
    _server_info(runtime, ws, gone.pid, "http://127.0.0.1:9/")        # up, never answering, then gone
    out = io.StringIO()
    assert lab_notices.show(ws, ["  b"], since, runtime_dir=runtime, out=out, wait_s=20, poll_s=0.05) == "stopped"
    assert out.getvalue() == ""
    assert lab_notices.defer(ws, []) is False                         # nothing to say: no process started


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
