"""The static book (``make book``): Jupyter Book 1.x over a source tree staged from book.toml.

:func:`build` stages the sources next to the output folder (:func:`scaledl.book.site.stage`: student labs
only, no answer keys, toc and config generated), lets Jupyter Book write Sphinx's ``conf.py`` from the
staged ``_config.yml``, and runs Sphinx's HTML builder into ``out``. Nothing is executed: every page shows
the outputs stored in its notebook. The site works offline: MathJax is bundled (sphinx-mathjax-offline) and
no widget JavaScript is loaded; :func:`remote_assets` lists any script, stylesheet or image that a page
would still fetch from the network, and :func:`build` refuses a site that has one.

Jupyter Book 1.x rather than 2: version 2 builds HTML only with network access.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from scaledl.book.site import stage
from scaledl.book.toc import Book

# <script src="http...">, <link href="http..."> (stylesheets, fonts, icons) and <img src="http...">: what a
# browser fetches on its own. Plain <a href="https://..."> links (Colab, the repository) are only followed
# when clicked.
_REMOTE = re.compile(r"<(script|link|img|iframe)\b[^>]*?\b(?:src|href)=[\"'](?:https?:)?//[^\"']+", re.I)


WARNINGS_FILE = "_sphinx_warnings.txt"  # in the staging folder


def remote_assets(site: Path) -> list[str]:
    """``page: tag`` for each script, stylesheet, image or frame a page of ``site`` loads from the network."""
    found = []
    for page in sorted(Path(site).rglob("*.html")):
        for m in _REMOTE.finditer(page.read_text(encoding="utf-8", errors="replace")):
            found.append(f"{page.relative_to(site)}: {m.group(0)[:160]}")
    return found


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}")


def _without_thebe(conf: Path) -> None:
    """Drop sphinx-thebe from the generated ``conf.py``: Jupyter Book always loads it, it would fetch thebe
    from unpkg.com on use, and its inline script is written twice per page (a console error). The site has
    no live kernel; "Open in Colab" is its way to run a page."""
    text = conf.read_text(encoding="utf-8")
    if "'sphinx_thebe', " not in text:
        raise RuntimeError(f"{conf}: expected Jupyter Book to list 'sphinx_thebe' in extensions")
    conf.write_text(text.replace("'sphinx_thebe', ", ""), encoding="utf-8")


def build(book: Book, out: Path, *, staging: Path | None = None, jobs: int = 1) -> list[Path]:
    """Build the static book into ``out`` (replaced); returns its HTML pages, ``index.html`` first.

    Args:
        staging: where the source tree is staged; default ``out``'s sibling ``site-src``.
        jobs: Sphinx worker processes (``-j``).

    Sphinx's warnings are kept as ``build.warnings`` (a list of lines) and in ``WARNINGS_FILE`` in the staging
    folder.

    Raises:
        ImportError: Jupyter Book is not installed (the ``[book]`` extra).
        RuntimeError: Jupyter Book or Sphinx failed (with the end of its log), or a page loads something from
            the network.
    """
    try:
        import jupyter_book  # noqa: F401
    except ImportError:
        raise ImportError("the static book needs Jupyter Book 1.x: pip install -e '.[book]'") from None
    out = Path(out).resolve()
    src = stage(book, Path(staging) if staging else out.parent / "site-src")
    bindir = Path(sys.executable).parent
    jb = shutil.which("jupyter-book", path=str(bindir)) or shutil.which("jupyter-book")
    if jb is None:
        raise ImportError("no jupyter-book command next to this Python: pip install -e '.[book]'")
    _run([jb, "config", "sphinx", str(src)], "jupyter-book config sphinx")
    _without_thebe(src / "conf.py")
    if out.exists():
        shutil.rmtree(out)
    started = time.perf_counter()
    log = src / WARNINGS_FILE
    _run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", str(jobs), "-d", str(src / "_doctrees"),
          "-w", str(log), str(src), str(out)], "sphinx-build")
    # Sphinx's warnings (a link that resolves to no page, a bad image option): the site still builds
    text = log.read_text(encoding="utf-8") if log.is_file() else ""
    build.warnings = [line for line in text.splitlines() if line.strip()]
    remote = remote_assets(out)
    if remote:
        raise RuntimeError("the site would load from the network (it must work offline):\n" + "\n".join(remote))
    pages = sorted(p for p in out.rglob("*.html") if "_static" not in p.parts)
    index = out / "index.html"
    build.seconds = time.perf_counter() - started  # how long Sphinx took, for `make book`'s message
    return [index, *(p for p in pages if p != index)]
