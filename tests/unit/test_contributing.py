"""CONTRIBUTING.md stands on its own: a contributor with a clone has everything it points to.

Nothing in it reaches outside the repository (no ``../`` path: the authors' own folders are not in a clone),
every relative link names a file or folder of the checkout, and every in-page link names one of its headings.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_contributing_points_nowhere_outside_the_repository():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "../" not in text, [line for line in text.splitlines() if "../" in line]
    anchors = {_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        if path:
            assert (ROOT / path).exists(), f"CONTRIBUTING.md links to {target}, which the repository lacks"
        else:
            assert anchor in anchors, f"CONTRIBUTING.md links to #{anchor}, none of its headings"
    assert "## House style" in text and "## On a lent GPU" in text  # what it used to send readers elsewhere for
