"""The students' bundle has a README written for students, and every relative link in it resolves.

The authors' README sends readers to INSTRUCTORS.md and the instructor guide (not in the bundle) and to
`make test` (no tests/ either). `scaledl course release` writes :mod:`scaledl.course.student_readme` instead;
these tests release the book into a temporary folder and follow every relative Markdown link of every `.md`
file and every notebook's Markdown cells there. About 3 s.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt

from scaledl.book import load
from scaledl.course.release import release

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
INSTRUCTOR_ONLY = re.compile(r"INSTRUCTORS\.md|instructor-guide", re.I)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, mailto:, attachment:, ...
_HTML_LINK = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
_PARSER = MarkdownIt("commonmark", {"html": True}).enable("table")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "students"
    release(BOOK, out)
    return out


def markdown_texts(folder: Path):
    """(file, Markdown text) for every ``.md`` file and every notebook Markdown cell under ``folder``."""
    for path in sorted(folder.rglob("*")):
        if ".git" in path.relative_to(folder).parts or not path.is_file():
            continue
        if path.suffix == ".md":
            yield path, path.read_text(encoding="utf-8")
        elif path.suffix == ".ipynb":
            for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
                if cell["cell_type"] == "markdown":
                    source = cell["source"]
                    yield path, "".join(source) if isinstance(source, list) else source


def links(text: str) -> list[str]:
    """Every link target of a Markdown text as a Markdown parser sees it: inline and reference links,
    images, autolinks, and ``href``/``src`` of raw HTML."""
    found = []

    def walk(tokens):
        for t in tokens:
            if t.type == "link_open":
                found.append(t.attrGet("href"))
            elif t.type == "image":
                found.append(t.attrGet("src"))
            elif t.type in ("html_inline", "html_block"):
                found.extend(_HTML_LINK.findall(t.content))
            walk(t.children or [])

    walk(_PARSER.parse(text))
    return [x for x in found if x]


def broken_links(folder: Path) -> list[str]:
    """``file -> target`` for each relative link that names no file inside ``folder``, and for each link
    (relative or not) to instructor-only material."""
    folder = folder.resolve()
    broken = []
    for path, text in markdown_texts(folder):
        rel = path.relative_to(folder).as_posix()
        for target in links(text):
            if INSTRUCTOR_ONLY.search(target):
                broken.append(f"{rel} -> {target} (instructor-only)")
                continue
            if _SCHEME.match(target) or target.startswith("#"):
                continue
            local = unquote(target.split("#", 1)[0].split("?", 1)[0])
            resolved = (path.parent / local).resolve()
            if local.startswith("/") or not resolved.is_relative_to(folder) or not resolved.is_file():
                broken.append(f"{rel} -> {target}")
    return broken


def test_every_relative_link_in_the_bundle_resolves_and_none_is_instructor_only(bundle):
    counted = sum(len(links(text)) for _, text in markdown_texts(bundle))
    assert counted > 100  # the README's table and every notebook's "where next" links
    assert broken_links(bundle) == []


def test_the_link_check_can_fail(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "there.md").write_text("x")
    (tmp_path / "README.md").write_text(
        "[ok](there.md) [ok too](./there.md#part) [web](https://example.org/x.md) [anchor](#top)\n"
        "[gone](missing.md) [guide](docs/instructor-guide.md) ![img](pics/p.png) [ref][r] <a href='../up.md'>up</a>\n"
        "[web guide](https://github.com/o/r/blob/main/INSTRUCTORS.md)\n\n[r]: nowhere.ipynb\n")
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["[back](../chapters/x.ipynb)"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "docs" / "n.ipynb").write_text(json.dumps(nb))
    assert sorted(broken_links(tmp_path)) == sorted([
        "README.md -> missing.md", "README.md -> docs/instructor-guide.md (instructor-only)",
        "README.md -> pics/p.png", "README.md -> nowhere.ipynb", "README.md -> ../up.md",
        "README.md -> https://github.com/o/r/blob/main/INSTRUCTORS.md (instructor-only)",
        "docs/n.ipynb -> ../chapters/x.ipynb"])


def test_the_authors_guide_stays_out_of_the_bundle(bundle):
    assert not (bundle / "CONTRIBUTING.md").exists()      # it sends authors to `make test` and tests/


def test_the_readme_is_the_students_not_the_authors(bundle):
    text = (bundle / "README.md").read_text(encoding="utf-8")
    assert text != (ROOT / "README.md").read_text(encoding="utf-8")
    for absent in ("make test", "INSTRUCTORS", "instructor guide", "instructor-guide", "tests/", "solutions/",
                   "answer key"):
        assert absent.lower() not in text.lower(), absent
    # what a student needs: the labs, the checks, the written answers, handing in
    for present in ("labs/", "YOUR CODE HERE", "Yours", "Spec", "*Your answer*", "Hand in", ".ipynb",
                    "make lab"):
        assert present in text, present
    for e in BOOK.entries:
        if e.validated:
            assert f"]({e.file})" in text, e.file  # the table links every chapter and lab


def test_the_readme_table_is_what_book_check_expects(bundle):
    """`scaledl book check` in the bundle compares the README's table with book.toml."""
    from scaledl.book.check import check_readme

    assert check_readme(load(bundle)) == []
