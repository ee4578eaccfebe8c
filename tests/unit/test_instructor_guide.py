"""docs/instructor-guide.md stays true to book.toml: both course plans cover every chapter and lab that is
not planned (and name nothing that does not exist), and its GPU table is book.toml's. Under a second."""

import re
from pathlib import Path

import pytest

from scaledl.book import load
from scaledl.course.guide import GUIDE, gpu_table, section, update_guide

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
TEXT = (ROOT / GUIDE).read_text()


def plan(weeks: int) -> dict[int, tuple[list[str], list[str]]]:
    """week -> (chapter ids, lab ids) from the guide's table under '### {weeks} weeks'."""
    body = TEXT.split(f"### {weeks} weeks", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].isdigit():
            rows[int(cells[0])] = (re.findall(r"\b\d\d\b", cells[1]), re.findall(r"\blab\d\d\b", cells[2]))
    return rows


@pytest.mark.parametrize("weeks", [10, 14])
def test_plan_covers_every_written_chapter_and_lab_once(weeks):
    rows = plan(weeks)
    assert sorted(rows) == list(range(1, weeks + 1))
    named = [x for chapters, labs in rows.values() for x in chapters + labs]
    assert len(named) == len(set(named)), "an entry is planned twice"
    ids = {e.id for e in BOOK.entries}
    assert set(named) <= ids, f"not in book.toml: {sorted(set(named) - ids)}"
    written = {e.id for e in BOOK.entries if e.validated}
    assert written - set(named) == set(), f"missing from the {weeks}-week plan"


def test_gpu_table_is_book_toml_s():
    assert section(TEXT) == gpu_table(BOOK), f"run `python -m scaledl.course.guide` to refresh {GUIDE}"
    gpu = [e for e in BOOK.entries if e.validated and e.gpu]
    assert gpu and all(f"| {e.title} | recommended |" in TEXT for e in gpu)


def test_update_guide_rewrites_a_stale_table(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / GUIDE).write_text("# G\n<!-- gpu table: start -->\nold\n<!-- gpu table: end -->\nafter\n")
    book = type(BOOK)(**{**BOOK.__dict__, "root": tmp_path})
    assert update_guide(book) and not update_guide(book)
    text = (tmp_path / GUIDE).read_text()
    assert "old" not in text and text.endswith("<!-- gpu table: end -->\nafter\n") and gpu_table(BOOK) in text
    (tmp_path / GUIDE).write_text("no markers")
    with pytest.raises(ValueError, match="expected the markers"):
        update_guide(book)


def test_guide_describes_release_grade_hosts_and_answer_keys():
    for needle in ("scaledl course release", "--zip", "--force", "git init", "scaledl course grade SUBMISSIONS/ "
                   "--lab lab03", "Colab", "Kaggle", "JupyterHub", "labs/solutions/", "answer-key",
                   "scaledl book set-repository"):
        assert needle in TEXT, needle
    assert (ROOT / "INSTRUCTORS.md").read_text().count(GUIDE) == 2
