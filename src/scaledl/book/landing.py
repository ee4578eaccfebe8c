"""The static book's landing page (``index.md``), generated from book.toml.

It introduces the book before listing it: what the book is, who it is for, how to read it (the parts in
order, the CPU simulator against a real GPU, the labs, where the answers are), how to run it in Colab or on
one's own machine, and then the contents. Counts, the GPU chapters, the measured run times (or, for a notebook
not timed yet, its budget) and the links all come from book.toml, so the page stays true as chapters are added.
"""

from __future__ import annotations

from scaledl.book.journey import CPU_WORDS, duration
from scaledl.book.toc import Book, Entry


def _label(e: Entry) -> str:
    return e.title if e.kind == "lab" else f"{e.id} {e.title}"


def _slowest(entries: list[Entry]) -> str:
    """How long the slowest notebook takes on the simulator: measured (book.toml's ``cpu_seconds``, said as
    the opening cells say it), or "at most" its ``sim_budget_s`` where that is longer than every measured time
    (a notebook not timed yet)."""
    measured = [e.cpu_seconds for e in entries if getattr(e, "cpu_seconds", None)]
    budgets = [e.sim_budget_s for e in entries if not getattr(e, "cpu_seconds", None)]
    if budgets and max(budgets) > max(measured, default=0):
        words = duration(max(budgets))
        return words if words.startswith("under") else f"at most {words.removeprefix('about ')}"
    return duration(max(measured, default=0))


def _span(kind: str, ids: list[str]) -> str:
    """ "chapter 03", "chapters 03 and 04", "chapters 03 to 06", "" for none (ids in reading order)."""
    if not ids:
        return ""
    if len(ids) == 1:
        return f"{kind} {ids[0]}"
    return f"{kind}s {ids[0]} {'and' if len(ids) == 2 else 'to'} {ids[-1]}"


def _series(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def index_page(book: Book, subtitle: str, page_of, colab_of, bibliography: str = "bibliography.md") -> str:
    """The landing page's markdown.

    Args:
        subtitle: book.toml's ``[book] subtitle`` ("" if none).
        page_of: an entry's staged file (relative to the site's root), for links.
        colab_of: the Colab address of a repository path, or None where Colab cannot open the book.
    """
    chapters = [e for e in book.entries if e.kind == "chapter" and e.validated]
    labs = [e for e in book.entries if e.kind == "lab" and e.validated]
    planned = [e for e in book.entries if not e.validated]
    gpu = [e for e in chapters + labs if e.gpu]
    slowest = _slowest(chapters + labs)
    first = chapters[0] if chapters else None
    lines = [f"# {book.title}", ""]
    if subtitle:
        lines += [f"*{subtitle}*", ""]
    lines += [f"{', '.join(book.authors)}. {book.license}", ""]

    lines += ["## What this book is", "",
              f"An interactive textbook in {len(book.parts)} parts: {len(chapters)} chapters and {len(labs)} "
              f"labs, each a Jupyter notebook"
              + (f" ({len(planned)} more planned)" if planned else "") + ". "
              "Deep learning has moved forward each time compute got cheaper: faster GPUs, smaller number "
              "formats, complex instructions such as Tensor Cores, sparsity, and thousands of GPUs training one "
              "model. Every chapter lets you run and change those ideas instead of taking them on trust, and "
              "the code that could be wrong lives in the book's tested Python package, `scaledl`.", ""]

    lines += ["## Who it is for", "",
              "Readers who know Python and NumPy and what a neural network layer computes. No GPU "
              "programming, computer architecture or numerical analysis is assumed: the chapters build what "
              "they need" + (", and each one opens by saying what it teaches, what it assumes and how long it "
                             "takes to run." if getattr(book, "journey", False) else "."), ""]

    lines += ["## How to read it", "", "The parts build on each other, and a part's labs follow its chapters:", ""]
    for pid, title in book.parts:
        entries = [e for e in book.entries if e.part == pid and e.validated]
        if not entries:
            continue
        what = [_span("chapter", [e.id for e in entries if e.kind == "chapter"]),
                _span("lab", [e.id.removeprefix("lab") for e in entries if e.kind == "lab"])]
        lines.append(f"- **Part {pid}: {title}**: {', then '.join(w for w in what if w)}.")
    lines.append("")
    if first:
        lines += [f"Read the parts in order; start with [{_label(first)}]({page_of(first)}), which shows how the "
                  "notebooks, the interactive figures and the labs work.", ""]
    lines += ["**No GPU needed.** Without an NVIDIA GPU the book's kernels run on Numba's CUDA simulator, at "
              "small sizes and with exact results, and every notebook runs on an ordinary CPU (the slowest in "
              f"{slowest} on {CPU_WORDS}). The numbers stored in the pages are those of the simulator. "
              + (f"A real GPU is recommended, for timings that measure your hardware, in "
                 f"{_series([_label(e) for e in gpu])} (marked *GPU recommended* below)." if gpu else ""), ""]
    lines += ["**Interactive figures.** Explorers (sliders and menus over a figure) need a running notebook; "
              "this site shows each one's figure at its default settings.", ""]
    if labs:
        lines += [f"**Labs.** The {len(labs)} labs are exercises with automatic checks: you fill in the marked "
                  "cells and the checks say what is still wrong. This site shows the student versions; open "
                  "a lab in Colab or JupyterLab to work on it.", ""]
    lines += ["**Answers.** The worked answers to the chapters' exercises are not on this site, so that you "
              "try first; they are in the notebooks themselves.", ""]

    lines += ["## Running it", ""]
    colab_first = colab_of(first.file) if first else None
    if colab_first:
        lines += [f"**In Colab**: every page has an *Open in Colab* link under its title (try it on "
                  f"[chapter {first.id}]({colab_first})). The first code cell installs the `scaledl` package; "
                  "pick a GPU runtime to run the kernels for real. **On Kaggle** the *Open in Kaggle* link beside "
                  "it imports the same notebook (switch on *Internet* in its settings, so that the first cell "
                  "can install the package, and pick a GPU accelerator).", ""]
    folder = book.repository.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    lines += ["**On your machine** (Python 3.10+ and `make`):", "", "```sh",
              f"git clone {book.repository}", f"cd {folder}",
              "make lab    # installs everything into .venv on first use, then opens JupyterLab on the book",
              "```", ""]

    lines += ["## All chapters and labs", ""]
    for pid, title in book.parts:
        lines += [f"### Part {pid}: {title}", ""]
        for e in (e for e in book.entries if e.part == pid):
            note = " (coming)" if not e.validated else (" (GPU recommended)" if e.gpu else "")
            teaches = getattr(e, "teaches", None) if e.validated else None  # book.toml's one sentence
            lines.append(f"- [{_label(e)}]({page_of(e)}){note}" + (f": {teaches}" if teaches else ""))
        lines.append("")
    lines += [f"The [bibliography]({bibliography}) lists the works the chapters cite.", ""]
    return "\n".join(lines)
