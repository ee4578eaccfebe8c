"""Staging the static book (scaledl.book.site, scaledl.book.cite): the toc follows book.toml, no answer key and
no solution reaches a page, labs come from their student versions. No Sphinx run here (tests/browser/test_site.py
builds the site); about 2 s, most of it staging the real book once."""

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from scaledl.book import load, nbfile
from scaledl.book.cite import Citations
from scaledl.book.html import remote_assets
from scaledl.book.site import colab_url, config_yaml, stage, toc_yaml
from scaledl.book.static_cells import STATIC_EXPLORER_TEXT, figure_alt, literal_titles
from scaledl.book.student_copy import student_version, write_student_version
from scaledl.widgets import FALLBACK_TEXT

ROOT = Path(__file__).resolve().parents[2]
ANSWER = "The ridge point moves right because the bandwidth stays put."
SOLUTION_LINE = "return sum(x * x for x in values)  # the secret"
BOOK = """[book]
title = "T"
authors = ["A"]
license = "L"
repository = "https://github.com/ORG/REPO"

[[parts]]
id = "I"
title = "First"

[[parts.chapters]]
id = "00"
file = "chapters/00_a.ipynb"
title = "A"
status = "done"

[[parts.labs]]
id = "lab01"
file = "labs/lab01_x.ipynb"
solution = "labs/solutions/lab01_x.ipynb"
title = "Lab 1: X"
status = "done"

[[parts]]
id = "II"
title = "Second"

[[parts.chapters]]
id = "01"
file = "chapters/01_b.ipynb"
title = "B"
status = "planned"
"""


def chapter_nb():
    nb = new_notebook(metadata={"kernelspec": nbfile.KERNELSPEC, "widgets": {"state": {}}})
    nb.cells.append(new_markdown_cell("# 00 A\n\nIntro, after (Williams, Waterman and Patterson, 2009)."))
    code = new_code_cell("Explorer(...)", execution_count=1)
    code.outputs = [
        new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "m"},
                                         "text/plain": FALLBACK_TEXT}),
        new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}),
    ]
    nb.cells.append(code)
    nb.cells.append(new_markdown_cell(ANSWER, metadata={"tags": ["answer-key"]}))
    return nb


def solution_nb():
    nb = new_notebook(metadata={"kernelspec": nbfile.KERNELSPEC})
    nb.cells.append(new_markdown_cell("# Lab 1: X"))
    cell = new_code_cell(f"def f(values):\n    ### BEGIN SOLUTION Task 1.1\n    {SOLUTION_LINE}\n"
                         f"    ### END SOLUTION", execution_count=1)
    cell.outputs = [new_output("stream", name="stdout", text="solution ran\n")]
    nb.cells.append(cell)
    nb.cells.append(new_markdown_cell(ANSWER, metadata={"tags": ["answer-key"]}))
    return nb


@pytest.fixture
def small_book(tmp_path):
    root = tmp_path / "book"
    for folder in ("chapters", "labs/solutions", "docs"):
        (root / folder).mkdir(parents=True)
    (root / "book.toml").write_text(BOOK)
    (root / "references.bib").write_text(
        "@article{williams2009roofline, author = {Williams, Samuel and Waterman, Andrew},"
        " title = {Roofline}, year = {2009}}\n")
    (root / "docs" / "instructor-guide.md").write_text("# Instructor guide\n\nHello.\n")
    nbfile.write(chapter_nb(), root / "chapters/00_a.ipynb")
    nbfile.write(solution_nb(), root / "labs/solutions/lab01_x.ipynb")
    write_student_version(root / "labs/solutions/lab01_x.ipynb", root / "labs/lab01_x.ipynb")
    return root


def staged_text(folder: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file())


def test_toc_follows_book_toml_with_coming_pages_guides_and_bibliography(small_book, tmp_path):
    out = stage(load(small_book), tmp_path / "src")
    toc = json.loads((out / "_toc.yml").read_text())
    assert toc["root"] == "index"
    assert [p["caption"] for p in toc["parts"]] == ["Part I: First", "Part II: Second", "Guides", "References"]
    assert toc["parts"][0]["chapters"] == [{"file": "chapters/00_a"}, {"file": "labs/lab01_x"}]
    assert toc["parts"][1]["chapters"] == [{"file": "coming/01"}]
    assert (out / "coming/01.md").read_text().startswith("# 01 B (coming)")
    assert toc["parts"][2]["chapters"] == [{"file": "docs/instructor-guide"}]
    assert "{bibliography}" in (out / "bibliography.md").read_text()
    config = json.loads((out / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off"
    assert config["sphinx"]["config"]["nb_ipywidgets_js"] == {}
    assert "sphinx-mathjax-offline" in config["sphinx"]["extra_extensions"]


def test_pages_have_no_answer_key_no_solution_and_keep_the_default_figure(small_book, tmp_path):
    out = stage(load(small_book), tmp_path / "src")
    text = staged_text(out)
    assert ANSWER not in text and SOLUTION_LINE not in text and "BEGIN SOLUTION" not in text
    assert "solution ran" not in text  # the solution's outputs are not shown either
    ch = nbformat.read(out / "chapters/00_a.ipynb", as_version=4)
    outputs = ch.cells[1].outputs
    assert "application/vnd.jupyter.widget-view+json" not in outputs[0].data
    assert outputs[0].data["text/plain"] == STATIC_EXPLORER_TEXT  # no "run this cell" on a page that runs nothing
    assert "run this cell" not in text.lower()
    assert ch.cells[1].metadata["mystnb"]["image"]["alt"] == \
        "Figure in “A” (an interactive explorer at its default settings): Intro, after (Williams, Waterman and " \
        "Patterson, 2009)."
    assert "image/png" in outputs[1].data
    assert "widgets" not in ch.metadata
    title, _, links = ch.cells[0].source.splitlines()[:3]
    assert title == "# 00 A"
    assert "[Open in Colab](https://colab.research.google.com/github/ORG/REPO/blob/main/chapters/00_a.ipynb)" in links
    assert ("[Open in Kaggle](https://kaggle.com/kernels/welcome?src=https://github.com/ORG/REPO/blob/main/chapters/"
            "00_a.ipynb)") in links
    assert "{download}`Download the notebook <00_a.ipynb>`" in links and "../bibliography.md" in links
    assert "{cite:p}`williams2009roofline`" in ch.cells[0].source
    lab = nbformat.read(out / "labs/lab01_x.ipynb", as_version=4)
    assert "labs/lab01_x.ipynb" in lab.cells[0].source  # Colab opens the student copy
    assert not (out / "labs" / "solutions").exists()


def test_a_students_edited_copy_is_replaced_by_a_fresh_student_version(small_book, tmp_path):
    path = small_book / "labs/lab01_x.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].source = f"def f(values):\n    {SOLUTION_LINE}  # my own answer"
    nbfile.write(nb, path)
    out = stage(load(small_book), tmp_path / "src")
    staged = nbformat.read(out / "labs/lab01_x.ipynb", as_version=4)
    fresh = student_version(nbformat.read(small_book / "labs/solutions/lab01_x.ipynb", as_version=4))
    assert staged.cells[1].source == fresh.cells[1].source
    assert "NotImplementedError" in staged.cells[1].source


def test_a_solution_block_left_in_a_page_is_refused(small_book, tmp_path):
    nb = chapter_nb()
    nb.cells[1].source = "### BEGIN SOLUTION\nx = 1\n### END SOLUTION"
    nbfile.write(nb, small_book / "chapters/00_a.ipynb")
    with pytest.raises(ValueError, match=r"chapters/00_a.ipynb: cell 1: holds a '### BEGIN SOLUTION' block"):
        stage(load(small_book), tmp_path / "src")


def test_a_hidden_test_left_in_a_page_is_refused(small_book, tmp_path):
    nb = chapter_nb()
    nb.cells[1].source = "### BEGIN HIDDEN TESTS\nassert f(3) == 9\n### END HIDDEN TESTS"
    nbfile.write(nb, small_book / "chapters/00_a.ipynb")
    with pytest.raises(ValueError, match=r"cell 1: holds a '### BEGIN HIDDEN TESTS' block"):
        stage(load(small_book), tmp_path / "src")


def test_the_book_sources_are_never_a_staging_folder(small_book):
    with pytest.raises(ValueError, match="dest=.*never in the book's own sources"):
        stage(load(small_book), small_book / "chapters" / "site")
    with pytest.raises(ValueError, match="dest=.*never in the book's own sources"):
        stage(load(small_book), small_book)


def test_colab_url_needs_github():
    assert colab_url("https://github.com/o/r/", "labs/l.ipynb") == \
        "https://colab.research.google.com/github/o/r/blob/main/labs/l.ipynb"
    assert colab_url("https://example.org/r", "labs/l.ipynb") is None


def test_real_book_stages_every_entry_without_solutions(tmp_path):
    book = load(ROOT)
    out = stage(book, tmp_path / "src")
    listed = [c["file"] for p in json.loads((out / "_toc.yml").read_text())["parts"] for c in p["chapters"]]
    for e in book.entries:
        page = str(Path(e.file).with_suffix("")) if e.validated else f"coming/{e.id}"
        assert page in listed, e.id
    text = staged_text(out)
    assert "BEGIN SOLUTION" not in text
    for e in book.entries:
        if e.kind == "lab" and e.validated:
            solution = nbformat.read(book.path(e.solution), as_version=4)
            for cell in solution.cells:
                if "answer-key" in cell.get("metadata", {}).get("tags", []):
                    assert cell.source not in text, f"{e.solution}: an answer-key cell is on the site"
    assert json.loads(config_yaml(book))["repository"]["url"].startswith("https://github.com/")
    assert toc_yaml(book, []).count('"file"') == len(book.entries) + 1  # + the bibliography


def test_citations_are_found_by_title_or_surname_and_year():
    c = Citations.from_bib((ROOT / "references.bib").read_text(encoding="utf-8"))
    assert len(c.works) >= 60  # the whole file parses (a broken entry would stop pybtex)
    assert c.keys_in("the power law (Kaplan, McCandlish and others, 2020)") == ["kaplan2020scaling"]
    assert c.keys_in("*Scaling Laws for Neural Language Models*, arXiv (2020)") == ["kaplan2020scaling"]
    assert c.keys_in("*Scaling Laws for Neural Language Models*, without its year") == []
    assert c.keys_in("Kaplan wrote many things. In 2020 it rained.") == []  # not one citation
    assert c.keys_in("NVIDIA, 2018") == []  # an organisation is not recognised by name
    with pytest.raises(ValueError, match="references.bib"):
        Citations.from_bib("@misc{broken, title = {x}")


def test_remote_assets_finds_cdn_scripts_not_links(tmp_path):
    (tmp_path / "a.html").write_text('<script src="https://cdn.example/x.js"></script>'
                                     '<a href="https://colab.research.google.com/x">Colab</a>'
                                     '<script src="_static/local.js"></script>')
    found = remote_assets(tmp_path)
    assert len(found) == 1 and "cdn.example" in found[0]


# --- the reader's journey on the site: landing page, figures, answer-only cells, links between notebooks ---

def test_the_landing_page_introduces_the_book_from_book_toml(small_book, tmp_path):
    out = stage(load(small_book), tmp_path / "src")
    index = (out / "index.md").read_text()
    for heading in ("## What this book is", "## Who it is for", "## How to read it", "## Running it",
                    "## All chapters and labs"):
        assert heading in index, heading
    assert "An interactive textbook in 2 parts: 1 chapters and 1 labs" in index  # counted from book.toml
    assert "(1 more planned)" in index
    assert "- **Part I: First**: chapter 00, then lab 01." in index
    assert "[00 A](chapters/00_a.ipynb)" in index and "[B](coming/01.md)" not in index
    assert "- [01 B](coming/01.md) (coming)" in index
    assert "simulator" in index and "**Labs.**" in index
    assert "git clone https://github.com/ORG/REPO\ncd REPO\nmake lab" in index
    assert "https://colab.research.google.com/github/ORG/REPO/blob/main/chapters/00_a.ipynb" in index
    (small_book / "book.toml").write_text(BOOK.replace('gpu = false', '').replace(
        'status = "done"\n\n[[parts.labs]]', 'status = "done"\ngpu = true\n\n[[parts.labs]]'))
    index = (stage(load(small_book), tmp_path / "src") / "index.md").read_text()
    assert "A real GPU is recommended, for timings that measure your hardware, in 00 A" in index


@pytest.mark.parametrize("chapter, lab, slowest", [
    (None, None, "at most 1 min"),  # nothing measured: the budget (sim_budget_s, 60 s by default) bounds it
    (95, 6, "about 1.5 min"),  # measured: said as the opening cells say it (scaledl.book.journey.duration)
    (95, None, "about 1.5 min"),  # the unmeasured lab's budget is shorter than the measured chapter
    (30, None, "at most 1 min"),  # ... or longer
    (4, 6, "under 10 s"),
])
def test_the_landing_page_says_how_long_the_slowest_notebook_takes(small_book, tmp_path, chapter, lab, slowest):
    toml = BOOK
    for status, seconds in (('title = "A"\nstatus = "done"', chapter), ('title = "Lab 1: X"\nstatus = "done"', lab)):
        if seconds is not None:
            assert status in toml
            toml = toml.replace(status, f"{status}\ncpu_seconds = {seconds}")
    (small_book / "book.toml").write_text(toml)
    index = (stage(load(small_book), tmp_path / "src") / "index.md").read_text()
    assert f"every notebook runs on an ordinary CPU (the slowest in {slowest} on a 2-core CPU)." in index


def test_figure_alt_prefers_an_authors_comment_then_literal_titles_then_the_prose_above():
    cell = 'fig, ax = plt.subplots()\nax.set_title("Roofline of the V100")\nax.legend(title="kernel")'
    assert figure_alt(cell, "The roofline", "Long enough sentence about the plot.") == \
        "Figure in “The roofline”: Roofline of the V100"  # the legend's title is not the figure's
    assert figure_alt("# Figure: time per step against GPUs\n" + cell, "S") == \
        "Figure in “S”: time per step against GPUs"
    fstring = 'ax.set_title(f"{n} ranks")'
    assert literal_titles(fstring) == []  # its text is only known when the cell runs
    assert figure_alt(fstring, "S", "The bubble shrinks as microbatches grow:") == \
        "Figure in “S”: The bubble shrinks as microbatches grow"
    assert figure_alt(fstring, "S", "Move the controls:") == "Figure in “S”"
    assert figure_alt("x", "", "") == "Figure"
    long = figure_alt("x", "S", "word " * 100)
    assert len(long) <= 200 and long.endswith("…")


def _nav_chapter(links: str, intro: str):
    nb = chapter_nb()
    nb.cells.insert(1, new_markdown_cell(intro, metadata={"tags": ["book-intro"]}))
    nb.cells.append(new_markdown_cell(links, metadata={"tags": ["book-nav"]}))
    return nb


def test_links_between_notebooks_resolve_to_staged_pages_and_never_to_a_solution(small_book, tmp_path):
    nav = ("**Next:** [01 B](01_b.ipynb) · [Lab 1](../labs/lab01_x.ipynb#task-1) · "
           "[the solution](../labs/solutions/lab01_x.ipynb) · [README](../README.md) · [web](https://x.org/a.ipynb)")
    (small_book / "README.md").write_text("# readme\n")
    intro = "This chapter assumes [00 A](00_a.ipynb) and [a guide](../docs/instructor-guide.md)."
    nbfile.write(_nav_chapter(nav, intro), small_book / "chapters/00_a.ipynb")
    solution = solution_nb()
    solution.cells.append(new_markdown_cell("**Back:** [00 A](../chapters/00_a.ipynb)",
                                            metadata={"tags": ["book-nav"]}))
    nbfile.write(solution, small_book / "labs/solutions/lab01_x.ipynb")
    write_student_version(small_book / "labs/solutions/lab01_x.ipynb", small_book / "labs/lab01_x.ipynb")
    out = stage(load(small_book), tmp_path / "src")
    ch = nbformat.read(out / "chapters/00_a.ipynb", as_version=4)
    nav_cell = next(c for c in ch.cells if "book-nav" in c.metadata.get("tags", []))
    assert nav_cell.source == ("**Next:** [01 B](../coming/01.md) · [Lab 1](../labs/lab01_x.ipynb#task-1) · "
                               "[the solution](../labs/lab01_x.ipynb) · "
                               "[README](https://github.com/ORG/REPO/blob/main/README.md) · "
                               "[web](https://x.org/a.ipynb)")
    intro = next(c for c in ch.cells if "book-intro" in c.metadata.get("tags", []))
    assert "[00 A](00_a.ipynb)" in intro.source and "[a guide](../docs/instructor-guide.md)" in intro.source
    lab = nbformat.read(out / "labs/lab01_x.ipynb", as_version=4)
    assert lab.cells[-1].source == "**Back:** [00 A](../chapters/00_a.ipynb)"
    assert "solutions/" not in staged_text(out)
    pages = [p for p in out.rglob("*") if p.suffix in (".ipynb", ".md")]
    local = [(p, link) for p in pages for link in re.findall(r"\]\(([^)#:]+\.(?:ipynb|md))", p.read_text())]
    assert len(local) >= 8  # the nav and intro links above, and the landing page's
    for page, link in local:
        assert (page.parent / link).resolve().is_file(), f"{page.relative_to(out)}: {link} resolves to nothing"


def test_a_link_to_an_unlisted_solution_becomes_plain_text_without_a_github_repository(small_book, tmp_path):
    toml = (small_book / "book.toml").read_text().replace("https://github.com/ORG/REPO", "https://gitlab.com/o/r")
    (small_book / "book.toml").write_text(toml)
    (small_book / "README.md").write_text("# readme\n")
    nbfile.write(_nav_chapter("[old](../labs/solutions/lab09_gone.ipynb) [readme](../README.md) [x](nothing.ipynb)",
                              "Assumes nothing."), small_book / "chapters/00_a.ipynb")
    ch = nbformat.read(stage(load(small_book), tmp_path / "src") / "chapters/00_a.ipynb", as_version=4)
    assert ch.cells[-1].source == "old readme [x](nothing.ipynb)"  # a broken link stays (Sphinx warns)


def test_answer_code_cells_are_left_out_and_a_cell_that_needs_one_is_refused(small_book, tmp_path):
    nb = chapter_nb()
    nb.cells.append(new_code_cell("best = max(range(7))  # exercise 2", metadata={"tags": ["answer-code"]}))
    nb.cells.append(new_code_cell("print('done')"))
    nbfile.write(nb, small_book / "chapters/00_a.ipynb")
    ch = nbformat.read(stage(load(small_book), tmp_path / "src") / "chapters/00_a.ipynb", as_version=4)
    assert [c.source for c in ch.cells if c.cell_type == "code"] == ["Explorer(...)", "print('done')"]
    nb.cells.append(new_code_cell("%matplotlib inline\nprint(best)"))
    nbfile.write(nb, small_book / "chapters/00_a.ipynb")
    with pytest.raises(ValueError, match=r"chapters/00_a.ipynb: cell 5: uses best, which only a cell tagged "
                                         r"'answer-code' defines"):
        stage(load(small_book), tmp_path / "src")
    nb.cells.insert(1, new_code_cell("best = None"))  # defined in a cell the site keeps: fine
    nbfile.write(nb, small_book / "chapters/00_a.ipynb")
    stage(load(small_book), tmp_path / "src")


def test_every_figure_of_the_real_book_gets_alt_text_and_no_explorer_asks_to_run_a_cell(tmp_path):
    out = stage(load(ROOT), tmp_path / "src")
    figures = 0
    for path in sorted(out.rglob("*.ipynb")):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            outputs = cell.get("outputs", [])
            assert not any("run this cell" in str(o.get("data", {}).get("text/plain", "")).lower()
                           for o in outputs), f"{path.name} cell {i}"
            if any("image/png" in o.get("data", {}) for o in outputs):
                figures += 1
                alt = cell.metadata["mystnb"]["image"]["alt"]
                assert re.fullmatch(r"Figure in “[^”]{3,}”.*", alt), f"{path.name} cell {i}: {alt!r}"
    assert figures > 30


def test_citations_name_et_al_and_a_venue_before_the_year():
    c = Citations.from_bib((ROOT / "references.bib").read_text(encoding="utf-8"))
    assert c.keys_in("1F1B comes from PipeDream (Narayanan et al., SOSP 2019).") == ["narayanan2019pipedream"]
    assert c.keys_in("Narayanan et al. (SOSP 2019)") == ["narayanan2019pipedream"]
    two = Citations.from_bib("@article{patarasuk2009bandwidth, author = {Patarasuk, Pitch and Yuan, Xin},"
                             " title = {Bandwidth optimal all-reduce algorithms}, year = {2009}}")
    assert two.keys_in("the bound of Patarasuk and Yuan (JPDC 2009)") == ["patarasuk2009bandwidth"]
    assert two.keys_in("Patarasuk and Yuan wrote it. Later (JPDC 2009)") == []  # two sentences
