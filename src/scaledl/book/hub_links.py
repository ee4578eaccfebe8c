"""Links that open the book's notebooks on a JupyterHub: ``scaledl book hub-links HUB_URL``.

An instructor whose university runs a JupyterHub with nbgitpuller (the JupyterHub project's "one-way
synchronization of a git repository" server extension) hands students one link per notebook. Clicking it, the
hub logs the student in, nbgitpuller clones the course repository into their home folder on the first visit
and merges the instructor's new commits on later ones, never overwriting what the student changed (its
"automatic merging"), and then opens the notebook.

A link follows nbgitpuller's documented format, the one its link generator (``generateRegularUrl`` in its
documentation's ``link.js``) writes::

    HUB/hub/user-redirect/git-pull?repo=REPO&urlpath=lab/tree/TARGET/PATH&branch=BRANCH&targetpath=TARGET

``user-redirect`` is JupyterHub's: it sends the student to their own server, where nbgitpuller's handler at
``git-pull`` reads the query. This module adds ``targetpath`` explicitly, the folder the clone goes into, so
that the folder ``urlpath`` opens is the one the clone made whatever the repository URL's spelling: without
it nbgitpuller names the folder after the URL's last part, ``.git`` included, while its link generator strips
``.git`` when it writes ``urlpath`` (so a ``.../REPO.git`` link would clone into ``REPO.git`` and open ``REPO``).
The query is encoded as the link generator's ``URLSearchParams`` does (form encoding, a space as ``+``).

Students get the student copies: a lab's link opens ``labs/...``, never its solution. The repository the links
name is the one students clone, so it should be the students' copy (``scaledl course release OUT``, pushed to a
repository of its own: the same paths, no ``labs/solutions/`` and no tests), not the instructor's repository.

>>> hub_link("https://hub.example.edu", "https://github.com/ORG/scaling-deep-learning", "chapters/01_x.ipynb")
'https://hub.example.edu/hub/user-redirect/git-pull?repo=https%3A%2F%2Fgithub.com%2FORG%2Fscaling-deep-learning&urlpath=lab%2Ftree%2Fscaling-deep-learning%2Fchapters%2F01_x.ipynb&branch=main&targetpath=scaling-deep-learning'
"""

from __future__ import annotations

import re
from urllib.parse import quote_plus, urlencode, urlsplit

__all__ = ["APPS", "HUB_PATH", "target_folder", "hub_link", "hub_links", "links_markdown"]

HUB_PATH = "hub/user-redirect/git-pull"
# The interface a link opens (nbgitpuller's link generator's "JupyterLab" and "Classic Notebook" choices)
APPS = {"lab": "lab/tree/", "classic": "tree/"}
_FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def target_folder(repository: str) -> str:
    """The folder a student's clone goes into: the repository URL's last part without ``.git``.

    >>> target_folder("https://github.com/ORG/scaling-deep-learning.git/")
    'scaling-deep-learning'
    """
    last = str(repository).rstrip("/").rsplit("/", 1)[-1]
    if last.endswith(".git"):
        last = last[:-4]
    if not _FOLDER.fullmatch(last):
        raise ValueError(f"repository={repository!r}: its last part {last!r} is not a folder name a clone can "
                         "take (letters, digits, '.', '_', '-')")
    return last


def _hub(hub_url: str) -> str:
    if not isinstance(hub_url, str):
        raise TypeError(f"hub_url must be a str such as 'https://hub.example.edu', got {hub_url!r}")
    parts = urlsplit(hub_url.strip())
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"hub_url={hub_url!r}: expected the JupyterHub's address, such as "
                         "'https://hub.example.edu' (http or https, no query)")
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    if path.endswith("/hub/"):  # someone pasted the hub's own page: the prefix is above it
        path = path[:-len("hub/")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def hub_link(hub_url: str, repository: str, path: str, *, branch: str = "main", app: str = "lab") -> str:
    """The nbgitpuller link on ``hub_url`` that clones ``repository`` (``branch``) and opens ``path`` (relative
    to the repository's root) in ``app`` (``"lab"`` or ``"classic"``)."""
    if app not in APPS:
        raise ValueError(f"app={app!r} is not an interface a link can open; expected one of {sorted(APPS)}")
    if not isinstance(branch, str) or not branch.strip() or any(c.isspace() for c in branch):
        raise ValueError(f"branch={branch!r}: expected a branch name such as 'main'")
    if not isinstance(path, str) or not path or path.startswith("/") or ".." in path.split("/"):
        raise ValueError(f"path={path!r}: expected a file relative to the repository's root")
    if not isinstance(repository, str) or not urlsplit(repository).scheme:
        raise ValueError(f"repository={repository!r}: expected the URL git clones, such as "
                         "'https://github.com/ORG/REPO'")
    folder = target_folder(repository)
    query = urlencode([("repo", repository), ("urlpath", f"{APPS[app]}{folder}/{path}"), ("branch", branch),
                       ("targetpath", folder)], quote_via=quote_plus)
    return f"{_hub(hub_url)}{HUB_PATH}?{query}"


def hub_links(book, hub_url: str, *, repository: str | None = None, branch: str = "main",
              app: str = "lab") -> list[tuple[str, str, str]]:
    """``(id, title, link)`` for every chapter and lab of ``book`` a student can open (not the planned ones),
    in the book's order; labs link their student copy. ``repository`` defaults to book.toml's."""
    repo = repository if repository is not None else book.repository
    return [(e.id, e.title, hub_link(hub_url, repo, e.file, branch=branch, app=app))
            for e in book.entries if e.validated]


def links_markdown(book, hub_url: str, **kwargs) -> str:
    """:func:`hub_links` as a markdown list an instructor can paste into a course page."""
    lines = [f"Open each notebook on {_hub(hub_url)} (the first link clones the course into your home folder; "
             "later ones bring in new material and keep your changes):", ""]
    lines += [f"- [{title}]({link})" for _, title, link in hub_links(book, hub_url, **kwargs)]
    return "\n".join(lines) + "\n"
