"""The reader's journey: opening and "where next" cells made from book.toml, folded answers, kept in step by
`scaledl book check` and written idempotently by `scaledl book journey --write`."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from scaledl.book import journey, load, nbfile
from scaledl.book.check import check_book
from scaledl.book.student_copy import student_version

CH1, CH2, CH3 = "chapters/01_one.ipynb", "chapters/02_two.ipynb", "chapters/03_three.ipynb"
LAB, LAB_SOL = "labs/lab01_x.ipynb", "labs/solutions/lab01_x.ipynb"


def _journey(teaches, assumes=(), cpu=6, **more):
    return {"teaches": teaches, "assumes": list(assumes), "cpu_seconds": cpu, **more}


@pytest.fixture
def book_root(write_book):
    """Three chapters and a lab that practises chapter 02, in one part (so the lab comes after chapter 03 in
    reading order), all written and executed, journey fields in book.toml."""

    def make(two_title="Two", lab_extra=None, ch1_extra=None):
        root = write_book(
            write_book.chapter("01", CH1, status="done", title="One", **_journey("Ones.", **(ch1_extra or {}))),
            write_book.chapter("02", CH2, status="done", title=two_title, **_journey("Twos.", ["01"], cpu=170)),
            write_book.lab("lab01", LAB, LAB_SOL, status="done", title="Lab 1: X",
                           **_journey("Labs.", ["02"], practises=["02"], **(lab_extra or {}))),
            write_book.chapter("03", CH3, status="done", title="Three", **_journey("Threes.", ["01", "02"])))
        for rel, title in ((CH1, "# 01 One"), (CH2, "# 02 Two"), (CH3, "# 03 Three"), (LAB_SOL, "# Lab 1: X")):
            nbfile.write(executed(title, solution=rel == LAB_SOL), root / rel)
        nbfile.write(student_version(nbformat.read(root / LAB_SOL, as_version=4)), root / LAB)
        return root

    return make


def executed(title, solution=False):
    nb = new_notebook(metadata={"kernelspec": nbfile.KERNELSPEC})
    nb.cells.append(new_markdown_cell(title))
    code = "x = 1\n### BEGIN SOLUTION\nx = 2\n### END SOLUTION\nprint(x)" if solution else "print(2)"
    cell = new_code_cell(code, execution_count=1)
    cell.outputs = [new_output("stream", name="stdout", text="2\n")]
    nb.cells.append(cell)
    nb.cells.append(new_markdown_cell("## Exercises\n\n**Exercise 1.** Why 2?"))
    nb.cells.append(new_markdown_cell("**Answer.** Because.", metadata={"tags": ["answer-key"]}))
    return nb


def write_all(root):
    book = load(root)
    return [f for e in book.entries for f in journey.write(book, e)]


def test_unapplied_book_reports_every_cell_and_the_fix(book_root):
    problems = check_book(load(book_root()))
    for rel in (CH1, CH2, CH3, LAB_SOL):
        assert f"{rel}: no 'book-intro' cell after the title (cell 1); run `scaledl book journey --write" in \
            "\n".join(problems)
        assert any(p.startswith(f"{rel}: no 'book-nav' cell as the last cell") for p in problems)
    assert f"{CH2}: cell 3 is tagged 'answer-key' but not folded in <details>; run `scaledl book journey " \
           f"--write 02`" in problems
    assert not any(p.startswith(LAB_SOL) and "folded" in p for p in problems)  # labs' answer keys stay as they are


def test_write_makes_the_book_clean_and_a_second_run_changes_no_byte(book_root):
    root = book_root()
    assert sorted(write_all(root)) == sorted([CH1, CH2, CH3, LAB_SOL, LAB])
    assert check_book(load(root)) == []
    before = {rel: (root / rel).read_bytes() for rel in (CH1, CH2, CH3, LAB_SOL, LAB)}
    assert write_all(root) == []
    assert {rel: (root / rel).read_bytes() for rel in before} == before


def test_generated_cells_sit_after_the_title_and_at_the_end_and_code_is_untouched(book_root):
    root = book_root()
    original = nbformat.read(root / CH2, as_version=4)
    write_all(root)
    nb = nbformat.read(root / CH2, as_version=4)
    assert [c.metadata.get("tags", []) for c in nb.cells] == [[], ["book-intro"], [], [], ["answer-key"],
                                                               ["book-nav"]]
    assert nb.cells[2] == original.cells[1]  # the code cell, its outputs and execution count
    assert nb.cells[1].id == "book-intro-02" and nb.cells[-1].id == "book-nav-02"


def test_links_are_relative_to_the_notebook_a_reader_opens(book_root):
    root = book_root()
    book = load(root)
    two, lab = book.resolve("02"), book.resolve("lab01")
    nav = journey.nav_source(book, two)
    assert "* Previous chapter: [01 One](01_one.ipynb)" in nav
    assert "* Next chapter: [03 Three](03_three.ipynb)" in nav
    assert "* The lab that practises this chapter: [Lab 1: X](../labs/lab01_x.ipynb)" in nav
    assert "Next in reading order" not in nav  # that is chapter 03
    lab_nav = journey.nav_source(book, lab)
    assert "* Back to the chapter this lab practises: [02 Two](../chapters/02_two.ipynb)" in lab_nav
    assert "* This is the book's last lab: you have reached the end of the book." in lab_nav
    last = journey.nav_source(book, book.resolve("03"))
    assert "This is the book's last chapter." in last and "practises" not in last
    assert "* Next in reading order: [Lab 1: X](../labs/lab01_x.ipynb)" in last
    intro = journey.intro_source(book, book.resolve("03"))
    assert "**What you will learn.** Threes." in intro
    assert "Read first: [01 One](01_one.ipynb), [02 Two](02_two.ipynb)." in intro
    assert "**Time to run.** Under 10 s on a 2-core CPU with the simulator backend (the whole notebook, " \
           "measured); on a GPU its time" in intro
    assert "**Time to run.** About 3 min on a 2-core CPU" in journey.intro_source(book, two)  # 170 s
    assert "on a GPU its time is not measured yet (`scaledl validate --only 03`" in intro


def test_generated_cells_do_not_make_two_labs_look_alike(book_root):
    # The grader identifies a submission by its cell ids and markdown first lines: none of them is shared.
    from scaledl.course.integrity import fingerprint

    root = book_root()
    write_all(root)
    marks = [fingerprint(nbformat.read(root / rel, as_version=4)) for rel in (CH1, CH2, CH3, LAB_SOL)]
    generated = [{m for m in f if "book-" in m or "Where next" in m or "What you will" in m} for f in marks]
    assert all(len(g) == 4 for g in generated)  # two ids, two first lines per notebook
    assert not set.intersection(*generated[:2]) and not generated[2] & generated[3]


def test_first_chapter_explains_the_two_paths(book_root):
    book = load(book_root())
    nav = journey.nav_source(book, book.resolve("01"))
    assert "Previous chapter" not in nav and "* Next chapter: [02 Two](02_two.ipynb)" in nav
    assert "**Read it in order.**" in nav and "**Jump to a part.**" in nav
    assert "  * Part I, P: start at [02 Two](02_two.ipynb)" in nav


def test_measured_gpu_time_is_shown_rounded_like_the_cpu_time(book_root):
    book = load(book_root(ch1_extra={"gpu_minutes": 0.8}))
    assert "; about 50 s on a GPU." in journey.intro_source(book, book.resolve("01"))


@pytest.mark.parametrize("seconds, words", [
    (0, "under 10 s"), (5.7, "under 10 s"), (9.99, "under 10 s"),
    (10, "about 10 s"), (14.9, "about 10 s"), (15, "about 20 s"), (44, "about 40 s"), (54.9, "about 50 s"),
    (55, "about 1 min"), (74, "about 1 min"), (75, "about 1.5 min"), (100, "about 1.5 min"),
    (135, "about 2.5 min"), (299, "about 5 min"), (584, "about 9.5 min"), (585, "about 10 min"),
    (700, "about 12 min"),
])
def test_run_times_are_rounded_as_a_machine_dependent_time_deserves(seconds, words):
    assert journey.duration(seconds) == words


def test_a_run_time_must_be_a_measured_time():
    for bad in (-1, float("nan"), float("inf"), "6", True):
        with pytest.raises(ValueError, match="expected a measured time >= 0"):
            journey.duration(bad)


def test_renaming_a_chapter_makes_the_neighbours_nav_stale(book_root, tmp_path):
    root = book_root()
    write_all(root)
    toml = (root / "book.toml").read_text()
    (root / "book.toml").write_text(toml.replace('title = "Two"', 'title = "Deux"'))
    problems = check_book(load(root))
    # 01's and 03's nav link to 02, the lab's goes back to it, 03's intro assumes it, 02's intro is unchanged
    assert f"{CH1}: cell 5 ('book-nav') is out of date with book.toml; run `scaledl book journey --write 01`" \
        in problems
    assert any(p.startswith(f"{CH3}: cell 1 ('book-intro') is out of date") for p in problems)
    assert any(p.startswith(f"{LAB_SOL}: cell") and "'book-nav'" in p for p in problems)
    assert not any(p.startswith(f"{CH2}: cell 1") for p in problems)
    write_all(root)
    assert check_book(load(root)) == []
    assert "[02 Deux](02_two.ipynb)" in nbformat.read(root / CH1, as_version=4).cells[-1].source


def test_a_cell_added_after_the_nav_is_caught_and_the_nav_moved_back_to_the_end(book_root):
    root = book_root()
    write_all(root)
    nb = nbformat.read(root / CH1, as_version=4)
    nb.cells.append(new_markdown_cell("A late note."))
    nbfile.write(nb, root / CH1)
    assert f"{CH1}: cell 5 is tagged 'book-nav' but belongs as the last cell, once; run `scaledl book journey " \
           f"--write 01`" in check_book(load(root))
    journey.write(load(root), load(root).resolve("01"))
    nb = nbformat.read(root / CH1, as_version=4)
    assert nb.cells[-2].source == "A late note." and nb.cells[-1].metadata.tags == ["book-nav"]
    assert check_book(load(root)) == []


def test_unfolded_answer_and_missing_intro_are_caught(book_root):
    root = book_root()
    write_all(root)
    nb = nbformat.read(root / CH2, as_version=4)
    del nb.cells[1]  # the intro
    nb.cells[3].source = "**Answer.** Unfolded again."
    nbfile.write(nb, root / CH2)
    problems = check_book(load(root))
    assert f"{CH2}: no 'book-intro' cell after the title (cell 1); run `scaledl book journey --write 02`" in problems
    assert f"{CH2}: cell 3 is tagged 'answer-key' but not folded in <details>; run `scaledl book journey " \
           f"--write 02`" in problems


def test_fold_keeps_the_markdown_renderable_and_is_idempotent():
    folded = journey.fold("*Answer.* The ring costs `2 (p-1) alpha`.\n\n* one\n* two")
    assert folded == ("<details>\n<summary>Answer</summary>\n\nThe ring costs `2 (p-1) alpha`.\n\n* one\n* two"
                      "\n\n</details>")
    assert journey.fold(folded) == folded
    assert journey.fold("**Answers.**\n(1) a") == "<details>\n<summary>Answer</summary>\n\n(1) a\n\n</details>"
    assert journey.fold("No label.").endswith("\n\nNo label.\n\n</details>")


def test_student_copy_of_a_lab_keeps_the_opening_and_nav_cells(book_root):
    root = book_root()
    write_all(root)
    solution = nbformat.read(root / LAB_SOL, as_version=4)
    student = nbformat.read(root / LAB, as_version=4)
    assert student.cells[1].source == solution.cells[1].source and "book-intro" in student.cells[1].metadata.tags
    assert student.cells[-1].metadata.tags == ["book-nav"]
    assert "[02 Two](../chapters/02_two.ipynb)" in student.cells[-1].source
    assert "BEGIN SOLUTION" not in nbformat.writes(student)


def test_a_lab_copy_with_student_work_is_not_overwritten(book_root):
    root = book_root()
    mine = nbformat.read(root / LAB, as_version=4)
    mine.cells[1].execution_count = 7  # the student ran a cell
    nbformat.write(mine, root / LAB)
    book = load(root)
    assert journey.write(book, book.resolve("lab01")) == [LAB_SOL]
    assert nbformat.read(root / LAB, as_version=4).cells[1].execution_count == 7


def test_book_without_journey_fields_is_not_checked(write_book):
    root = write_book(write_book.chapter("01", CH1, status="done"))
    nbfile.write(executed("# 01 T"), root / CH1)
    assert check_book(load(root)) == []


@pytest.mark.parametrize("fields, message", [
    ({"teaches": "no full stop"}, r"teaches = 'no full stop'; expected one sentence, ending with '\.'"),
    ({"teaches": "X.", "cpu_seconds": 0}, r"cpu_seconds = 0; expected seconds > 0 \(measured on the simulator"),
    ({"teaches": "X.", "cpu_seconds": "6 s"}, r"cpu_seconds = '6 s'; expected seconds > 0"),
    ({"teaches": "X.", "cpu_minutes": 1}, r"chapter 01 has 'cpu_minutes', which 'cpu_seconds' replaced: give the "
                                          r"seconds `scaledl book execute 01` measured"),
    ({"teaches": "X.", "cpu_seconds": 6, "gpu_minutes": 0}, r"gpu_minutes = 0; expected minutes > 0"),
    ({"teaches": "X.", "cpu_seconds": 6, "assumes": ["99"]}, r"assumes '99', which is no entry's id"),
    ({"teaches": "X.", "cpu_seconds": 6, "assumes": ["02"]}, r"assumes '02', which comes at or after it"),
    ({"teaches": "X.", "cpu_seconds": 6, "assumes": "00"}, r"assumes = '00'; expected a list of entry ids"),
    ({"teaches": "X.", "cpu_seconds": 6, "practises": ["00"]}, r"only a lab may have"),
    ({"teaches": "X."}, r"chapter 01 has no 'cpu_seconds'"),
])
def test_bad_journey_fields_are_clear_errors(write_book, fields, message):
    root = write_book(write_book.chapter("01", CH1, status="done", **fields),
                      write_book.chapter("02", CH2, status="done", teaches="Y.", cpu_seconds=6))
    with pytest.raises(ValueError, match=message):
        load(root)


def test_every_written_entry_needs_the_fields_once_one_has_them(write_book):
    root = write_book(write_book.chapter("01", CH1, status="done", teaches="X.", cpu_seconds=6),
                      write_book.chapter("02", CH2, status="done"),
                      write_book.chapter("03", CH3, status="planned"))
    with pytest.raises(ValueError, match=r"chapter 02 has no 'teaches'"):
        load(root)


def test_code_cells_that_only_compute_answers_are_tagged_and_checked():
    nb = new_notebook(cells=[new_markdown_cell("# 01 T"), new_code_cell("x = 1"),
                             new_code_cell("# Numbers for the answers below.\ny = 2"),
                             new_markdown_cell("## Exercises\n\n**Exercise 1.** Why?"), new_code_cell("print(x)"),
                             new_markdown_cell("Answer", metadata={"tags": ["answer-key"]})])
    assert journey.answer_code_cells(nb) == [2, 4]   # not the lesson's own code cell 1
    book = load()
    chapter = next(e for e in book.entries if e.kind == "chapter" and e.validated)
    found = journey.problems(nb, book, chapter, name="t.ipynb")
    assert any("code cell 4 computes exercise answers" in line for line in found)
    updated = journey.update(nb, book, chapter)
    tagged = [i for i, c in enumerate(updated.cells) if "answer-code" in c.metadata.get("tags", [])]
    # folded, each with a first line saying so; the code itself is untouched
    assert [updated.cells[i].source for i in tagged] == [
        "# Numbers for the answers below (folded so the answers stay hidden until you open them).\ny = 2",
        "# Numbers for the answer below (folded so the answer stays hidden until you open it).\nprint(x)"]
    assert not any("answer-code" in line for line in journey.problems(updated, book, chapter, name="t.ipynb"))
    assert journey.update(updated, book, chapter) == updated  # idempotent


FOLDED = {"collapsed": True, "jupyter": {"outputs_hidden": True, "source_hidden": True}}


def _with_answer_code(nb, source, after_answer=False):
    """``nb`` (an executed chapter of :func:`executed`) with a code cell tagged answer-code that prints the
    answer's number, before its answer-key cell (or after it, as chapters 01 and 02 compute theirs last)."""
    cell = new_code_cell(source, execution_count=2, metadata={"tags": ["answer-code"]})
    cell.outputs = [new_output("stream", name="stdout", text="2\n")]
    nb.cells.insert(len(nb.cells) - 1 if after_answer else 4, cell)  # before the nav, or the answer-key cell
    return nb


def test_an_answer_code_cell_that_is_not_folded_fails_the_check_and_write_folds_it(book_root):
    root = book_root()
    write_all(root)
    nb = nbformat.read(root / CH2, as_version=4)
    nbfile.write(_with_answer_code(nb, "print(2)"), root / CH2)  # cell 4, shown in full in JupyterLab
    problems = check_book(load(root))
    assert problems == [f"{CH2}: code cell 4 is tagged 'answer-code' but not folded: JupyterLab would show its "
                        f"code and the numbers of the answers (expected metadata jupyter.source_hidden, "
                        f"jupyter.outputs_hidden and collapsed true, and the first line '# Numbers for the answer "
                        f"below (folded so the answer stays hidden until you open it).'); run `scaledl book "
                        f"journey --write 02`"]
    assert write_all(root) == [CH2]
    assert check_book(load(root)) == []
    cell = nbformat.read(root / CH2, as_version=4).cells[4]
    assert {k: cell.metadata[k] for k in ("collapsed", "jupyter")} == FOLDED
    assert cell.metadata.tags == ["answer-code"] and cell.execution_count == 2 and cell.outputs[0].text == "2\n"
    assert cell.source == ("# Numbers for the answer below (folded so the answer stays hidden until you open "
                           "it).\nprint(2)")
    # half folded (the outputs still showing) is not folded
    nb = nbformat.read(root / CH2, as_version=4)
    nb.cells[4].metadata.pop("collapsed")
    nb.cells[4].metadata.jupyter.pop("outputs_hidden")
    nbformat.write(nb, root / CH2)
    assert any(p.startswith(f"{CH2}: code cell 4 is tagged 'answer-code' but not folded")
               for p in check_book(load(root)))


def test_an_answer_code_cell_after_the_answers_says_they_are_above(book_root):
    root = book_root()
    write_all(root)
    nb = nbformat.read(root / CH1, as_version=4)
    nbfile.write(_with_answer_code(nb, "# Numbers for the answers below.\nprint(2)", after_answer=True),
                 root / CH1)
    write_all(root)
    cells = nbformat.read(root / CH1, as_version=4).cells
    assert cells[-2].source == ("# Numbers for the answers above (folded so the answers stay hidden until you "
                                "open them).\nprint(2)")  # the old first line replaced, not kept below the note
    assert cells[-1].metadata.tags == ["book-nav"] and check_book(load(root)) == []


def test_every_answer_code_cell_of_the_real_book_is_folded():
    book = load()
    found, folded = [], 0
    for e in (e for e in book.entries if e.kind == "chapter" and e.validated):
        cells = nbformat.read(book.path(e.file), as_version=4).cells
        for i, cell in enumerate(cells):
            if "answer-code" in cell.metadata.get("tags", []):
                meta = {k: cell.metadata.get(k) for k in ("collapsed", "jupyter")}
                first = cell.source.split("\n", 1)[0]
                if meta != FOLDED or not first.startswith("# Numbers for the answer") or "(folded so" not in first:
                    found.append(f"{e.file}: cell {i}: {meta}, {first!r}")
                folded += 1
    assert folded >= 13 and found == [], "\n".join(found)


def test_an_exercises_section_runs_from_its_heading_on_any_line_to_the_next_heading_as_high():
    from scaledl.book.answers import answer_code_cells, exercise_sections, headings

    md, code = new_markdown_cell, new_code_cell
    nb = new_notebook(cells=[
        md("# 15 T"), code("lesson = 1"),
        md("## Summary\n\n- a point\n\n## Exercises\n\n1. Why?"), code("print(1)"),            # chapter 15's cell
        md("Answer", metadata={"tags": ["answer-key"]}),
        md("```python\n# not a heading\n```\n### Computations behind the answers"), code("print(2)"),
        md("2. And?\n\n## Where next"), code("after = 3"),                                   # closed by a ## heading
        md("### Questions"), code("print(4)"), md("## More"), code("print(5)")])
    assert headings(nb.cells[5].source) == [(3, "Computations behind the answers")]
    assert exercise_sections(nb) == [False, False, False, True, True, True, True, True, False, False, True, True,
                                     False]
    assert answer_code_cells(nb) == [3, 6, 10]


def test_the_site_and_the_students_copy_leave_out_the_code_of_a_labs_exercises():
    from scaledl.book.site import for_the_site

    nb = new_notebook(metadata={"kernelspec": nbfile.KERNELSPEC}, cells=[
        new_markdown_cell("# Lab 1: X"), new_code_cell("task = 1"),
        new_markdown_cell("**Question 1.** Why?"), new_markdown_cell("Because.", metadata={"tags": ["answer-key"]}),
        new_code_cell("after_the_answer = 2"),              # a lab's task code may follow an answer: kept
        new_markdown_cell("## Questions\n\n1. How many?"), new_code_cell("print('the number: 3')"),
        new_markdown_cell("## Check before you hand in"), new_code_cell("check_before_hand_in()")])
    for copy in (student_version(nb), for_the_site(nb, links="")):
        sources = [c.source for c in copy.cells if c.cell_type == "code"]
        assert sources == ["task = 1", "after_the_answer = 2", "check_before_hand_in()"], sources
