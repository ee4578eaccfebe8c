"""Every notebook of the book, opened in JupyterLab in Chromium and saved unchanged, stays byte-identical.

A file JupyterLab would rewrite on open (another kernelspec display name, ``1.0`` where JavaScript writes
``1``) is marked modified the moment a reader opens it, autosave rewrites it, and their next ``git pull``
conflicts. Here each notebook is opened in a fresh JupyterLab (its kernel started, as a reader's would be),
checked never to be marked modified, saved, and compared byte for byte with the committed file.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from scaledl.book import load
from scaledl.book.check import student_work
from scaledl.widgets import FALLBACK_TEXT

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
# A lab copy holding a student's own work is theirs, whatever tool wrote it: never a reason to fail.
KEPT = set(student_work(BOOK))
NOTEBOOKS = sorted({rel for e in BOOK.entries if e.validated for rel in (e.file, e.executed_file)} - KEPT)

STATE_JS = """() => {
  const app = window.jupyterapp;
  const w = app && app.shell.currentWidget;
  if (!w || !w.context || !w.context.isReady || !w.sessionContext) return null;
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return {path: w.context.path, dirty: w.context.model.dirty,
          status: w.sessionContext.kernelDisplayStatus,
          kernel: kernel ? (kernel.info ? 'started' : 'starting') : 'none'};
}"""

# Wait for the kernel's info reply: JupyterLab writes language_info and the kernelspec from it.
KERNEL_INFO_JS = """async () => {
  const w = window.jupyterapp.shell.currentWidget;
  await w.sessionContext.session.kernel.info;
  await new Promise(r => setTimeout(r, 300));
}"""


def _api(url, token, path, method="GET"):
    req = urllib.request.Request(f"{url}{path}", method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
    return json.loads(body) if body else None


def _wait_open(page, rel, timeout_s=120):
    """Wait until ``rel`` is the current document, loaded, with its kernel started and idle."""
    deadline = time.time() + timeout_s
    state = None
    while time.time() < deadline:
        state = page.evaluate(STATE_JS)
        if state and state["path"] == rel and state["kernel"] == "started" and state["status"] == "idle":
            page.evaluate(KERNEL_INFO_JS)
            return state
        time.sleep(0.2)
    raise AssertionError(f"{rel}: JupyterLab did not finish opening it within {timeout_s} s (last {state})")


@pytest.fixture(scope="module")
def lab_page(chromium_browser, jupyterlab):
    """One JupyterLab page for all notebooks: each is opened, checked and closed in turn."""
    url, token, _ = jupyterlab
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/lab?token={token}", wait_until="domcontentloaded")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started !== undefined", timeout=120_000)
    page.evaluate("() => window.jupyterapp.started")
    yield page
    page.close()


def _open(page, rel):
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", rel)
    _wait_open(page, rel)


def _close(page, url, token):
    page.evaluate("() => window.jupyterapp.commands.execute('application:close-all')")
    for session in _api(url, token, "/api/sessions"):
        _api(url, token, f"/api/sessions/{session['id']}", method="DELETE")


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_open_and_save_leaves_the_notebook_unchanged(lab_page, jupyterlab, rel):
    url, token, root = jupyterlab
    committed = (ROOT / rel).read_bytes()
    page = lab_page
    _open(page, rel)
    try:
        dirty_on_open = page.evaluate(STATE_JS)["dirty"]
        tab_marked = page.locator(".lm-TabBar-tab.jp-mod-dirty").count() > 0
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        deadline = time.time() + 30
        while page.evaluate(STATE_JS)["dirty"] and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        saved = (root / rel).read_bytes()
        if saved != committed:
            import difflib

            diff = "".join(list(difflib.unified_diff(committed.decode().splitlines(True),
                                                     saved.decode().splitlines(True), "committed", "saved"))[:60])
            pytest.fail(f"{rel}: JupyterLab's save changed the file (modified on open: {dirty_on_open}):\n{diff}")
        assert not dirty_on_open, f"{rel}: JupyterLab marked it modified on open, before any edit"
        assert not tab_marked, f"{rel}: its tab was marked modified on open"
    finally:
        _close(page, url, token)


def _explorer_notebook() -> str:
    for rel in NOTEBOOKS:
        if rel.startswith("chapters/") and FALLBACK_TEXT[:30] in (ROOT / rel).read_text():
            return rel
    pytest.skip("no chapter stores an explorer yet")


def test_explorer_shows_a_sentence_not_the_widget_repr(lab_page, jupyterlab, tmp_path):
    """A fresh clone's notebooks are untrusted and have no live kernel state: the explorer's stored output
    must read as a sentence above its stored default figure, never as ``VBox(children=...``."""
    url, token, _ = jupyterlab
    rel = _explorer_notebook()
    page = lab_page
    _open(page, rel)
    try:
        panel = page.locator(".jp-NotebookPanel:visible").first
        text = panel.inner_text()
        assert "VBox(" not in text and "HBox(" not in text, f"{rel}: a widget repr is visible"
        sentence = page.get_by_text(FALLBACK_TEXT[:40]).first
        sentence.scroll_into_view_if_needed()
        assert sentence.is_visible(), f"{rel}: the explorer's fallback sentence is not shown"
        shot = Path(os.environ.get("SCALEDL_BROWSER_ARTIFACTS", tmp_path)) / "explorer.png"
        cell = page.locator(".jp-Cell", has=sentence).first
        cell.screenshot(path=str(shot))
        assert shot.stat().st_size > 5000, "the explorer cell's screenshot is empty"
        # The stored default figure is drawn beside the sentence (an <img> in the same cell).
        assert cell.locator("img").count() >= 1, f"{rel}: the explorer's stored figure is not shown"
    finally:
        _close(page, url, token)


def _answer_code_cells(rel) -> list[tuple[int, str]]:
    """(index, source) of the cells tagged answer-code: they compute the numbers the exercises' answers quote."""
    nb = nbformat.read(ROOT / rel, as_version=4)
    return [(i, c.source) for i, c in enumerate(nb.cells) if "answer-code" in c.metadata.get("tags", [])]


# Chapter 04 (the reader study's example: one cell above question 1) and chapter 07 (a cell per exercise).
ANSWER_CODE_CHAPTERS = [rel for rel in NOTEBOOKS if rel.startswith(("chapters/04_", "chapters/07_"))]

CELL_STATE_JS = """(i) => {
  const c = window.jupyterapp.shell.currentWidget.content.widgets[i];
  return {input: c.inputHidden, output: c.outputHidden, type: c.model.type};
}"""


@pytest.mark.parametrize("rel", ANSWER_CODE_CHAPTERS)
def test_answer_code_cells_open_folded(lab_page, jupyterlab, rel):
    """A reader who scrolls to the exercises sees a one-line placeholder for the cell that computes the answers'
    numbers (its first line, which says it is folded on purpose), neither its code nor its printed numbers, until
    they open it."""
    url, token, _ = jupyterlab
    folded = _answer_code_cells(rel)
    assert folded, f"{rel}: no cell tagged answer-code"
    outputs = {i: "".join(o.get("text", "") for o in c.outputs).splitlines()
               for i, c in enumerate(nbformat.read(ROOT / rel, as_version=4).cells) if c.cell_type == "code"}
    page = lab_page
    _open(page, rel)
    try:
        panel = page.locator(".jp-NotebookPanel:visible").first
        cells = panel.locator(".jp-Notebook .jp-Cell")
        assert cells.count() == len(nbformat.read(ROOT / rel, as_version=4).cells)
        for i, source in folded:
            state = page.evaluate(CELL_STATE_JS, i)
            assert state == {"input": True, "output": True, "type": "code"}, f"{rel}: cell {i} opens {state}"
            cell = cells.nth(i)
            cell.scroll_into_view_if_needed()
            placeholder = cell.locator(".jp-InputPlaceholder")
            assert placeholder.is_visible(), f"{rel}: cell {i}: no input placeholder"
            assert "(folded so" in placeholder.inner_text(), f"{rel}: cell {i}: {placeholder.inner_text()!r}"
            # with its input hidden too, JupyterLab hides the collapsed outputs' placeholder: one line in all
            assert cell.locator(".jp-InputArea-editor:visible").count() == 0, f"{rel}: cell {i}: its code shows"
            assert cell.locator(".jp-OutputArea-output:visible").count() == 0, f"{rel}: cell {i}: outputs show"
            text = panel.inner_text()
            code_line = next(line for line in source.splitlines()[1:] if len(line.strip()) > 20)
            assert code_line.strip() not in text, f"{rel}: cell {i}: its code {code_line!r} is visible"
            printed = next(line for line in outputs[i] if len(line.strip()) > 20)
            assert printed.strip() not in text, f"{rel}: cell {i}: its output {printed!r} is visible"
    finally:
        _close(page, url, token)
