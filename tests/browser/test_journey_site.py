"""The reader's journey on the static book (`make book`), in headless Chromium, offline: the landing page
introduces the book, a chapter's navigation links (its ``book-nav`` and ``book-intro`` cells) lead to the
right pages and never to a solution, no answer (an answer-key cell, an answer-only code cell) shows, every
figure has real alt text, and no explorer asks the reader to run a cell on a page that runs nothing.

The site is the tier's one build of the real book (conftest.py's `book_site`, shared with test_site.py) when
its notebooks have ``book-nav`` cells, else a build of a copy of the book in which chapter 01 gets the cells
that ``scaledl book journey`` would add (same link forms: relative to the notebook a reader opens).
"""

from __future__ import annotations

import functools
import html
import http.server
import posixpath
import re
import sys
import threading
from pathlib import Path

import nbformat
import pytest

from scaledl.book import load

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the shared tracked module
from tracked import copy_tracked  # noqa: E402
NAV_TAG, INTRO_TAG = "book-nav", "book-intro"
LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s#]+\.ipynb)(?:#[^)\s]*)?\)")
MAX_NAV_PAGES = 3  # chapters whose nav links are clicked through (each click is a page load)


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _nav_chapters(book) -> list:
    found = []
    for e in book.entries:
        if e.kind == "chapter" and e.validated:
            nb = nbformat.read(book.path(e.file), as_version=4)
            if any(NAV_TAG in _tags(c) for c in nb.cells):
                found.append(e)
    return found


def _book_with_one_nav_cell(root: Path):
    """A copy of the book whose chapter 01 opens and ends with journey cells linking chapters and a lab."""
    copy_tracked(root, "book.toml", "references.bib", "README.md", "CONTRIBUTING.md", "chapters", "labs", "docs")
    book = load(root)
    chapters = [e for e in book.entries if e.kind == "chapter" and e.validated]
    holder, lab = chapters[1], next(e for e in book.entries if e.kind == "lab" and e.validated)

    def rel(path: str) -> str:
        return posixpath.relpath(path, posixpath.dirname(holder.file))

    nb = nbformat.read(book.path(holder.file), as_version=4)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(
        f"**What it assumes.** Read first: [{chapters[0].id} {chapters[0].title}]({rel(chapters[0].file)}).",
        metadata={"tags": [INTRO_TAG]}))
    nb.cells.append(nbformat.v4.new_markdown_cell(
        f"**Where next**\n\n* Previous chapter: [{chapters[0].id} {chapters[0].title}]({rel(chapters[0].file)})\n"
        f"* The lab: [{lab.title}]({rel(lab.file)}) (its solution: [solution]({rel(lab.solution)}))\n"
        f"* Next chapter: [{chapters[2].id} {chapters[2].title}]({rel(chapters[2].file)})",
        metadata={"tags": [NAV_TAG]}))
    nbformat.write(nb, book.path(holder.file))
    return book


@pytest.fixture(scope="session")
def journey_site(book_site, tmp_path_factory):
    """(book, html folder, Sphinx's warnings, chapters with a book-nav cell)."""
    book, out, _, warnings = book_site
    nav = _nav_chapters(book)
    if nav:  # the real book has its journey cells: the tier's one build serves (conftest.py)
        return book, out, warnings, nav[:MAX_NAV_PAGES]
    # no notebook has its journey cells yet: add them to one chapter of a copy, and build that
    from scaledl.book.html import build

    book = _book_with_one_nav_cell(tmp_path_factory.mktemp("book"))
    nav = _nav_chapters(book)
    out = tmp_path_factory.mktemp("journey-site") / "html"
    build(book, out)
    return book, out, list(build.warnings), nav[:MAX_NAV_PAGES]


@pytest.fixture(scope="session")
def journey_served(journey_site):
    out = journey_site[1]

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def offline_page(chromium_browser, journey_served):
    context = chromium_browser.new_context()
    context.route(re.compile(r"^(?!http://127\.0\.0\.1:).*"), lambda route: route.abort())
    p = context.new_page()
    yield p
    context.close()


def _html_page(entry_file: str) -> str:
    return Path(entry_file).with_suffix(".html").as_posix()


def test_the_landing_page_introduces_the_book(offline_page, journey_site, journey_served):
    book = journey_site[0]
    p = offline_page
    p.goto(f"{journey_served}/index.html")
    main = p.inner_text("main")
    assert p.locator("main h1").first.inner_text().startswith(book.title)
    for heading in ("What this book is", "Who it is for", "How to read it", "Running it", "All chapters and labs"):
        assert p.locator("main h2", has_text=heading).count() == 1, heading
    assert "simulator" in main and "make lab" in main and "Labs." in main
    for pid, title in book.parts:
        assert f"Part {pid}: {title}" in main
    first = next(e for e in book.entries if e.kind == "chapter" and e.validated)
    p.locator("main a", has_text=f"{first.id} {first.title}").first.click()
    p.wait_for_load_state()
    assert p.url.endswith("/" + _html_page(first.file))


def test_a_chapters_journey_links_lead_to_the_right_pages(offline_page, journey_site, journey_served):
    book, _, _, nav_chapters = journey_site
    assert nav_chapters, "no chapter has a book-nav cell (the fixture should have added one)"
    by_path = {e.file: e for e in book.entries} | {e.solution: e for e in book.entries if e.solution}
    p = offline_page
    clicked = 0
    for chapter in nav_chapters:
        nb = nbformat.read(book.path(chapter.file), as_version=4)
        for cell in (c for c in nb.cells if {NAV_TAG, INTRO_TAG} & set(_tags(c))):
            for text, target in LINK.findall(cell.source):
                repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(chapter.file), target))
                entry = by_path[repo_path]  # a journey link names a notebook of book.toml
                expected = _html_page(entry.file) if entry.validated else f"coming/{entry.id}.html"
                p.goto(f"{journey_served}/{_html_page(chapter.file)}")
                link = p.locator("main a", has_text=text).last  # the nav cell is the page's last
                href = link.get_attribute("href")
                assert "solutions" not in href, f"{chapter.id}: {text!r} links a solution: {href}"
                link.click()
                p.wait_for_load_state()
                assert p.url.split("#")[0].endswith("/" + expected), f"{chapter.id}: {text!r} -> {p.url}"
                heading = entry.title if entry.kind == "lab" else f"{entry.id} {entry.title}"
                assert p.locator("main h1").first.inner_text().startswith(heading.split(":")[0])
                clicked += 1
    assert clicked >= 3


def test_journey_links_leave_sphinx_nothing_to_warn_about(journey_site):
    warnings = journey_site[2]
    missing = [w for w in warnings if "xref_missing" in w or "cross-reference target not found" in w]
    assert missing == [], missing[:5]


def _answers(book) -> tuple[list[str], list[str]]:
    """Distinctive lines of the chapters' answer-key cells and answer-only code cells."""
    prose, code = [], []
    for e in (e for e in book.entries if e.kind == "chapter" and e.validated):
        for cell in nbformat.read(book.path(e.file), as_version=4).cells:
            if cell.cell_type == "markdown" and "answer-key" in _tags(cell):
                text = re.sub(r"<[^>]+>|[*_`$\\]", "", cell.source)
                prose += [line.strip() for line in text.splitlines() if len(line.strip()) >= 40]
            elif cell.cell_type == "code" and "answer-code" in _tags(cell):
                code += [line.strip() for line in cell.source.splitlines() if len(line.strip()) >= 25]
    return prose, code


def test_no_answer_shows_on_a_chapter_page(offline_page, journey_site, journey_served):
    book, out, _, _ = journey_site
    prose, code = _answers(book)
    assert prose, "the chapters hold no answer-key cell: nothing to check"
    p = offline_page
    for e in (e for e in book.entries if e.kind == "chapter" and e.validated):
        p.goto(f"{journey_served}/{_html_page(e.file)}")
        text = re.sub(r"\s+", " ", p.inner_text("main"))
        assert p.locator("main details summary", has_text="Answer").count() == 0, e.id
        shown = [s for s in prose + code if re.sub(r"\s+", " ", s) in text]
        # a line an answer shares with the chapter's own prose is no leak; the rest must not show
        nb_text = "\n".join(c.source for c in nbformat.read(book.path(e.file), as_version=4).cells
                            if not {"answer-key", "answer-code"} & set(_tags(c)))
        leaked = [s for s in shown if s not in nb_text]
        assert leaked == [], f"{e.id}: {leaked[:2]}"


def test_every_figure_has_real_alt_text_and_no_explorer_asks_to_run_a_cell(offline_page, journey_site,
                                                                         journey_served):
    _, out, _, _ = journey_site
    figures = 0
    for path in sorted(out.rglob("*.html")):
        if "_static" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        for img in re.findall(r"<img\b[^>]*src=\"[^\"]*_images/[^\"]+\"[^>]*>", text):
            alt = html.unescape(re.search(r'alt="([^"]*)"', img).group(1)) if 'alt="' in img else ""
            assert alt.startswith("Figure") and not alt.endswith(".png"), f"{path.name}: {img[:160]}"
            figures += 1
        assert "run this cell" not in html.unescape(text).lower(), path.name
    assert figures > 30
    p = offline_page
    p.goto(f"{journey_served}/chapters/01_hardware_paces_deep_learning.html")
    explorer = p.locator(".cell_output", has_text="Interactive explorer").first
    assert "in a running notebook" in explorer.inner_text()
    alt = explorer.locator("img").first.get_attribute("alt")
    assert "interactive explorer at its default settings" in alt
