"""Show the package's real source in a chapter, so the book never carries a drifting copy of its code."""

from __future__ import annotations

import difflib
import inspect
import textwrap


def source(obj) -> str:
    """The source text of a function, class or module, dedented."""
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (TypeError, OSError) as err:
        raise TypeError(f"show_source needs a function, class or module defined in a file; got {obj!r} ({err})")


def show_source(obj):
    """Display ``obj``'s source as a highlighted code block (an IPython Markdown object)."""
    from IPython.display import Markdown

    return Markdown(f"```python\n{source(obj).rstrip()}\n```")


def diff(old, new, context: int = 3) -> str:
    """A unified diff from ``old``'s source to ``new``'s (functions, classes or modules): what one numbered
    variant changed from the one before it. ``context``: unchanged lines shown around each change."""
    def name(obj):
        return getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))

    lines = difflib.unified_diff(source(old).splitlines(), source(new).splitlines(), name(old), name(new),
                                 lineterm="", n=context)
    return "\n".join(lines)


def show_diff(old, new, context: int = 3):
    """Display :func:`diff` as a highlighted diff block (an IPython Markdown object)."""
    from IPython.display import Markdown

    return Markdown(f"```diff\n{diff(old, new, context)}\n```")
