"""``make lab``'s notices about the reader's copy, printed after JupyterLab's start-up lines.

``make lab`` refreshes the reader's copy (:func:`scaledl.book.workspace.sync`) and then starts JupyterLab,
whose start-up lines (a screenful of extension and server messages, ending with the URL and its token) push
anything printed before them out of sight. A notice that a chapter was kept because the reader had edited it,
or that the outputs of their run were replaced, must be read, so :func:`defer` hands the notices to a small
background process that waits until that server answers, then prints them under its URL.

It finds the server by the file every Jupyter server writes in its runtime folder (``jpserver-PID.json``,
written just before it prints its URL; ``jupyter_core.paths.jupyter_runtime_dir``) naming the workspace as its
``root_dir``, written after the notices were handed over, by a process that is still alive. The server answers
HTTP only once it has printed its start-up lines (the URL is printed just before its event loop starts), so the
first answer from ``GET /api`` (which needs no token and is logged only at debug level) is the moment to print.
If no such server answers within :data:`WAIT_S` (JupyterLab failed to start), the notices are printed anyway,
so they are never lost; if the server stops first, they are not (the reader has left).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

WAIT_S = 120.0  # a first JupyterLab start on a slow machine takes about 30 s
POLL_S = 0.25
SETTLE_S = 1.5  # after the first answer, the lines extensions log as the event loop starts (jupyter_lsp's) come first
HEADER = "make lab: about your copy of the book in {workspace}/"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/api", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # it answered
    except OSError:
        return False


def find_server(workspace: Path, runtime_dir: Path, since: float) -> dict | None:
    """The info of a live Jupyter server serving ``workspace``, started at or after ``since`` (a time), or None."""
    for path in sorted(runtime_dir.glob("jpserver-*.json")):
        try:
            if path.stat().st_mtime < since - 1:  # some file systems keep whole seconds only
                continue
            info = json.loads(path.read_text(encoding="utf-8"))
            same = Path(info["root_dir"]).resolve() == workspace.resolve()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if same and isinstance(info.get("pid"), int) and _alive(info["pid"]):
            return info
    return None


def wait_for_server(workspace: Path, runtime_dir: Path, since: float, *, wait_s: float = WAIT_S,
                    poll_s: float = POLL_S) -> str:
    """Wait for the server of ``workspace`` (:func:`find_server`) to answer: ``"up"``; ``"stopped"`` when it
    exits first; ``"timeout"`` when none answered within ``wait_s`` seconds."""
    deadline, seen = time.monotonic() + wait_s, None
    while time.monotonic() < deadline:
        info = find_server(workspace, runtime_dir, since)
        if info is not None:
            seen = info
            if _answers(info.get("url", "")):
                return "up"
        elif seen is not None and not _alive(seen["pid"]):
            return "stopped"
        time.sleep(poll_s)
    return "timeout"


def show(workspace: Path, lines: list[str], since: float, *, runtime_dir: Path | None = None, out=None,
         wait_s: float = WAIT_S, poll_s: float = POLL_S, settle_s: float = SETTLE_S) -> str:
    """Print ``lines`` under a header once the server of ``workspace`` is up (or it never came up within
    ``wait_s``); nothing when it stopped first. Returns what :func:`wait_for_server` saw."""
    if runtime_dir is None:
        from jupyter_core.paths import jupyter_runtime_dir

        runtime_dir = Path(jupyter_runtime_dir())
    seen = wait_for_server(workspace, runtime_dir, since, wait_s=wait_s, poll_s=poll_s)
    if seen != "stopped":
        out = out or sys.stdout
        time.sleep(settle_s if seen == "up" else 0)
        print("\n" + HEADER.format(workspace=workspace.name), *lines, sep="\n", file=out, flush=True)
    return seen


def defer(workspace: Path, lines: list[str]) -> bool:
    """Hand ``lines`` to a background process that prints them after the server's start-up lines (:func:`show`);
    False (nothing started) when there is nothing to say or Jupyter is not installed here."""
    if not lines:
        return False
    try:
        import jupyter_core  # noqa: F401  (the [lab] extra: the background process needs it)
    except ImportError:
        return False
    payload = json.dumps({"workspace": str(workspace), "lines": lines, "since": time.time()})
    from scaledl.device import QUIET_VAR

    env = {**os.environ, QUIET_VAR: "1"}  # importing scaledl would announce its backend again
    subprocess.Popen([sys.executable, "-m", "scaledl.book.lab_notices", payload], stdin=subprocess.DEVNULL,
                     env=env)
    return True


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C stops JupyterLab and, silently, this wait
    data = json.loads(argv[0])
    show(Path(data["workspace"]), data["lines"], data["since"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
