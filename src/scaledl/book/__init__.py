"""The book as software: ``book.toml`` (toc), static checks (check), execution (execute), a static HTML copy
(html), and the pytest plugin that reports how long each notebook took to validate."""

from scaledl.book.show import show_source
from scaledl.book.toc import Book, Entry, find_root, load

__all__ = ["Book", "Entry", "find_root", "load", "show_source"]
