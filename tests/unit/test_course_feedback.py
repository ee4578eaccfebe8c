"""scaledl.course.feedback: the page shows a student's notebook and runs, fetches and leaks nothing."""

import base64
import html
import json
import os
import shutil
import struct
import subprocess
import time
import zlib
from html.parser import HTMLParser

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from scaledl.course.feedback import CSP, HIDDEN_LINE_NOTE, MARKDOWN_PAGE_CHARS, WRITTEN_NOTE, Row, page

SCRIPT = "<script>alert(1)</script>"
ONERROR = "<img src=x onerror=alert(1)>"
ROWS = [Row("Task 1.1", "task_1_1", 2.5, 3, "passed"),
        Row("Task 1.2", "task_1_2", 4.5, 7, "Task 1.2: 3 of 3001 values differ; first at [17]")]
HIDDEN_SOURCE = ('from scaledl.course import produce\n'
                 'produce.run("lab03", "task_1_1", globals())\n'
                 "    assert secret_reference(x) == 'expected'  # hidden\n"
                 "x = 1\n")


def png_bytes(width=2, height=1) -> bytes:
    """A real PNG, built from its chunks (greyscale, 8 bits)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(range(width)) for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


class Tags(HTMLParser):
    """Every tag with its attributes, and the text between tags, as a browser's tokenizer sees them."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.text = [], []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


# What rendered markdown adds (markdown-it-py, raw HTML off): formatting tags with no attribute but a list's start.
MARKDOWN_TAGS = {"h3", "h4", "h5", "h6", "em", "strong", "code", "ul", "ol", "li", "blockquote", "hr", "br",
                 "thead", "tbody"}


def assert_inert(text):
    """No script, no event handler, no image but a checked PNG, no external link: the page's contract."""
    assert "<script" not in text.lower()
    tags = Tags(text).tags
    assert {t for t, _ in tags} <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "table",
                                    "tr", "th", "td", "pre", "span", "div", "img"} | MARKDOWN_TAGS
    for tag, attrs in tags:
        if tag in MARKDOWN_TAGS:
            assert set(attrs) <= ({"start"} if tag == "ol" else set()), (tag, attrs)
        assert not [a for a in attrs if a.lower().startswith("on")], (tag, attrs)
        if "src" in attrs:
            assert attrs["src"].startswith("data:image/png;base64,"), (tag, attrs)
        for a in ("src", "href", "action", "srcset", "style"):
            value = (attrs.get(a) or "").strip().lower()
            assert not value.startswith(("http:", "https:", "//", "javascript:")), (tag, attrs)
            assert a not in ("href", "action", "srcset", "style") or a not in attrs, (tag, attrs)
    metas = [a for t, a in tags if t == "meta" and "http-equiv" in a]
    assert metas == [{"http-equiv": "Content-Security-Policy", "content": CSP}]


def render(cells, **kw):
    kw.setdefault("lab", "lab03")
    kw.setdefault("student", "ada")
    kw.setdefault("status", "finished")
    kw.setdefault("rows", ROWS)
    return page(nb=new_notebook(cells=cells), **kw)


def hidden_cell(grade_id="task_1_1"):
    cell = new_code_cell(HIDDEN_SOURCE, execution_count=3,
                         metadata={"nbgrader": {"grade": True, "grade_id": grade_id, "points": 3, "solution": False}})
    cell.outputs = [new_output("stream", name="stdout", text="Task 1.1: results handed to the grader\nSECRET-OUT\n"),
                    new_output("error", ename="AssertionError", evalue="SECRET-EVALUE", traceback=["SECRET-TB"])]
    return cell


def hostile_cells(payload):
    """The payload everywhere a student controls text: a stream, HTML, JS, markdown, source, a traceback."""
    code = new_code_cell(f"print({payload!r})  # {payload}", execution_count=1)
    code.outputs = [
        new_output("stream", name="stdout", text=payload),
        new_output("display_data", data={"text/html": payload}),
        new_output("display_data", data={"text/html": payload, "text/plain": f"plain {payload}"}),
        new_output("execute_result", execution_count=1, data={"application/javascript": payload}),
        new_output("display_data", data={"image/svg+xml": f"<svg onload=alert(1)>{payload}</svg>"}),
        new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": payload},
                                         "text/plain": "a widget"}),
        new_output("error", ename=payload, evalue=payload, traceback=[f"\x1b[0;31m{payload}\x1b[0m", payload]),
    ]
    return [new_markdown_cell(f"# Notes {payload}\n[link](http://evil.example/x) ![x](https://evil.example/p.png)"),
            new_raw_cell(payload), code]


# ---- escaping: nothing the student wrote becomes markup --------------------------------------------------------

@pytest.mark.parametrize("payload", [SCRIPT, ONERROR, "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
                                     '"><iframe src=javascript:alert(1)>', "<a href='http://evil.example'>x</a>",
                                     "<meta http-equiv=refresh content='0;url=http://evil.example'>"])
def test_hostile_text_everywhere_is_escaped(payload):
    text = render(hostile_cells(payload), student=payload, lab=payload, status=payload,
                  rows=[Row(payload, "task_1_1", 1, 2, payload)])
    assert_inert(text)
    assert payload in "".join(Tags(text).text)  # shown to the instructor, as text


def test_rich_outputs_are_never_rendered_and_text_plain_stands_in():
    text = render(hostile_cells(SCRIPT))
    shown = "".join(Tags(text).text)
    assert "(an HTML output, not shown)" in shown
    assert f"plain {SCRIPT}" in shown
    assert "(an output of type application/javascript, not shown)" in shown
    assert "(an output of type image/svg+xml, not shown)" in shown
    assert "a widget" in shown and "model_id" not in shown
    assert "<svg" not in text.lower() and "<iframe" not in text.lower()


def test_page_declares_csp_and_charset_first_and_parses():
    text = render(hostile_cells(SCRIPT))
    head = text[:text.index("</head>")]
    assert head.index('<meta charset="utf-8">') < 200
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in head
    tags = [t for t, _ in Tags(text).tags]
    assert tags[:3] == ["html", "head", "meta"] and "body" in tags


# ---- header and table ---------------------------------------------------------------------------------------

def test_header_totals_and_points_are_formatted():
    text = page(lab="lab03", student="ada", status="finished", rows=ROWS)
    shown = "".join(Tags(text).text)
    assert "lab03: ada" in shown
    assert "7 of 10 points; run: finished" in shown
    assert "2.5" in shown and "4.5" in shown and "3 of 3001 values differ" in shown
    assert "0.3 of 0.3 points" in "".join(Tags(page(lab="l", student="s", status="ok", rows=[
        Row("a", "a", 0.1, 0.1, ""), Row("b", "b", 0.2, 0.2, "")])).text)
    assert "Your notebook" not in shown  # nb=None: header and table only
    assert_inert(text)


@pytest.mark.parametrize("name,value", [("cap_bytes", 0), ("cap_bytes", -5), ("output_cap_chars", 0),
                                        ("output_cap_chars", 2.5), ("cap_bytes", True)])
def test_bad_caps_are_refused(name, value):
    with pytest.raises(ValueError, match=f"{name}={value!r}: expected a positive integer"):
        page(lab="l", student="s", status="ok", rows=ROWS, **{name: value})


# ---- hidden tests -------------------------------------------------------------------------------------------

def test_hidden_cells_show_neither_source_nor_output():
    student = new_code_cell("def f(x):\n    return x", execution_count=2)
    text = render([student, hidden_cell()], hidden_sources=[HIDDEN_SOURCE], hidden_ids={"task_1_1"})
    shown = "".join(Tags(text).text)
    assert "(the grader's tests for task_1_1 ran here)" in shown
    for secret in ("SECRET-OUT", "SECRET-EVALUE", "SECRET-TB", "produce.run", "secret_reference", "results handed"):
        assert secret not in text
    assert "def f(x):" in shown


def test_a_test_cell_not_in_hidden_ids_is_shown():
    text = render([hidden_cell("task_9_9")], hidden_ids={"task_1_1"})
    assert "SECRET-OUT" in text  # the switch really is hidden_ids: without it the cell shows


def test_print_In_does_not_leak_hidden_lines():
    """The kernel's In list, printed by a later cell, holds the hidden cell's source as a repr."""
    In = ["", "def f(x):\n    return x", HIDDEN_SOURCE]
    leak = new_code_cell("print(In); print(In[2]); print(json.dumps(In))", execution_count=4)
    leak.outputs = [new_output("stream", name="stdout", text=f"{In}\n{In[2]}\n{json.dumps(In)}\n"),
                    new_output("execute_result", execution_count=4, data={"text/plain": repr(In)}),
                    new_output("error", ename="NameError", evalue="x", traceback=[
                        "\x1b[0;32m----> 2\x1b[0m \x1b[43mproduce\x1b[39m.run(\"lab03\", \"task_1_1\", globals())"])]
    own = new_code_cell('# I copied it: produce.run("lab03", "task_1_1", globals())', execution_count=5)
    md = new_markdown_cell("    assert secret_reference(x) == 'expected'  # hidden")
    text = render([leak, own, md], hidden_sources=[HIDDEN_SOURCE], hidden_ids={"task_1_1"})
    assert "produce.run" not in text and "secret_reference" not in text
    assert "from scaledl.course import produce" not in text
    assert text.count(HIDDEN_LINE_NOTE) >= 9
    assert "def f(x):" in text  # the student's own cell, also in In, is kept
    assert "x = 1" in text  # a hidden line under 8 characters is too common to redact


def test_without_hidden_sources_the_same_output_would_leak():
    leak = new_code_cell("print(In)")
    leak.outputs = [new_output("stream", name="stdout", text=str(["", HIDDEN_SOURCE]))]
    assert "secret_reference" in render([leak])  # so the redaction test above is not passing vacuously


def test_a_hidden_line_cut_by_the_output_cap_shows_no_piece_of_it():
    line = "assert secret_reference(x) == 'expected'"
    for at in range(55, 105):
        cell = new_code_cell("print(filler)")
        cell.outputs = [new_output("stream", name="stdout", text="." * at + line + "." * 500)]
        text = render([cell], hidden_sources=[line], output_cap_chars=100)
        assert "assert se" not in text, at
        assert "more characters not shown" in text


def test_ansi_codes_do_not_hide_a_hidden_line_or_shift_the_cut():
    line = "assert secret_reference(x) == 'expected'"
    colour = "\x1b[38;5;241m\x1b[0m" * 200  # thousands of characters that vanish when stripped
    cell = new_code_cell("boom()")
    cell.outputs = [new_output("error", ename="E", evalue="v", traceback=[colour + "\x1b[1m" + line + "\x1b[0m" * 50])]
    text = render([cell], hidden_sources=[line], output_cap_chars=60)
    assert "secret" not in text and "\x1b" not in text and HIDDEN_LINE_NOTE in text
    for at in range(0, 60, 7):  # the line near the cap, after codes that shrink 3000 characters to nothing
        cell.outputs = [new_output("stream", name="stdout", text=colour + "." * at + line + "." * 5000)]
        text = render([cell], hidden_sources=[line], output_cap_chars=60)
        assert "assert se" not in text and "\x1b" not in text, at


# ---- outputs ------------------------------------------------------------------------------------------------

def test_traceback_is_shown_with_ansi_codes_stripped():
    cell = new_code_cell("1/0", execution_count=1)
    cell.outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[
        "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
        "\x1b[0;31mZeroDivisionError\x1b[0m   Traceback (most recent call last)",
        "Cell \x1b[0;32mIn[1], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[38;5;241m1\x1b[39m/\x1b[38;5;241m0\x1b[39m",
        "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \x9b31m"])]
    text = render([cell])
    shown = "".join(Tags(text).text)
    assert "ZeroDivisionError: division by zero" in shown
    assert "----> 1 1/0" in shown
    assert "\x1b" not in text and "[0;31m" not in text and "38;5;241m" not in text and "\x9b" not in text
    assert "evil.example" not in text


def test_a_real_png_is_shown_as_a_data_uri_and_a_fake_is_not():
    good = base64.b64encode(png_bytes()).decode()
    wrapped = "\n".join(good[i:i + 20] for i in range(0, len(good), 20)) + "\n"  # as notebooks store it
    fakes = [base64.b64encode(b"GIF89a" + b"\x00" * 30).decode(),  # base64, but not a PNG
             "iVBORw0KGgo\" onerror=\"alert(1)",  # a PNG signature, then an attribute break-out
             base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 1_000_001).decode(),  # over 1 MB
             "not base64 at all!"]
    raw = png_bytes(width=3)
    raw += b"\x00" * ((1 - len(raw)) % 3)  # bytes after IEND: still a PNG to the check
    assert len(raw) % 3 == 1  # so its base64 ends "==" and its last letter carries 4 unused bits
    canonical = base64.b64encode(raw).decode()
    loose = canonical[:-3] + chr(ord(canonical[-3]) + 1) + "=="  # decodes the same, spelled differently
    assert loose != canonical and base64.b64decode(loose, validate=True) == raw
    cell = new_code_cell("plot()")
    cell.outputs = [new_output("display_data", data={"image/png": wrapped, "text/plain": "<Figure good>"}),
                    new_output("display_data", data={"image/png": loose})]
    cell.outputs += [new_output("display_data", data={"image/png": f, "text/plain": f"<Figure fake {k}>"})
                     for k, f in enumerate(fakes)]
    text = render([cell], cap_bytes=5_000_000)
    assert_inert(text)
    imgs = [a["src"] for t, a in Tags(text).tags if t == "img"]
    assert imgs == [f"data:image/png;base64,{good}", f"data:image/png;base64,{canonical}"]  # re-encoded
    shown = "".join(Tags(text).text)
    assert "<Figure good>" not in shown  # the image stands for itself
    assert all(f"<Figure fake {k}>" in shown for k in range(len(fakes)))


def test_consecutive_prints_are_joined_into_one_text():
    cell = new_code_cell("for i in range(3): print(i)")
    cell.outputs = [new_output("stream", name="stdout", text=f"{i}\n") for i in range(3)]
    cell.outputs.append(new_output("stream", name="stderr", text="warning\n"))
    text = render([cell])
    assert "0\n1\n2\n</pre>" in text and '<pre class="stderr">warning' in text


def test_lone_surrogates_and_control_characters_do_not_crash():
    cell = new_code_cell("print('\\ud800')", execution_count=1)
    cell.outputs = [new_output("stream", name="stdout", text="a\ud800b\udfffc\x00d\x07e\x0cf\x9bg\r\nh"),
                    new_output("execute_result", execution_count=1, data={"text/plain": ["line1\n", "line2\ud83d"]})]
    text = render([cell], student="bad\ud800name", rows=[Row("T\udc00", "t", 1, 1, "m\x00sg")])
    text.encode("utf-8")  # would raise on a surrogate
    assert "a\ufffdb\ufffdc\ufffdd\ufffde\ufffdf\ufffdg\nh" in text
    assert "line1\nline2" in text and "bad\ufffdname" in text
    assert_inert(text)


def test_odd_notebook_fields_do_not_crash():
    nb = nbformat.from_dict({"cells": [
        {"cell_type": "code", "source": ["a = 1\n", "b = 2"], "metadata": {"nbgrader": {"grade_id": ["x"]}},
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["x\n", "y\n"]},
                     {"output_type": "display_data", "data": "not a dict"},
                     {"output_type": "error", "ename": None, "evalue": 3, "traceback": "one string"},
                     {"output_type": "weird<script>"}, "not an output"]},
        {"cell_type": "markdown", "source": None, "metadata": []}, "not a cell"]})
    text = page(lab="l", student="s", status="ok", rows=[], nb=nb, hidden_ids={"x"})
    assert "a = 1\nb = 2" in text and "x\ny\n" in text and "one string" in text
    assert "(an output of type weird&lt;script&gt;, not shown)" in text
    assert "0 of 0 points" in text
    assert_inert(text)


# ---- a page for a submission with errors: markdown rendered, each error once, no task prefix ------------------

IPYTHON_TRACEBACK = [  # as IPython 8 stores an AssertionError raised by a check in a lab
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mAssertionError\x1b[0m                            Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[5], line 2\x1b[0m\n\x1b[0;32m----> 2\x1b[0m check(\x1b[38;5;124m\"\x1b[39m"
    "\x1b[38;5;124mTask 1.1\x1b[39m\"\x1b[39m, x, e4m3_round(x), spec)\n",
    "\x1b[0;31mAssertionError\x1b[0m: Task 1.1, in range: 8 of 18725 values differ"]


def errors_page(**kw):
    """A lab03-like page: the judge's messages, the lab's markdown, a failing check, a student's answer."""
    rows = [Row("Task 1.1", "task_1_1", 0, 3, "Task 1.1: 126 of 3443 values differ; at (1,): x = -6.25: Yours "
                "-6.5, Spec -6.0"),
            Row("Task 1.2", "task_1_2", 0, 2, "Task 1.2: no result (the test cell raised NotImplementedError: "
                "Task 1.2)"),
            Row("Task 2.1", "task_2_1", 3, 3, "passed")]
    check = new_code_cell('check("Task 1.1", x, e4m3_round(x), spec)', execution_count=5)
    check.outputs = [new_output("stream", name="stdout", text="  x = 1.0625   Yours: 1.125   Spec: 1.0\n"),
                     new_output("error", ename="AssertionError",
                                evalue="Task 1.1, in range: 8 of 18725 values differ", traceback=IPYTHON_TRACEBACK)]
    stub = new_code_cell("def e4m3_encode(x):\n    raise NotImplementedError('Task 1.2')", execution_count=6)
    stub.outputs = [new_output("error", ename="NotImplementedError", evalue="Task 1.2", traceback=[])]
    cells = [new_markdown_cell("## Task 1.1: round to E4M3\n\nWrite `e4m3_round(x)`, *ties to even*, **bit for bit**."
                               "\n\n1. `np.frexp(|x|)`\n2. clamp at -6\n\n"
                               "| format | bias |\n| --- | ---: |\n| E4M3 | 7 |"),
             check, stub,
             new_markdown_cell(f"My answer: *rint* rounds ties to even. {SCRIPT} {ONERROR}\n\n"
                               "[see](http://evil.example/x) ![plot](https://evil.example/p.png)",
                               metadata={"tags": ["answer"]})]
    return render(cells, rows=rows, status="OK", written=True, **kw)


def test_a_page_with_errors_renders_markdown_shows_each_error_once_and_no_task_prefix():
    text = errors_page()
    assert_inert(text)
    # markdown rendered: headings (below the page's own), code, emphasis, lists, tables
    assert "<h4>Task 1.1: round to E4M3</h4>" in text
    assert "<code>e4m3_round(x)</code>" in text and "<em>ties to even</em>" in text
    assert "<strong>bit for bit</strong>" in text and "<li><code>np.frexp(|x|)</code></li>" in text
    assert "<th>format</th>" in text and "<td>7</td>" in text  # no style="text-align:right"
    assert "## Task" not in text and "*ties to even*" not in text
    # each error once: the traceback ends with the error's line, which is not repeated above it
    shown = "".join(Tags(text).text)
    assert shown.count("8 of 18725 values differ") == 1
    assert shown.count("NotImplementedError: Task 1.2") == 2  # the stub's error once, and the judge's message
    assert "Traceback (most recent call last)" in shown
    # the judge's messages sit in their task's row, without "Task 1.1:" in front
    table = text[text.index("<table>"):text.index("</table>")]
    assert "<pre class=\"message\">126 of 3443 values differ; at (1,)" in table
    assert "<pre class=\"message\">no result (the test cell raised NotImplementedError: Task 1.2)" in table
    assert "Task 1.1:" not in table and "Task 1.2:" not in table
    # the student's markdown: their HTML is text, their link is text, their image is not loaded
    assert SCRIPT not in text and html.escape(SCRIPT) in text and html.escape(ONERROR) in text
    assert SCRIPT in shown and "see (http://evil.example/x)" in shown and "[image: plot, not shown]" in shown
    assert "<a " not in text and "evil.example/p.png" not in text
    # written answers: marked in the notebook, and said to be graded by hand
    assert "your written answer (graded by hand)" in shown and WRITTEN_NOTE in shown


def test_an_error_is_shown_once():
    cell = new_code_cell('check("Task 1.1", x, e4m3_round(x), spec)', execution_count=5)
    cell.outputs = [new_output("error", ename="AssertionError", evalue="Task 1.1, in range: 8 of 18725 values differ",
                               traceback=IPYTHON_TRACEBACK)]
    bare = new_code_cell("raise KeyError('k')", execution_count=6)
    bare.outputs = [new_output("error", ename="KeyError", evalue="'k'", traceback=[])]
    shown = "".join(Tags(render([cell, bare])).text)
    assert shown.count("8 of 18725 values differ") == 1 and shown.count("KeyError: 'k'") == 1


def test_a_traceback_that_does_not_end_with_the_error_keeps_its_head():
    cell = new_code_cell("boom()", execution_count=1)
    cell.outputs = [new_output("error", ename="ValueError", evalue="bad size", traceback=["frame one", "frame two"])]
    shown = "".join(Tags(render([cell])).text)
    assert "ValueError: bad size\nframe one\nframe two" in shown


@pytest.mark.parametrize("message, shown", [
    ("Task 1.1: 3 of 7 values differ", "3 of 7 values differ"),
    ("Task 1.1, in range: 3 of 7 values differ", "in range: 3 of 7 values differ"),
    ("Task 1.1: first\nTask 1.1: second", "first\nsecond"),
    ("Task 1.10: another task's message", "Task 1.10: another task's message"),
    ("see Task 1.1: inside a sentence", "see Task 1.1: inside a sentence"),
    ("Task 1.1:", "Task 1.1:"),  # nothing would be left
])
def test_the_task_name_is_taken_off_its_own_messages_only(message, shown):
    text = page(lab="lab03", student="ada", status="OK", rows=[Row("Task 1.1", "task_1_1", 0, 3, message)])
    assert f'<pre class="message">{html.escape(shown)}</pre>' in text


def test_a_markdown_cell_cannot_stall_the_grader():
    """markdown-it-py 3 parses a run of reference definitions in quadratic time (1.7 s for 800 of them, 8 s for
    1,600, on two idle cores): the feedback's renderer has that rule off, so they stay text; and past
    MARKDOWN_PAGE_CHARS a page shows markdown as plain text. Checked by what the renderer is and does, not by
    a clock, so no machine's speed decides the outcome."""
    from scaledl.course import feedback as F

    assert "reference" not in F._MARKDOWN.get_active_rules()["block"]
    text = render([new_markdown_cell("[x]: http://evil.example\n" * 800), new_markdown_cell("![[a](" * 3_000)])
    assert "[x]: http://evil.example" in text  # shown as text, not parsed into a definition
    assert_inert(text)
    cells = [new_markdown_cell("*a*" + "x" * 9_000) for _ in range(MARKDOWN_PAGE_CHARS // 9_000 + 5)]
    text = render(cells, cap_bytes=10_000_000)
    assert 0 < text.count("<em>a</em>") < len(cells) and '<pre class="markdown">*a*' in text


# ---- size limits --------------------------------------------------------------------------------------------

def test_a_52_MB_output_is_cut_and_the_page_says_so():
    cell = new_code_cell("while True: print('spam')")
    cell.outputs = [new_output("stream", name="stdout", text="spam\n" * 10_400_000)]  # 52 MB
    after = new_code_cell("print('after')")
    after.outputs = [new_output("stream", name="stdout", text="after\n")]
    text = render([cell, after])
    assert len(text.encode("utf-8")) < 2_000_000 and len(text) < 40_000
    assert f"... {52_000_000 - 20_000} more characters not shown" in text
    assert "after" in text  # the cap is per output; later cells still show


def test_a_print_loop_of_many_small_chunks_is_joined_in_linear_time():
    outputs = [{"output_type": "stream", "name": "stdout", "text": f"{i}\n"} for i in range(300_000)]
    nb = {"cells": [{"cell_type": "code", "source": "for i in range(N): print(i)", "outputs": outputs}]}
    start = time.perf_counter()  # plain dicts: nbformat's constructors validate, and take a minute here
    text = page(lab="lab03", student="ada", status="finished", rows=ROWS, nb=nb)
    assert time.perf_counter() - start < 30  # 0.3 s on two idle cores; joining pairwise took minutes
    assert len(text.encode("utf-8")) < 2_000_000 and "0\n1\n2\n" in text and "more characters not shown" in text


def test_a_long_source_is_capped_too():
    text = render([new_code_cell("x = 1\n" * 100_000)], output_cap_chars=1_000)
    assert "more characters not shown" in text and len(text) < 20_000


@pytest.mark.parametrize("cap", [50_000, 200_000, 2_000_000])
def test_many_outputs_stay_under_the_page_cap(cap):
    cells = []
    for k in range(300):
        cell = new_code_cell(f"show({k})", execution_count=k)
        cell.outputs = [new_output("display_data", data={"text/plain": f"<&> {k} {j} " + "é" * 300})
                        for j in range(20)]
        cells.append(cell)
    text = render(cells, cap_bytes=cap)
    assert len(text.encode("utf-8")) <= cap
    assert "the page reached its limit" in text and "were left out" in text
    assert text.endswith("</body></html>\n")
    assert_inert(text)


def test_many_cells_stop_with_a_count_of_those_left_out():
    cells = [new_markdown_cell("m" * 5_000) for _ in range(100)]
    text = render(cells, cap_bytes=60_000)
    assert len(text.encode("utf-8")) <= 60_000
    shown = text.count('<div class="cell text">')
    assert f"{100 - shown} of 100 cells were left out" in text


def test_the_header_always_fits_even_when_nothing_else_does():
    text = render([new_code_cell("x")], cap_bytes=100)
    assert "7 of 10 points" in text and "1 of 1 cells were left out" in text


def test_a_small_notebook_is_shown_whole():
    cells = [new_markdown_cell("# Lab 3"), new_code_cell("x = 1", execution_count=1)]
    text = render(cells)
    assert "the page reached its limit" not in text and "In [1]:" in text and "<h3>Lab 3</h3>" in text


# ---- a real browser, when there is one ----------------------------------------------------------------------

CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "", shutil.which("chromium-browser")
                             or "") if p and os.path.exists(p)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium installed (/usr/bin/chromium)")
def test_headless_chromium_runs_nothing(tmp_path):
    """The DOM after load: had a script run it would have written a marker into the body."""
    payload = "<script>document.body.setAttribute('data-pwned','1')</script><img src=x onerror=\"document.body" \
              ".setAttribute('data-pwned','1')\">"
    f = tmp_path / "page.html"
    f.write_text(render(hostile_cells(payload)), encoding="utf-8")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", f.as_uri()],
                         capture_output=True, text=True, timeout=60).stdout
    assert "<body" in dom and "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]
