"""What a notebook cell becomes on the static book, where nothing runs: explorer text, figure alt text, and the
cells that only compute an exercise's answer.

* An explorer's plain-text fallback (:data:`scaledl.widgets.FALLBACK_TEXT`) asks the reader to run the cell;
  :func:`static_explorer_text` rewrites it for a page without a kernel.
* Sphinx writes ``alt="../_images/<hash>.png"`` for a notebook's figure unless the cell says otherwise;
  :func:`figure_alt` derives real alt text from the cell and the prose above it, and :func:`set_figure_alt`
  stores it where myst-nb reads image options (cell metadata ``mystnb: {image: {alt: ...}}``).
* A code cell tagged ``answer-code`` is left out of the site like an answer-key cell;
  :func:`names_only_in` finds the names a kept cell would then use undefined (a downloaded page would stop
  with a NameError there).
"""

from __future__ import annotations

import ast
import builtins
import re

ANSWER_CODE_TAG = "answer-code"  # a code cell that only computes an exercise's answer: never on the site
ALT_MAX_CHARS = 200  # screen readers read alt text in one go; longer context belongs in the prose
MIN_SENTENCE_WORDS = 5  # shorter lead-ins ("Explore it:", "Try other sizes:") describe no figure

# The package's fallback (scaledl.widgets.FALLBACK_TEXT) and older wordings: "run this cell ..." and the
# sentence about the default figure after it.
_RUN_THIS_CELL = re.compile(r"^(?P<lead>Interactive explorer:)\s*run this cell[^.]*\.(?:\s*The figure below is "
                            r"drawn at (?:their|its) default (?:values|settings)\.)?", re.I)
STATIC_EXPLORER_TEXT = ("Interactive explorer: in a running notebook (Open in Colab, or JupyterLab) its controls "
                        "redraw the figure below. On this page, which runs nothing, the figure is drawn at "
                        "their default values.")

FIGURE_COMMENT = re.compile(r"^[ \t]*#[ \t]*Figure:[ \t]*(?P<text>\S.*?)[ \t]*$", re.M | re.I)
# A title given as a plain string literal (f-strings and formatted titles are skipped: their text is only
# known when the cell runs): ax.set_title("..."), fig.suptitle('...'), plt.title("..."), title="...".
_TITLE = re.compile(r"""(?P<how>\b(?:set_title|suptitle|title)\s*\(|\btitle\s*=)\s*(?P<q>["'])"""
                    r"""(?P<text>(?:(?!(?P=q))[^\\\n])+)(?P=q)""")
_LEGEND = re.compile(r"\blegend\s*\([^)\n]*$")  # title= inside a legend(...) call is the legend's title
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_SECTION_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVX]+\.)\s+")


def static_explorer_text(text: str) -> str:
    """``text`` with an explorer's "run this cell" sentence rewritten for a static page (unchanged otherwise).

    >>> static_explorer_text("Interactive explorer: run this cell to move its controls.")[:43]
    'Interactive explorer: in a running notebook'
    >>> static_explorer_text("42")
    '42'
    """
    return _RUN_THIS_CELL.sub(STATIC_EXPLORER_TEXT, text, count=1)


def _plain_markdown(text: str) -> str:
    text = _MD_LINK.sub(r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML (<sub>, <details>)
    text = re.sub(r"[*`$\\{}]", "", text)  # emphasis, code, math delimiters and TeX commands' backslashes
    return re.sub(r"\s+", " ", text).strip()


def _heading(line: str) -> str:
    return _SECTION_NUMBER.sub("", _plain_markdown(line.lstrip("#")))


def first_sentence(markdown: str) -> str:
    """The first sentence of a markdown cell's prose (headings skipped), as plain text ("" if none).

    >>> first_sentence("## 3 Three regions\\n\\nThe **ridge** moves right (see [ch 3](03.ipynb)). Then more.")
    'The ridge moves right (see ch 3).'
    """
    for block in re.split(r"\n\s*\n", markdown.strip()):
        prose = [line for line in block.strip().splitlines() if not line.lstrip().startswith("#")]
        text = _plain_markdown(" ".join(prose))
        if text:
            m = re.match(r"(.+?[.!?:])(?:\s|$)", text)
            return m.group(1) if m else text
    return ""


def last_heading(markdown: str) -> str | None:
    """The text of a markdown cell's last heading, without its section number; None if it has none.

    >>> last_heading("# 02 Scaling laws\\n\\nText\\n\\n## 3 Three regions, one power law")
    'Three regions, one power law'
    """
    headings = [line for line in markdown.splitlines() if re.match(r"#{1,6}\s", line)]
    return _heading(headings[-1]) if headings else None


def literal_titles(source: str) -> list[str]:
    """The plot titles a code cell gives as plain string literals, in order, without repeats."""
    titles = []
    for m in _TITLE.finditer(source):
        line_start = source.rfind("\n", 0, m.start()) + 1
        if m.group("how").startswith("title") and _LEGEND.search(source[line_start:m.start()]):
            continue
        text = m.group("text").strip()
        if text and text not in titles:
            titles.append(text)
    return titles


def _shorten(text: str, limit: int = ALT_MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def figure_alt(source: str, section: str, sentence: str = "", *, explorer: bool = False) -> str:
    """Alt text for the figures a code cell draws, never empty: where the figure is, then what it shows.

    Where: ``section``, the heading above the cell (the chapter's title before the first section). What, in
    order of preference: the cell's ``# Figure: ...`` comment (an author's own description), the plot titles
    it gives as string literals, else ``sentence``, the first sentence of the prose just above the cell
    when it says more than a few words ("Move the controls:" does not describe a figure). An explorer's
    figure says it is drawn at the default settings.

    >>> figure_alt('ax.set_title("Learning curves")\\nax.legend(title="width")', "Three regions")
    'Figure in “Three regions”: Learning curves'
    >>> figure_alt("fig = demand_figure()", "Demand", "Move the controls:", explorer=True)
    'Figure in “Demand” (an interactive explorer at its default settings)'
    """
    comment = FIGURE_COMMENT.search(source)
    if comment:
        what = _plain_markdown(comment.group("text"))
    else:
        what = "; ".join(literal_titles(source))
        if not what and len(sentence.split()) >= MIN_SENTENCE_WORDS:
            what = sentence.strip().rstrip(":").strip()
    head = f"Figure in “{section.strip()}”" if section.strip() else "Figure"
    if explorer:
        head += " (an interactive explorer at its default settings)"
    return _shorten(f"{head}: {what}" if what else head)


def set_figure_alt(cell, alt: str) -> None:
    """Store ``alt`` where myst-nb reads the image options of a cell's outputs (``mystnb.image.alt``)."""
    options = cell.setdefault("metadata", {}).setdefault("mystnb", {}).setdefault("image", {})
    options["alt"] = alt


def has_figure(cell) -> bool:
    return any(mime.startswith("image/") for out in cell.get("outputs", []) for mime in out.get("data", {}))


def _python(source: str) -> ast.Module | None:
    """A code cell parsed as Python, IPython's magics and shell lines blanked; None if it does not parse."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def bound_names(source: str) -> set[str]:
    """Names a cell binds at any level: assignments, imports, functions, classes, loop targets."""
    tree = _python(source)
    if tree is None:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def used_names(source: str) -> set[str]:
    tree = _python(source)
    if tree is None:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def names_only_in(dropped: list[str], kept: list[str]) -> dict[int, set[str]]:
    """For each kept cell (by position in ``kept``), the names it uses that only the ``dropped`` cells bind.

    >>> names_only_in(["answer = 6 * 7"], ["x = 1", "print(answer, x)"])
    {1: {'answer'}}
    """
    only_dropped = set().union(*map(bound_names, dropped)) if dropped else set()
    only_dropped -= set().union(*map(bound_names, kept)) if kept else set()
    only_dropped -= set(dir(builtins))
    found = {}
    for i, source in enumerate(kept):
        missing = used_names(source) & only_dropped
        if missing:
            found[i] = missing
    return found
