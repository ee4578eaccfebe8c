"""The static book (`make book`) in headless Chromium, offline: every page loads without console errors, next
and previous work, MathJax (bundled) typesets every formula, search finds a term, and no page shows solution
code or answer-key text.

The site is built once per session (conftest.py's `book_site`, shared with test_journey_site.py: Jupyter Book
over the real book, about 15-25 s on two cores) and served from a local HTTP server; Chromium is given no
route to the network except 127.0.0.1, so anything a page fetched from a CDN would fail and show up as a
console error. The solution scan reads the built HTML and needs no browser. Measured on two busy cores: the
build 14-26 s, the whole file 45-75 s.
"""

from __future__ import annotations

import functools
import html
import http.server
import re
import threading
from pathlib import Path

import nbformat
import pytest

from scaledl.book import load

ROOT = Path(__file__).resolve().parents[2]
MIN_DISTINCTIVE_CHARS = 25  # shorter solution lines ("return x", "i = cuda.grid(1)") also occur in prose/code


@pytest.fixture(scope="session")
def site(book_site):
    """(html folder, pages): the tier's one build (conftest.py's ``book_site``)."""
    _, out, pages, _ = book_site
    return out, pages


@pytest.fixture(scope="session")
def served(site):
    out, pages = site
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", [p.relative_to(out).as_posix() for p in pages]
    server.shutdown()


@pytest.fixture
def page(chromium_browser, served):
    base, _ = served
    context = chromium_browser.new_context()
    # Offline: only the local server answers; a CDN request is aborted (and logged as a console error).
    context.route(re.compile(r"^(?!http://127\.0\.0\.1:).*"), lambda route: route.abort())
    p = context.new_page()
    p.errors = []
    p.on("console", lambda m: p.errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    p.on("requestfailed", lambda r: p.errors.append(f"request failed: {r.url}"))
    yield p
    context.close()


def wait_for_math(p):
    """Wait until MathJax (loaded asynchronously, where a page has math) has typeset the page."""
    if p.locator("script[src*='mathjax']").count():
        p.wait_for_function("() => window.MathJax && window.MathJax.startup && window.MathJax.startup.promise")
        p.evaluate("() => window.MathJax.startup.promise")


def test_every_page_loads_without_console_errors_and_shows_no_raw_math(page, served):
    base, pages = served
    typeset = 0
    for name in pages:
        page.errors.clear()
        page.goto(f"{base}/{name}", wait_until="load")
        wait_for_math(page)
        assert page.errors == [], f"{name}: {page.errors}"
        text = page.inner_text("main") if page.query_selector("main") else page.inner_text("body")
        raw = re.findall(r"(?<![\\\w])\$[^$\n]{1,80}\$", text)
        assert raw == [], f"{name}: raw math is visible: {raw[:3]}"
        assert "\\(" not in text and "\\[" not in text, f"{name}: untypeset TeX delimiters"
        typeset += page.locator("mjx-container").count()
    assert typeset > 50, "MathJax typeset (almost) nothing: is it bundled and loaded?"


def test_next_and_previous_follow_the_table_of_contents(page, served):
    base, _ = served
    page.goto(f"{base}/chapters/01_hardware_paces_deep_learning.html")
    page.click("a.right-next")
    page.wait_for_load_state()
    assert page.url.endswith("/chapters/02_scaling_laws.html")
    assert page.title().startswith("02 Scaling laws")
    page.click("a.left-prev")
    page.wait_for_load_state()
    assert page.url.endswith("/chapters/01_hardware_paces_deep_learning.html")
    assert page.title().startswith("01 Hardware paces deep learning")


def test_notebook_pages_link_to_colab_download_and_bibliography(page, served):
    base, _ = served
    book = load(ROOT)
    entry = next(e for e in book.entries if e.kind == "lab" and e.validated)
    page.goto(f"{base}/{Path(entry.file).with_suffix('.html').as_posix()}")
    colab = page.get_by_role("link", name="Open in Colab").first.get_attribute("href")
    assert colab.startswith("https://colab.research.google.com/github/") and colab.endswith(entry.file)
    download = page.get_by_role("link", name="Download the notebook").first
    assert download.get_attribute("href").endswith(Path(entry.file).name)
    assert page.request.get(page.url.rsplit("/", 1)[0] + "/" + download.get_attribute("href")).ok
    page.get_by_role("link", name="Bibliography").first.click()
    page.wait_for_load_state()
    assert page.url.endswith("/bibliography.html") and page.locator(".citation, dd, .bibliography li").count() > 0


def test_an_explorer_shows_its_text_and_stored_default_figure(page, served):
    base, _ = served
    page.goto(f"{base}/chapters/01_hardware_paces_deep_learning.html")
    explorer = page.locator(".cell_output", has_text="Interactive explorer").first
    assert explorer.is_visible()
    figure = explorer.locator("img").first
    assert figure.is_visible()
    assert page.evaluate("(img) => img.naturalWidth", figure.element_handle()) > 100  # the PNG loaded


def test_search_finds_a_term(page, served):
    base, _ = served
    page.goto(f"{base}/search.html?q=roofline")
    page.wait_for_selector("ul.search li", timeout=30_000)
    hits = page.locator("ul.search li a").all_inner_texts()
    assert any("GEMM" in h or "roofline" in h.lower() for h in hits), hits


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _distinctive(book) -> set[str]:
    """Code lines inside solution and hidden-test blocks and prose runs of answer-key cells (solutions' and
    chapters') that occur nowhere in what the site may show: the chapters' other cells and outputs, the student
    labs."""
    begin = re.compile(r"^\s*### BEGIN (SOLUTION|HIDDEN TESTS)")
    end = re.compile(r"^\s*### END (SOLUTION|HIDDEN TESTS)")
    secret, public = set(), []
    for e in (e for e in book.entries if e.validated):
        for path in [book.path(e.file)] + ([book.path(e.solution)] if e.solution else []):
            is_solution = e.solution is not None and path == book.path(e.solution)
            for cell in nbformat.read(path, as_version=4).cells:
                if cell.cell_type == "markdown":
                    if "answer-key" in cell.get("metadata", {}).get("tags", []):
                        secret |= {s.strip() for s in re.split(r"[*_`$\[\]()\\|<>#\n]", cell.source)}
                    elif not is_solution:
                        public.append(cell.source)
                    continue
                inside = False
                for line in cell.source.splitlines():
                    if begin.match(line) or end.match(line):
                        inside = bool(begin.match(line))
                    elif inside:
                        secret.add(line.strip())
                    elif not is_solution:
                        public.append(line)
                if not is_solution:
                    for out in cell.get("outputs", []):
                        data = out.get("data", {})
                        public += [str(out.get("text", ""))] + [str(data[m]) for m in data if m.startswith("text/")]
    corpus = _flat("\n".join(public))
    return {s for s in secret if len(s) >= MIN_DISTINCTIVE_CHARS and _flat(s) not in corpus}


def test_no_page_shows_solution_code_or_answer_key_text(site):
    out, _ = site
    secret = _distinctive(load(ROOT))
    assert len(secret) > 50, "found too few solution lines to make this test meaningful"
    for path in sorted(out.rglob("*")):
        if path.suffix not in (".html", ".ipynb", ".js", ".txt") or "_static" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            assert marker not in text, f"{path.relative_to(out)}: a {marker!r} marker"
        flat = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", text)))
        leaked = [s for s in secret if _flat(s) in flat]
        assert leaked == [], f"{path.relative_to(out)}: {leaked[:3]}"
