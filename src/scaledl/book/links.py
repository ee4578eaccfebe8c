"""Relative links between the book's notebooks, made to resolve on the static book.

A notebook links others as a reader opens them in JupyterLab: ``[14 All-reduce](14_all_reduce.ipynb)`` from
``chapters/``, ``[Lab 05 ...](../labs/lab05_ring_all_reduce.ipynb)`` back from a chapter. On the site MyST
turns a local link into a link to a document only when its path, relative to the page, names a staged
source file (``.ipynb`` or ``.md``); otherwise it is left as a dead link and Sphinx warns. :func:`relink`
rewrites each local markdown link of a page against the book's site layout (:func:`site_targets`):

* a chapter's or lab's notebook links to its staged page (a planned entry's page is ``coming/ID.md``);
* a lab's *solution* links to the lab's student page: no link to a solution notebook reaches the site;
* another file of the repository (README.md, CONTRIBUTING.md, a module) links to it on GitHub, or, when
  book.toml names no GitHub repository, becomes plain text;
* any other path under a ``solutions/`` folder becomes plain text.

A link that names no file of the book is left as written (Sphinx then warns about it: it is broken in
JupyterLab too).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)(?P<title>\s+\"[^\"\n]*\")?\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, mailto:, data:, ...


def site_targets(book, page_of) -> dict[str, str]:
    """Repository path -> staged path (both relative to the book's root) of every notebook and guide.

    ``page_of(entry)`` is the staged file of an entry (:func:`scaledl.book.site.staged_file`).
    """
    targets = {}
    for e in book.entries:
        targets[e.file] = page_of(e)
        if e.solution:
            targets[e.solution] = page_of(e)  # the student page, never the solution
    docs = book.path("docs")
    for md in sorted(docs.glob("*.md")) if docs.is_dir() else []:
        targets[f"docs/{md.name}"] = f"docs/{md.name}"
    return targets


def _in_solutions(path: str) -> bool:
    return "solutions" in Path(path).parts


def relink(source: str, *, page: str, bases: list[str], targets: dict[str, str], root: Path,
           blob_url: str | None) -> str:
    """``source`` (markdown) with its local links rewritten for the staged ``page``.

    Args:
        page: the staged path of the page holding ``source``, relative to the site's root.
        bases: folders (relative to the book's root) the links were written from, tried in order: a lab page
            made from its solution may hold links written from ``labs/`` or from ``labs/solutions/``.
        targets: :func:`site_targets`.
        root: the book's root, where other linked files are looked up.
        blob_url: ``https://github.com/ORG/REPO/blob/BRANCH`` for files the site does not hold, or None.

    >>> t = {"chapters/14_x.ipynb": "chapters/14_x.ipynb", "labs/solutions/lab05_y.ipynb": "labs/lab05_y.ipynb"}
    >>> relink("[14](14_x.ipynb#ring) and [Lab 5](../labs/solutions/lab05_y.ipynb)", page="chapters/13.ipynb",
    ...        bases=["chapters"], targets=t, root=Path("/nonexistent"), blob_url=None)
    '[14](14_x.ipynb#ring) and [Lab 5](../labs/lab05_y.ipynb)'
    """
    here = posixpath.dirname(page)

    def replace(m: re.Match) -> str:
        target = m.group("target")
        if target.startswith("#") or _SCHEME.match(target) or target.startswith("/"):
            return m.group(0)
        path, hash_, anchor = target.partition("#")
        resolved = [posixpath.normpath(posixpath.join(base, path)) for base in bases]
        for repo_path in resolved:
            if repo_path in targets:
                new = posixpath.relpath(targets[repo_path], here or ".") + hash_ + anchor
                return f"[{m.group('text')}]({new}{m.group('title') or ''})"
        for repo_path in resolved:
            if not repo_path.startswith("..") and (root / repo_path).exists() and not _in_solutions(repo_path):
                if blob_url:
                    return f"[{m.group('text')}]({blob_url}/{repo_path}{hash_}{anchor})"
                return m.group("text")
        if any(_in_solutions(p) for p in resolved + [path]):
            return m.group("text")  # a solution the book does not list: never linked from the site
        return m.group(0)

    return _LINK.sub(replace, source)
