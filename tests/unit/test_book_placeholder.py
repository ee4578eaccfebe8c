"""While book.toml's repository is the YOUR-ORG placeholder, `scaledl book check` warns (it does not fail: the
book has no public home yet) and names the one command that sets the real one; with a real URL it is quiet."""

import subprocess
import sys
from pathlib import Path

from scaledl.book import load
from scaledl.book.check import PLACEHOLDER_ORG, placeholder_warnings

ROOT = Path(__file__).resolve().parents[2]


def test_the_placeholder_is_named_with_the_command_that_replaces_it(write_book):
    root = write_book()
    text = (root / "book.toml").read_text()
    (root / "book.toml").write_text(text.replace("https://example.org/r",
                                                 "https://github.com/YOUR-ORG/scaling-deep-learning"))
    (warning,) = placeholder_warnings(load(root))
    assert warning.startswith("warning:") and PLACEHOLDER_ORG in warning
    assert "scaledl book set-repository https://github.com/ORG/REPO" in warning
    (root / "book.toml").write_text(text.replace("https://example.org/r", "https://github.com/my-course/sdl"))
    assert placeholder_warnings(load(root)) == []


def test_book_check_prints_the_warning_without_failing_for_it():
    book = load(ROOT)
    out = subprocess.run([sys.executable, "-m", "scaledl", "book", "check"], cwd=ROOT, capture_output=True,
                         text=True)
    if PLACEHOLDER_ORG in book.repository:
        assert "warning: book.toml's repository is the placeholder" in out.stdout
    assert "warning" not in out.stdout.split("book check:")[-1]     # the summary counts problems only
