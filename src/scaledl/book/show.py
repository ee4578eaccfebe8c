"""Show the package's real source in a chapter, so the book never carries a drifting copy of its code."""

from __future__ import annotations

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
