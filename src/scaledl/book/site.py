"""Stage the static book's source tree for Jupyter Book 1.x, generated from ``book.toml``.

:func:`stage` writes a folder that ``jupyter-book`` (Sphinx, myst-nb, sphinx-book-theme) builds as it is,
without executing anything and without reading ``chapters/`` or ``labs/`` again:

* ``_toc.yml`` and ``_config.yml`` generated from book.toml: one caption per part, its chapters then its labs,
  a planned entry as a short "coming" page, then the guides (``docs/*.md``) and the bibliography;
* every chapter with its ``answer-key`` markdown cells and its answer code cells (tagged ``answer-code``, or
  in an exercises section, tagged or not) removed, its stored
  outputs kept (an explorer's widget view is dropped, keeping its text, reworded for a page that runs
  nothing, and the default figure it stored under it); each figure gets alt text
  (:mod:`scaledl.book.static_cells`), and links between notebooks point at the staged pages
  (:mod:`scaledl.book.links`);
* every lab from its **student** version: ``labs/labNN_*.ipynb``, or, when that copy holds a student's own
  work on this machine, a fresh :func:`~scaledl.book.student_copy.student_version` of the solution. A solution
  notebook is never copied;
* a landing page that introduces the book (:mod:`scaledl.book.landing`);
* under each notebook's title, an "Open in Colab" link (from book.toml ``repository``), a download link and a
  link to the bibliography, whose references it cites (:mod:`scaledl.book.cite`) are linked to it.

The source tree never touches the book's own folders: everything is written under ``dest``.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import shutil
from pathlib import Path

import nbformat

from scaledl._args import UsageError
from scaledl.book import static_cells
from scaledl.book.answers import is_answer_code
from scaledl.book.landing import index_page
from scaledl.book.links import relink, site_targets
from scaledl.book.toc import Book, Entry

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
ANSWER_KEY_TAGS = frozenset({"answer-key", "solution"})  # worked answers: never on the site
# Cells that are not prose a figure describes: the navigation cells added to every notebook
NAV_TAGS = frozenset({"book-nav", "book-intro"})
BIBLIOGRAPHY = "bibliography"  # the page's name (bibliography.md) in the staged tree
COLAB = "https://colab.research.google.com/github"
KAGGLE = "https://kaggle.com/kernels/welcome?src="  # Kaggle's "Open in Kaggle": a notebook's GitHub URL as src
# nbgrader's markers: a solution, and tests kept from students (graded only)
SECRET_BLOCK = re.compile(r"^[ \t]*### BEGIN (SOLUTION|HIDDEN TESTS)\b.*$", re.M)
BRANCH = "main"  # the branch Colab opens; book.toml names a repository, not a branch


def github_slug(repository: str) -> str | None:
    """``ORG/REPO`` of a GitHub repository URL, or None for another host (Colab opens GitHub only).

    >>> github_slug("https://github.com/YOUR-ORG/scaling-deep-learning.git")
    'YOUR-ORG/scaling-deep-learning'
    >>> github_slug("https://gitlab.com/org/repo") is None
    True
    """
    m = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?", repository.strip())
    return f"{m.group(1)}/{m.group(2)}" if m else None


def colab_url(repository: str, path: str) -> str | None:
    """The Colab address that opens ``path`` (relative to the repository root) of ``repository``.

    >>> colab_url("https://github.com/ORG/REPO", "chapters/01_x.ipynb")
    'https://colab.research.google.com/github/ORG/REPO/blob/main/chapters/01_x.ipynb'
    """
    slug = github_slug(repository)
    return f"{COLAB}/{slug}/blob/{BRANCH}/{path}" if slug else None


def kaggle_url(repository: str, path: str) -> str | None:
    """The Kaggle address that imports ``path`` of ``repository`` into a new notebook (GitHub only, as Colab).

    >>> kaggle_url("https://github.com/ORG/REPO", "chapters/01_x.ipynb")
    'https://kaggle.com/kernels/welcome?src=https://github.com/ORG/REPO/blob/main/chapters/01_x.ipynb'
    """
    slug = github_slug(repository)
    return f"{KAGGLE}https://github.com/{slug}/blob/{BRANCH}/{path}" if slug else None


def page_name(entry: Entry) -> str:
    """The staged page of an entry, without suffix: its notebook's path, or ``coming/ID`` when planned."""
    return str(Path(entry.file).with_suffix("")) if entry.validated else f"coming/{entry.id}"


def staged_file(entry: Entry) -> str:
    """The staged source file of an entry, relative to the site's root: ``chapters/01_x.ipynb``,
    ``coming/13.md``."""
    return page_name(entry) + (".ipynb" if entry.validated else ".md")


def lab_source(book: Book, entry: Entry):
    """The notebook a lab page is built from: the student copy on disk, unless it holds a student's own work
    (then a fresh student version of the solution). Never the solution itself."""
    from scaledl.book.student_copy import student_version, student_work_kept

    if student_work_kept(book, entry) or not book.path(entry.file).is_file():
        return student_version(nbformat.read(book.path(entry.solution), as_version=4))
    return nbformat.read(book.path(entry.file), as_version=4)


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def for_the_site(nb, links: str, cite=None, rewrite_links=None):
    """A copy of ``nb`` as the site shows it.

    Answer keys (markdown cells tagged ``answer-key`` or ``solution``) and answer-only code cells (tagged
    ``answer-code``, or in an exercises section: :func:`~scaledl.book.answers.is_answer_code`) are removed;
    widget views are dropped (their text/plain fallback stays, its "run this cell" reworded for a page that
    runs nothing, and so does the stored figure); every figure gets alt
    text (:func:`~scaledl.book.static_cells.figure_alt`); ``links`` is inserted under the first ``#``
    heading, and each markdown cell is passed through ``rewrite_links`` then ``cite`` (functions of its source)
    when given.

    Raises:
        ValueError: a code cell still holds a ``### BEGIN SOLUTION`` or ``### BEGIN HIDDEN TESTS`` block, or
            uses a name that only a removed ``answer-code`` cell defines (a reader who downloads the page
            would meet a NameError there).
    """
    nb = copy.deepcopy(nb)
    cells, kept_at, linked, answer_code = [], [], False, []
    section, sentence = "", ""  # the heading and the first sentence of the prose above a figure
    for i, (cell, answer) in enumerate(zip(nb.cells, is_answer_code(nb))):
        tags = _tags(cell)
        if cell.cell_type == "markdown" and ANSWER_KEY_TAGS.intersection(tags):
            continue
        if answer:
            answer_code.append(cell.source)
            continue
        if cell.cell_type == "code":
            marker = SECRET_BLOCK.search(cell.source)
            if marker:
                raise UsageError(f"cell {i}: holds a '{marker.group(0).strip()}' block; the site shows no "
                                 f"solution and no hidden test")
            explorer = False
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if WIDGET_VIEW in data and len(data) > 1:
                    del data[WIDGET_VIEW]
                if isinstance(data.get("text/plain"), str):
                    text = static_cells.static_explorer_text(data["text/plain"])
                    explorer |= text != data["text/plain"]
                    data["text/plain"] = text
            if static_cells.has_figure(cell):
                static_cells.set_figure_alt(cell, static_cells.figure_alt(
                    cell.source, section, sentence, explorer=explorer))
        if cell.cell_type == "markdown":
            if not NAV_TAGS.intersection(tags):
                section = static_cells.last_heading(cell.source) or section
                sentence = static_cells.first_sentence(cell.source)
            if rewrite_links is not None:
                cell.source = rewrite_links(cell.source)
            if cite is not None:
                cell.source = cite(cell.source)
            if not linked:
                cell.source, linked = _insert_links(cell.source, links)
        cells.append(cell)
        kept_at.append(i)
    code = [(i, c.source) for i, c in zip(kept_at, cells) if c.cell_type == "code"]
    for k, names in static_cells.names_only_in(answer_code, [source for _, source in code]).items():
        raise UsageError(f"cell {code[k][0]}: uses {', '.join(sorted(names))}, which only a cell "
                         f"tagged '{static_cells.ANSWER_CODE_TAG}' defines; the site leaves that cell out, so "
                         f"compute it in a cell without the tag")
    nb.cells = cells
    nb.metadata.pop("widgets", None)  # no widget manager is loaded: the views above were dropped
    return nb


def _insert_links(source: str, links: str) -> tuple[str, bool]:
    lines = source.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# "):
            return "\n".join(lines[: i + 1] + ["", links, ""] + lines[i + 1:]), True
    return source, False


def links_line(book: Book, entry: Entry) -> str:
    """The line under a notebook page's title: Open in Colab, Open in Kaggle, download, bibliography."""
    name = Path(entry.file).name
    up = "../" * (len(Path(entry.file).parts) - 1)
    items = []
    url = colab_url(book.repository, entry.file)
    if url:
        items.append(f"[Open in Colab]({url})")
        items.append(f"[Open in Kaggle]({kaggle_url(book.repository, entry.file)})")
    items.append(f"{{download}}`Download the notebook <{name}>`")
    items.append(f"[Bibliography]({up}{BIBLIOGRAPHY}.md)")
    return " · ".join(items)


def coming_page(entry: Entry) -> str:
    what = "chapter" if entry.kind == "chapter" else "lab"
    title = entry.title if entry.kind == "lab" else f"{entry.id} {entry.title}"
    return (f"# {title} (coming)\n\nThis {what} is planned: it is listed in the book's table of contents "
            f"but not written yet.\n")


def toc_yaml(book: Book, guides: list[str]) -> str:
    """``_toc.yml`` (jb-book format) for the parts and entries of book.toml, the guides and the bibliography.

    Written as JSON, which is YAML, so no YAML library is needed and every title is quoted."""
    parts = []
    for pid, title in book.parts:
        entries = [e for e in book.entries if e.part == pid]
        ordered = [e for e in entries if e.kind == "chapter"] + [e for e in entries if e.kind == "lab"]
        if ordered:
            parts.append({"caption": f"Part {pid}: {title}",
                          "chapters": [{"file": page_name(e)} for e in ordered]})
    if guides:
        parts.append({"caption": "Guides", "chapters": [{"file": g} for g in guides]})
    parts.append({"caption": "References", "chapters": [{"file": BIBLIOGRAPHY}]})
    return json.dumps({"format": "jb-book", "root": "index", "parts": parts}, indent=1) + "\n"


def config_yaml(book: Book) -> str:
    """``_config.yml``: no execution, offline MathJax, the bibliography, no widget JavaScript (from a CDN),
    Colab launch buttons, search."""
    slug = github_slug(book.repository)
    config = {
        "title": book.title,
        "author": ", ".join(book.authors),
        "copyright": book.license,
        "only_build_toc_files": True,
        "exclude_patterns": ["_build", "**.ipynb_checkpoints"],
        "execute": {"execute_notebooks": "off"},
        "bibtex_bibfiles": ["references.bib"],
        "html": {"use_download_button": True, "use_repository_button": bool(slug), "home_page_in_navbar": True},
        "sphinx": {
            "extra_extensions": ["sphinx-mathjax-offline"],
            "config": {
                "nb_ipywidgets_js": {},  # require.js and the widget manager would load from a CDN
                # pydata-sphinx-theme logs an error for an empty mode (Jupyter Book sets none)
                "html_context": {"default_mode": "light"},
                "bibtex_reference_style": "author_year",
                "bibtex_default_style": "plain",
                "suppress_warnings": ["mystnb.unknown_mime_type", "myst.header"],
            },
        },
        "latex": {"latex_documents": {"targetname": "book.tex"}},
    }
    if slug:
        config["repository"] = {"url": f"https://github.com/{slug}", "branch": BRANCH, "path_to_book": ""}
        config["launch_buttons"] = {"colab_url": "https://colab.research.google.com", "notebook_interface": "classic"}
    return json.dumps(config, indent=1) + "\n"


def stage(book: Book, dest: Path) -> Path:
    """Write the site's source tree for ``book`` into ``dest`` (emptied first); returns ``dest``.

    Raises:
        ValueError: ``dest`` is the book's root or inside chapters/ or labs/ (they are never written), or a
            notebook page would show a solution.
    """
    import tomllib

    from scaledl.book.cite import Citations

    dest = Path(dest).resolve()
    root = book.root.resolve()
    if dest == root or any(dest.is_relative_to(root / d) for d in ("chapters", "labs", "docs")):
        raise UsageError(f"dest={dest}: the site is staged in a build folder, never in the book's own sources")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    bib = book.path("references.bib")
    cite = None
    if bib.is_file():
        shutil.copyfile(bib, dest / "references.bib")
        cite = Citations.from_bib(bib.read_text(encoding="utf-8")).link
    else:
        (dest / "references.bib").write_text("", encoding="utf-8")
    targets = site_targets(book, staged_file)
    blob = f"https://github.com/{slug}/blob/{BRANCH}" if (slug := github_slug(book.repository)) else None
    for e in book.entries:
        target = dest / staged_file(e)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not e.validated:
            target.write_text(coming_page(e), encoding="utf-8")
            continue
        nb = lab_source(book, e) if e.kind == "lab" else nbformat.read(book.path(e.file), as_version=4)
        # a lab's student page holds its solution's markdown: links written from labs/ or labs/solutions/
        bases = [str(Path(f).parent.as_posix()) for f in (e.file, e.solution) if f]
        page_links = functools.partial(relink, page=staged_file(e), bases=bases, targets=targets,
                                       root=book.root, blob_url=blob)
        try:
            page = for_the_site(nb, links_line(book, e), cite, page_links)
        except ValueError as err:
            raise UsageError(f"{e.file}: {err}") from None
        nbformat.write(page, target)
    guides = []
    for md in sorted(book.path("docs").glob("*.md")) if book.path("docs").is_dir() else []:
        (dest / "docs").mkdir(exist_ok=True)
        text = relink(md.read_text(encoding="utf-8"), page=f"docs/{md.name}", bases=["docs"], targets=targets,
                      root=book.root, blob_url=blob)
        (dest / "docs" / md.name).write_text(text, encoding="utf-8")
        guides.append(f"docs/{md.stem}")
    (dest / f"{BIBLIOGRAPHY}.md").write_text(
        "# Bibliography\n\nThe source documents the book is built from and the literature its chapters cite "
        "(`references.bib`).\n\n```{bibliography}\n:all:\n```\n", encoding="utf-8")
    with open(book.path("book.toml"), "rb") as f:
        subtitle = tomllib.load(f).get("book", {}).get("subtitle", "")
    index = index_page(book, subtitle, staged_file, lambda path: colab_url(book.repository, path),
                       f"{BIBLIOGRAPHY}.md")
    (dest / "index.md").write_text(index, encoding="utf-8")
    (dest / "_toc.yml").write_text(toc_yaml(book, guides), encoding="utf-8")
    (dest / "_config.yml").write_text(config_yaml(book), encoding="utf-8")
    return dest
