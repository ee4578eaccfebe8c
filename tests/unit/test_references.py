"""references.bib, the book's one bibliography: parseable, one entry per key, each with what a citation needs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = re.compile(r"^@(\w+)\{([^,\s]+),(.*?)^\}", re.S | re.M)


def entries():
    text = (ROOT / "references.bib").read_text(encoding="utf-8")
    return [(kind.lower(), key, body) for kind, key, body in ENTRY.findall(text)]


def test_every_key_is_unique():
    keys = [key for _, key, _ in entries()]
    assert len(keys) >= 4
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    assert not duplicates, f"references.bib: keys used twice: {duplicates}"


def test_every_entry_has_author_title_and_year():
    for kind, key, body in entries():
        fields = {f.lower() for f in re.findall(r"^\s*(\w+)\s*=", body, re.M)}
        missing = {"title", "year"} - fields
        if not fields & {"author", "editor", "organization", "publisher", "institution"}:
            missing.add("author")
        assert not missing, f"references.bib: @{kind}{{{key}}} lacks {sorted(missing)}"


def test_braces_balance_in_every_entry():
    for kind, key, body in entries():
        assert body.count("{") == body.count("}"), f"references.bib: @{kind}{{{key}}} has unbalanced braces"
