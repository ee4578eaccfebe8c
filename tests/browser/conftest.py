"""The browser tier: JupyterLab (and later the static book) driven in headless Chromium by Playwright.

Chromium comes from Debian (`apt-get install chromium`; `.ci/run` installs it) and Playwright from PyPI;
Playwright's own browser download is not used. Without either, every test here is skipped with the reason.
Set SCALEDL_CHROMIUM to use another Chromium binary; SCALEDL_REQUIRE_BROWSER=1 (set by .ci/run) turns the
skip into a failure, so CI cannot pass without running this tier.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the shared tracked module
from tracked import copy_tracked  # noqa: E402
# Flags that keep Chromium from reaching out to the network (refused on offline machines) and let it run
# as root in a container.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("SCALEDL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


@pytest.fixture(scope="session")
def chromium_browser():
    path = chromium_path()
    if path is None and os.environ.get("SCALEDL_REQUIRE_BROWSER"):
        pytest.fail("SCALEDL_REQUIRE_BROWSER is set (as .ci/run sets it) but no Chromium is installed")
    if path is None:
        pytest.skip("no Chromium installed (Debian: apt-get install chromium; or set SCALEDL_CHROMIUM); "
                    ".ci/run installs it, so this tier runs in CI")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright; it is in the [dev] extra)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# JupyterLab settings for the test server: every cell rendered (no windowing, so text checks see all
# outputs), no news or update checks (offline).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


@pytest.fixture(scope="session")
def jupyterlab(tmp_path_factory):
    """A JupyterLab server on a free port over a copy of the book's notebooks; yields (url, token, root)."""
    root = tmp_path_factory.mktemp("lab")
    copy_tracked(root, "chapters", "labs")
    home = tmp_path_factory.mktemp("jupyter-home")  # fresh config, data (no notebook trusted) and settings
    settings = home / "settings"
    for name, value in LAB_SETTINGS.items():
        folder, file = name.rsplit("/", 1)
        (settings / folder).mkdir(parents=True, exist_ok=True)
        (settings / folder / file).write_text(json.dumps(value))
    port, token = free_port(), "scaledl-browser-test"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
           "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
           "SCALEDL_BACKEND": "simulator"}
    jupyter = Path(sys.executable).with_name("jupyter")
    cmd = [str(jupyter), "lab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.expose_app_in_browser=True", "--ServerApp.disable_check_xsrf=True"]
    log = open(home / "server.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"JupyterLab did not start:\n{(home / 'server.log').read_text()[-3000:]}")
            time.sleep(0.5)
    yield url, token, root
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def book_site(tmp_path_factory):
    """The static book (Jupyter Book over the real book), built once for the whole tier:
    (book, html folder, its pages with index.html first, Sphinx's warnings)."""
    try:
        import jupyter_book  # noqa: F401
    except ImportError:
        if os.environ.get("SCALEDL_REQUIRE_BROWSER"):
            pytest.fail("SCALEDL_REQUIRE_BROWSER is set (as .ci/run sets it) but Jupyter Book is not installed")
        pytest.skip("the static book needs Jupyter Book: pip install -e '.[book]' (in [dev])")
    from scaledl.book import load
    from scaledl.book.html import build

    book = load(ROOT)
    out = tmp_path_factory.mktemp("site") / "html"
    started = time.perf_counter()
    pages = build(book, out)
    print(f"\nstatic book built in {time.perf_counter() - started:.1f} s: {len(pages)} pages")
    return book, out, pages, list(build.warnings)
