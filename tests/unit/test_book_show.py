"""scaledl.book.show: a chapter displays the package's real source, and the diff between two numbered variants."""

import pytest

from scaledl.book.show import diff, show_diff, show_source, source


def v1(x):
    """v1: the first."""
    return x + 1


def v2(x):
    """v2: what changed: doubled."""
    return 2 * (x + 1)


def test_diff_names_both_and_shows_only_what_changed():
    text = diff(v1, v2, context=0).splitlines()
    assert text[:2] == ["--- v1", "+++ v2"]
    assert '-    """v1: the first."""' in text and "+    return 2 * (x + 1)" in text
    assert not any(line.startswith((" ", "-    return x + 1 ")) and "def" in line for line in text[2:])


def test_show_diff_is_a_diff_block_and_show_source_a_python_one():
    assert show_diff(v1, v2).data.startswith("```diff\n--- v1\n+++ v2\n")
    assert show_source(v1).data == f"```python\n{source(v1).rstrip()}\n```"
    with pytest.raises(TypeError, match="show_source needs a function"):
        diff(1, v2)
