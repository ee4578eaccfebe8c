"""A static HTML copy of the book (``make book``): each executed notebook through nbconvert, plus an index
page built from book.toml. Works offline; widgets are drawn from the state stored at execution time."""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from scaledl.book.toc import Book


def build(book: Book, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter(template_name="lab")
    written, rows = [], []
    for pid, ptitle in book.parts:
        rows.append(f"<h2>Part {html.escape(pid)}: {html.escape(ptitle)}</h2><ul>")
        for e in (e for e in book.entries if e.part == pid):
            label = f"{html.escape(e.id)} {html.escape(e.title)}"
            if not e.validated or not book.path(e.executed_file).is_file():
                rows.append(f"<li>{label} <em>(planned)</em></li>")
                continue
            nb = nbformat.read(book.path(e.executed_file), as_version=4)
            body, _ = exporter.from_notebook_node(nb)
            target = out / (Path(e.executed_file).stem + ".html")
            target.write_text(body, encoding="utf-8")
            written.append(target)
            gpu = " (GPU recommended)" if e.gpu else ""
            rows.append(f'<li><a href="{target.name}">{label}</a>{gpu}'
                        f'{" <em>(draft)</em>" if e.status == "draft" else ""}</li>')
        rows.append("</ul>")
    index = out / "index.html"
    index.write_text(
        "<!doctype html><meta charset='utf-8'><title>{t}</title>"
        "<body style='font-family:sans-serif;max-width:50em;margin:auto'>"
        "<h1>{t}</h1><p>{authors}. {lic}</p>{rows}</body>".format(
            t=html.escape(book.title), authors=html.escape(", ".join(book.authors)),
            lic=html.escape(book.license), rows="\n".join(rows)),
        encoding="utf-8")
    return [index, *written]
