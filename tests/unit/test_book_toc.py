"""book.toml: the real file loads and is complete; malformed files give errors that say what is wrong."""

import pytest

from scaledl.book import load
from scaledl.book.toc import STATUSES

PLANNED_CHAPTERS = [f"{i:02d}" for i in range(20)]
PLANNED_LABS = [f"lab{i:02d}" for i in range(1, 8)]


def test_real_book_has_the_whole_planned_table_of_contents():
    book = load()
    assert [p[0] for p in book.parts] == ["I", "II", "III", "IV", "V", "VI"]
    assert [e.id for e in book.entries if e.kind == "chapter"] == PLANNED_CHAPTERS
    assert sorted(e.id for e in book.entries if e.kind == "lab") == PLANNED_LABS
    for e in book.entries:
        assert e.status in STATUSES
        assert e.sim_budget_s > 0
        assert all(s in {"000", "001", "002", "003"} for s in e.seeds), e
        if e.kind == "lab":
            assert e.solution.startswith("labs/solutions/") and e.file.startswith("labs/")
    assert book.repository.startswith("https://")


def test_every_seed_is_covered_by_some_entry():
    book = load()
    covered = {s for e in book.entries for s in e.seeds}
    assert covered == {"000", "001", "002", "003"}


@pytest.mark.parametrize("name, expected", [
    ("00", "00"), ("0", "00"), ("1", "01"), ("01", "01"), ("lab02", "lab02"), ("lab2", "lab02"),
    ("01_hardware_paces_deep_learning", "01"), ("chapters/02_scaling_laws.ipynb", "02"),
    ("labs/solutions/lab01_roofline_your_device.ipynb", "lab01"),
])
def test_resolve_accepts_ids_stems_and_paths(name, expected):
    assert load().resolve(name).id == expected


def test_resolve_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown notebook '99': expected a chapter or lab id .*00, 01"):
        load().resolve("99")


def test_unknown_status_is_rejected(write_book):
    root = write_book(write_book.chapter("00", "chapters/00.ipynb", status="finished"))
    with pytest.raises(ValueError, match=r"chapter 00 status = 'finished'; expected one of"):
        load(root)


def test_duplicate_file_is_rejected(write_book):
    root = write_book(write_book.chapter("00", "chapters/00.ipynb"), write_book.chapter("01", "chapters/00.ipynb"))
    with pytest.raises(ValueError, match=r"'chapters/00.ipynb' is used by both chapter 00 and chapter 01"):
        load(root)


def test_lab_without_solution_is_rejected(write_book):
    root = write_book(("lab", {"id": "lab01", "file": "labs/lab01.ipynb", "title": "x", "status": "planned"}))
    with pytest.raises(ValueError, match=r"lab lab01 needs a 'solution' notebook path"):
        load(root)


def test_bad_budget_is_rejected(write_book):
    root = write_book(write_book.chapter("00", "chapters/00.ipynb", sim_budget_s=-5))
    with pytest.raises(ValueError, match=r"sim_budget_s = -5; expected seconds > 0"):
        load(root)


def test_missing_book_toml_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("SCALEDL_BOOK_ROOT", str(tmp_path))
    from scaledl.book.toc import find_root

    with pytest.raises(FileNotFoundError, match="holds no book.toml"):
        find_root()
