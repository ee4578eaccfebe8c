"""One student's feedback page for ``scaledl course grade``, built by hand so that nothing in it can run.

Why not nbconvert: its HTML exporter renders a student's ``text/html`` and JavaScript outputs as they are (a
page that runs the student's script in the instructor's browser), has no size limit (a runaway ``print`` made a
52 MB page) and shows whatever the kernel printed, hidden-test source included (``print(In)``). Sanitizing its
output would mean trusting a sanitizer with every trick of HTML; here every piece of text from the notebook is
escaped and only a fixed set of tags is ever written, so there is nothing to sanitize.

What the page holds: the lab, the student, the total, a table of points per task with the judge's message
(without the task's name, which its row already shows), then the notebook as it ran. Markdown cells are
rendered by markdown-it-py (CommonMark and tables) with raw HTML switched off, so a ``<script>`` in them stays
text; links become their text and address as plain text, images a note, and no rendered tag keeps an
attribute. Code is shown as escaped text; outputs as escaped text, except a PNG that really is a PNG (checked,
re-encoded) as a ``data:`` image. Rich outputs (HTML, SVG, JavaScript, widgets) are never rendered: their
``text/plain`` stands in. An error is shown once: its traceback, which already ends with the error's name and
message (those alone when there is no traceback). The instructor's test cells (``hidden_ids``) show one line
and nothing of their source or output; any line of the hidden tests found in shown text is replaced by a note.
Each text is capped at ``output_cap_chars`` and the page at ``cap_bytes``; a Content-Security-Policy that
forbids scripts, fetches and external images is a second wall behind the escaping.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

from scaledl._args import UsageError

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
HIDDEN_LINE_NOTE = "[hidden test line removed]"
MIN_HIDDEN_LINE_CHARS = 8  # shorter lines ("else:", "x = 1") are too common to redact without noise
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_MAX_BYTES = 1_000_000  # a plot is ~50 kB; anything near this is an attempt to fill the page
MESSAGE_CAP_CHARS = 2_000  # the header must always fit, so its texts are capped well below any page cap
NAME_CAP_CHARS = 200
FOOT_RESERVE_BYTES = 1_000  # room kept for the closing notes and tags once the cells have used the budget
# Markdown rendered per page, in characters of source (a lab has under 15,000). Parsing is not linear on every
# input (a 20,000-character cell of nested brackets takes ~0.7 s): past this, markdown is shown as plain text.
MARKDOWN_PAGE_CHARS = 200_000

# CSI (colours, cursor moves), OSC (titles, hyperlinks) and two-character escapes, as IPython tracebacks use.
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
# C0 and C1 controls other than tab and newline (invalid in HTML text; \x9b is an 8-bit CSI), and surrogates:
# a student's str may hold a lone one, which UTF-8 cannot encode.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #999;padding:.3em .6em;text-align:left;
vertical-align:top}td.num{text-align:right}pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3em 0;
padding:.4em;background:#f6f6f6}.cell{margin:1em 0;border-left:3px solid #ccc;padding-left:.6em}
.source{background:#eef2f8}.stderr{background:#fdf0f0}.error{background:#fbe3e3}.note{color:#666;
font-style:italic}.cut{color:#a00}.prompt{color:#666;font-size:85%}.markdown{padding:0 .4em}
.markdown pre{background:#f0f0f0}.answer{border-left-color:#6a8}
"""
WRITTEN_NOTE = ("Written answers (the cells headed \u201cYour answer\u201d) are graded by hand by your instructor; "
                "they are not part of these points.")


@dataclass(frozen=True)
class Row:
    """One line of the points table."""

    title: str  # "Task 1.1"
    grade_id: str
    points: float
    max_points: float
    message: str  # the judge's message, or "passed"


def _text(value) -> str:
    """A notebook field as one string: nbformat stores multi-line text as a str or a list of lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "".join(v if isinstance(v, str) else str(v) for v in value)
    return "" if value is None else str(value)


def _plain(s: str) -> str:
    """Text safe to encode and to show: lone surrogates and controls replaced, ANSI codes gone."""
    s = ANSI.sub("", s).replace("\r\n", "\n").replace("\r", "\n")
    return CONTROL.sub("\ufffd", s)


def _num(x: float) -> str:
    """Points as a person writes them: 7, 2.5, 0.3 (not 0.30000000000000004)."""
    return f"{float(x):.4f}".rstrip("0").rstrip(".") if x == x else "nan"


class _Redactor:
    """Replaces every line of the hidden tests (as written, or as ``repr``/JSON quote it) by a note."""

    def __init__(self, hidden_sources):
        lines = {_plain(ln).strip() for src in hidden_sources for ln in _text(src).splitlines()}
        forms = set()
        for ln in (ln for ln in lines if len(ln) >= MIN_HIDDEN_LINE_CHARS):
            # print(In) shows a cell as the repr of one string: quotes and backslashes escaped, in either quoting
            forms |= {ln, repr(ln)[1:-1], repr(ln + "'\"")[1:-4], json.dumps(ln)[1:-1],
                      json.dumps(ln, ensure_ascii=False)[1:-1]}
        self.forms = sorted((f for f in forms if len(f) >= MIN_HIDDEN_LINE_CHARS), key=len, reverse=True)
        self.longest = len(self.forms[0]) if self.forms else 0

    def safe_cut(self, s: str, n: int) -> int:
        """``n`` moved back so that no hidden line straddles it (a cut would show a piece of the line)."""
        moved = True
        while moved and n > 0:
            moved = False
            for f in self.forms:
                i = s.find(f, max(0, n - len(f) + 1), n + len(f) - 1)
                if i != -1 and i < n < i + len(f):
                    n, moved = i, True
        return n

    def __call__(self, s: str) -> str:
        for f in self.forms:
            if f in s:
                s = s.replace(f, HIDDEN_LINE_NOTE)
        return s


def _shown(raw: str, cap: int, redact: _Redactor) -> tuple[str, int]:
    """``raw`` made plain, cut to at most ``cap`` characters and redacted: (text, characters not shown).

    Only a prefix of ``raw`` is made plain (a 52 MB output costs no more than a short one), grown while ANSI
    codes shrink it: unless it is all of ``raw``, it ends at least ``margin`` past the cap, so a hidden line
    that its end splits in two lies wholly beyond what is shown.
    """
    margin = redact.longest + 64
    n0 = cap + margin
    while True:
        part = _plain(raw[:n0])
        if n0 >= len(raw) or len(part) >= cap + margin:
            break
        n0 *= 2
    cut = redact.safe_cut(part, min(cap, len(part)))
    return redact(part[:cut]), len(part) - cut + max(0, len(raw) - n0)


def _pre(raw, cap: int, redact: _Redactor, cls: str) -> str:
    text, left = _shown(_text(raw), cap, redact)
    tail = f'\n<span class="cut">... {left} more characters not shown</span>' if left else ""
    return f'<pre class="{cls}">{html.escape(text)}{tail}</pre>'


# CommonMark with tables; raw HTML off (it stays text), no linkify, no typographer. Reference definitions
# ("[x]: url") are off too: links are not followed here anyway, and markdown-it-py 3 parses a run of them in
# quadratic time (1.7 s for 800 of them, 8 s for 1,600, on two idle cores). Every token is rewritten by _inert
# before rendering, so what reaches the page is a fixed set of attribute-less tags and escaped text.
_MARKDOWN = (MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
             .enable("table").disable("reference"))


def _text_token(content: str):
    from markdown_it.token import Token

    tok = Token("text", "", 0)
    tok.content = content
    return tok


def _inert(tokens) -> list:
    """The token stream with nothing that could act: links become their text (and address, as text),
    images a note, raw HTML text; headings shifted below the page's own; attributes dropped."""
    out, href = [], []
    for tok in tokens:
        if tok.type in ("html_inline", "html_block"):  # not produced with html off; text if ever they are
            out.append(_text_token(tok.content))
            continue
        if tok.type == "link_open":  # its text stays; the address follows it as text, unless it is the text
            href.append((str(tok.attrGet("href") or ""), len(out)))
            continue
        if tok.type == "link_close":
            target, start = href.pop() if href else ("", len(out))
            if target and "".join(x.content for x in out[start:]).strip() != target:
                out.append(_text_token(f" ({target})"))
            continue
        if tok.type == "image":
            alt = "".join(c.content for c in (tok.children or [])) or tok.content
            out.append(_text_token(f"[image{': ' + alt if alt else ''}, not shown]"))
            continue
        if tok.type in ("heading_open", "heading_close"):
            tok.tag = f"h{min(6, int(tok.tag[1:]) + 2)}"
        if tok.type == "fence":
            tok.info = ""
        tok.attrs = {"start": tok.attrs["start"]} if tok.type == "ordered_list_open" and "start" in tok.attrs else {}
        if tok.children:
            tok.children = _inert(tok.children)
        out.append(tok)
    return out


def _markdown(raw, cap: int, redact: "_Redactor") -> str:
    """A markdown cell rendered (after the cap and the redaction of hidden lines), inside a div."""
    text, left = _shown(_text(raw), cap, redact)
    body = _MARKDOWN.renderer.render(_inert(_MARKDOWN.parse(text)), _MARKDOWN.options, {})
    tail = f'<p class="cut">... {left} more characters not shown</p>' if left else ""
    return f'<div class="markdown">{body}{tail}</div>'


def _without_title(message: str, title: str) -> str:
    """The judge's message without the task's name that starts it (or any of its lines): the row names the
    task already. "Task 1.1: 3 of 7 values differ" under "Task 1.1" reads "3 of 7 values differ"."""
    title = title.strip()
    if not title:
        return message
    return re.sub(rf"^[ \t]*{re.escape(title)}[ \t]*[:,][ \t]*", "", message, flags=re.M) or message


def _png(data) -> str | None:
    """The PNG re-encoded for a data URI, or None if ``data`` is not base64 of a PNG of at most 1 MB."""
    s = "".join(_text(data).split())
    if len(s) > 4 * (PNG_MAX_BYTES // 3 + 1):
        return None
    try:
        raw = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) > PNG_MAX_BYTES or not raw.startswith(PNG_SIGNATURE):
        return None
    return base64.b64encode(raw).decode("ascii")  # canonical: only [A-Za-z0-9+/=] reaches the attribute


def _output(out, cap: int, redact: _Redactor) -> str:
    """One output as HTML; nothing the student wrote reaches the page unescaped."""
    kind = _text(out.get("output_type"))
    if kind == "stream":
        name = _text(out.get("name"))
        return _pre(out.get("text"), cap, redact, "stderr" if name == "stderr" else "stream")
    if kind == "error":
        head = f"{_text(out.get('ename'))}: {_text(out.get('evalue'))}"
        trace = out.get("traceback") or []
        body = "\n".join(_text(t) for t in trace) if isinstance(trace, (list, tuple)) else _text(trace)
        # IPython's traceback ends with "Name: message" already: shown once, not above it again
        end = _plain(body[-(4 * len(head) + 4096):]).rstrip()
        said = bool(body) and end.endswith(_plain(head).rstrip())
        return _pre(body if said else f"{head}\n{body}" if body else head, cap, redact, "error")
    if kind in ("execute_result", "display_data"):
        data = out.get("data") or {}
        data = data if isinstance(data, dict) else {}
        png = _png(data["image/png"]) if "image/png" in data else None
        if png is not None:
            return f'<img alt="a plot from this cell" src="data:image/png;base64,{png}">'
        if "text/plain" in data:
            return _pre(data["text/plain"], cap, redact, "result")
        if "text/html" in data:
            return '<p class="note">(an HTML output, not shown)</p>'
        kinds = ", ".join(_text(k) for k in data) or "empty"
        return f'<p class="note">(an output of type {html.escape(_plain(kinds)[:NAME_CAP_CHARS])}, not shown)</p>'
    return f'<p class="note">(an output of type {html.escape(_plain(kind)[:NAME_CAP_CHARS])}, not shown)</p>'


def _outputs(cell) -> list:
    """The cell's outputs, consecutive prints to one stream joined (so a cap or a hidden line spans them)."""
    merged, pieces = [], []  # pieces: the texts of the stream that merged[-1] is collecting, joined once
    for out in cell.get("outputs") or []:
        if not isinstance(out, dict):
            continue
        if (out.get("output_type") == "stream" and pieces and merged[-1].get("name") == out.get("name")):
            pieces.append(_text(out.get("text")))
            continue
        if pieces:
            merged[-1], pieces = {**merged[-1], "text": "".join(pieces)}, []
        merged.append(out)
        if out.get("output_type") == "stream":
            pieces = [_text(out.get("text"))]
    if pieces:
        merged[-1] = {**merged[-1], "text": "".join(pieces)}
    return merged


def _grade_id(cell) -> str | None:
    meta = cell.get("metadata") or {}
    nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None


def _cell_open(cell, cap: int, redact: _Redactor, hidden_ids, markdown_left: list[int]) -> tuple[str, list]:
    """A cell's opening HTML (with its source) and its outputs, still to render; closed by ``</div>``.
    ``markdown_left``: characters of markdown the page may still render (one item, decreased here)."""
    kind, gid = cell.get("cell_type"), _grade_id(cell)
    if isinstance(gid, str) and gid in hidden_ids:  # whatever its type says: the student may have changed that
        note = html.escape(_plain(gid)[:NAME_CAP_CHARS])
        return f'<div class="cell hidden"><p class="note">(the grader\'s tests for {note} ran here)</p>', []
    if kind == "markdown":
        source = _text(cell.get("source"))
        markdown_left[0] -= min(len(source), cap)
        shown = (_markdown(source, cap, redact) if markdown_left[0] >= 0 else _pre(source, cap, redact, "markdown"))
        tags = (cell.get("metadata") or {}).get("tags") if isinstance(cell.get("metadata"), dict) else None
        if isinstance(tags, list) and "answer" in tags:  # a written answer: the instructor grades it by hand
            label = '<p class="note">your written answer (graded by hand)</p>'
            return f'<div class="cell text answer">{label}{shown}', []
        return f'<div class="cell text">{shown}', []
    if kind != "code":  # a raw cell (or an unknown type) is shown as text, never as HTML
        return f'<div class="cell text">{_pre(cell.get("source"), cap, redact, "raw")}', []
    count = cell.get("execution_count")
    prompt = f"In [{count}]:" if isinstance(count, int) and not isinstance(count, bool) else "In [ ]:"
    return (f'<div class="cell code"><div class="prompt">{prompt}</div>'
            f'{_pre(cell.get("source"), cap, redact, "source")}', _outputs(cell))


def page(*, lab: str, student: str, status: str, rows: list[Row], nb=None, hidden_sources: list[str] = (),
         hidden_ids: set[str] = frozenset(), cap_bytes: int = 2_000_000, output_cap_chars: int = 20_000,
         written: bool = False, unwritten: list[str] = ()) -> str:
    """One student's feedback page: a self-contained HTML file that runs nothing and fetches nothing.

    Args:
        lab, student, status: shown in the header ("lab03: ada", "7 of 10 points; run: finished").
        rows: points per task with the judge's message.
        nb: the notebook as it ran (nbformat v4), or None for the header and table only.
        hidden_sources: the hidden tests' source; any of its lines found in shown text is replaced by a note.
        hidden_ids: grade_ids of the instructor's test cells, shown as one line each.
        cap_bytes: the most UTF-8 bytes for the page (the header and table are always there).
        output_cap_chars: the most characters shown of any one text (an output, a cell's source).
        written: the lab has written answers (graded by hand): the header says they are not in the points.
        unwritten: the written answers still as handed out ("Question 2"), said under that note, as the
            notebook's *Check before you hand in* says them (:mod:`scaledl.labs.written`).

    Raises:
        ValueError: ``cap_bytes`` or ``output_cap_chars`` is not a positive integer.
    """
    for name, value in (("cap_bytes", cap_bytes), ("output_cap_chars", output_cap_chars)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise UsageError(f"{name}={value!r}: expected a positive integer")
    redact = _Redactor(hidden_sources)

    def small(s, cap=NAME_CAP_CHARS) -> str:
        return html.escape(redact(_plain(_text(s)[:cap])))

    total, maximum = sum(r.points for r in rows), sum(r.max_points for r in rows)
    table = "".join(f'<tr><td>{small(r.title)}</td><td class="num">{_num(r.points)}</td>'
                    f'<td class="num">{_num(r.max_points)}</td><td>'
                    f'{_pre(_without_title(_text(r.message), _text(r.title)), MESSAGE_CAP_CHARS, redact, "message")}'
                    f'</td></tr>' for r in rows)
    written_note = f'<p class="note">{html.escape(WRITTEN_NOTE)}</p>\n' if written else ""
    if unwritten:
        written_note += (f'<p class="note">Not answered yet (as handed out): '
                         f'{html.escape(", ".join(str(u)[:60] for u in list(unwritten)[:40]))}</p>\n')
    head = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            f'<meta name="referrer" content="no-referrer">\n'
            f"<title>{small(lab)}: {small(student)}</title><style>{STYLE}</style></head><body>\n"
            f"<h1>{small(lab)}: {small(student)}</h1>\n"
            f'<p class="total">{_num(total)} of {_num(maximum)} points; run: {small(status, MESSAGE_CAP_CHARS)}</p>\n'
            f'{written_note}'
            f"<table><tr><th>task</th><th>points</th><th>of</th><th>message</th></tr>{table}</table>\n")
    parts, foot = [head], "</body></html>\n"
    if nb is None:
        return head + foot
    cells = [c for c in (nb.get("cells") or []) if isinstance(c, dict)]
    parts.append("<h2>Your notebook as it ran</h2>\n")
    budget = cap_bytes - len("".join(parts).encode("utf-8")) - FOOT_RESERVE_BYTES
    close, note, markdown_left = "</div>\n", "", [MARKDOWN_PAGE_CHARS]
    for k, cell in enumerate(cells):
        opening, outs = _cell_open(cell, output_cap_chars, redact, hidden_ids, markdown_left)
        size = len(opening.encode("utf-8")) + len(close)
        if size > budget:
            note = f"{len(cells) - k} of {len(cells)} cells were left out"
            break
        budget -= size
        parts.append(opening)
        for j, out in enumerate(outs):
            shown = _output(out, output_cap_chars, redact)
            if len(shown.encode("utf-8")) > budget:
                note = (f"the last {len(outs) - j} outputs of cell {k + 1} and the {len(cells) - k - 1} cells "
                        f"after it were left out")
                break
            budget -= len(shown.encode("utf-8"))
            parts.append(shown)
        parts.append(close)
        if note:
            break
    if note:
        parts.append(f'<p class="cut">(the page reached its limit of {cap_bytes} bytes: {note})</p>\n')
    return "".join(parts) + foot
