"""Staging the static book (scaledl.book.site, scaledl.book.cite): the toc follows book.toml, no answer key and
no solution reaches a page, labs come from their student versions. No Sphinx run here (tests/browser/test_site.py
builds the site); about 2 s, most of it staging the real book once."""

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from scaledl.book import load, nbfile
from scaledl.book.cite import Citations
from scaledl.book.html import remote_assets
from scaledl.book.site import colab_url, config_yaml, stage, toc_yaml
from scaledl.labs.release import student_version, write_student_version

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
                                         "text/plain": "Interactive explorer: run this cell"}),
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
    assert outputs[0].data["text/plain"].startswith("Interactive explorer")
    assert "image/png" in outputs[1].data
    assert "widgets" not in ch.metadata
    title, _, links = ch.cells[0].source.splitlines()[:3]
    assert title == "# 00 A"
    assert "[Open in Colab](https://colab.research.google.com/github/ORG/REPO/blob/main/chapters/00_a.ipynb)" in links
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
