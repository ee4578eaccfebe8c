"""The reader's path in JupyterLab: answers are folded until asked for, and the last cell's links open the
next notebook (scaledl.book.journey writes both; tests/browser/test_journey_site.py checks the static site).
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from scaledl.book import load

ROOT = Path(__file__).resolve().parents[2]
# The current document's path once loaded (test_jupyterlab.py waits for the kernel too; links need not).
PATH_JS = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  return w && w.context && w.context.isReady ? w.context.path : null;
}"""


def _open(page, rel, timeout_s=60):
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", rel)
    _wait_for(page, rel, timeout_s)


def _wait_for(page, rel, timeout_s=60):
    deadline, path = time.time() + timeout_s, None
    while time.time() < deadline:
        path = page.evaluate(PATH_JS)
        if path == rel:
            return
        time.sleep(0.2)
    raise AssertionError(f"JupyterLab shows {path!r}, not {rel!r}, after {timeout_s} s")

CHAPTER = "chapters/14_all_reduce.ipynb"  # has exercises, a lab and a next chapter


def _answer_count(rel: str) -> int:
    nb = nbformat.read(ROOT / rel, as_version=4)
    return sum("answer-key" in c.metadata.get("tags", []) for c in nb.cells)


def _api(url, token, path, method="GET"):
    req = urllib.request.Request(f"{url}{path}", method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
    return json.loads(body) if body else None


@pytest.fixture
def page(chromium_browser, jupyterlab):
    """A page on a workspace of its own, reset: the server is shared with test_jupyterlab.py, whose pages must
    not restore the notebooks opened here; the kernels these tests start are shut down at the end."""
    url, token, _ = jupyterlab
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/lab/workspaces/journey?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started !== undefined", timeout=120_000)
    page.evaluate("() => window.jupyterapp.started")
    yield page
    page.evaluate("() => window.jupyterapp.commands.execute('application:close-all')")
    page.close()
    for session in _api(url, token, "/api/sessions"):
        _api(url, token, f"/api/sessions/{session['id']}", method="DELETE")
    _api(url, token, "/lab/api/workspaces/journey", method="DELETE")


def test_answers_are_folded_until_the_reader_opens_one(page):
    expected = _answer_count(CHAPTER)
    assert expected > 0
    _open(page, CHAPTER)
    panel = page.locator(".jp-NotebookPanel:visible").first
    details = panel.locator(".jp-RenderedMarkdown details")
    details.first.wait_for(state="attached", timeout=30_000)
    assert details.count() == expected, f"{details.count()} folded answers rendered, {expected} answer cells"
    assert not any(details.nth(i).evaluate("d => d.open") for i in range(expected)), "an answer starts open"
    first = details.first
    hidden = first.locator("p").first
    first.scroll_into_view_if_needed()
    assert first.locator("summary").inner_text().strip() == "Answer"
    assert not hidden.is_visible(), "the answer's text shows before the reader opens it"
    first.locator("summary").click()
    assert first.evaluate("d => d.open") and hidden.is_visible(), "clicking 'Answer' did not unfold it"


def test_the_where_next_links_open_the_next_chapter_and_the_lab(page):
    book = load(ROOT)
    entries = [e for e in book.entries if e.validated]
    me = next(i for i, e in enumerate(entries) if e.file == CHAPTER)
    after = next(e for e in entries[me + 1:] if e.kind == "chapter")
    lab = next(e for e in entries if e.kind == "lab" and "14" in (e.practises or ()))
    for target in (after.file, lab.file):
        _open(page, CHAPTER)
        nav = page.locator(".jp-NotebookPanel:visible .jp-RenderedMarkdown").last
        name = target.rsplit("/", 1)[1]
        link = nav.locator(f"a[href*='{name}']").first  # JupyterLab rewrites it to /files/...?_xsrf=
        link.scroll_into_view_if_needed()
        link.click()
        _wait_for(page, target)
        page.evaluate("() => window.jupyterapp.commands.execute('application:close-all')")
