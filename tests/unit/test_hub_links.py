"""`scaledl book hub-links`: nbgitpuller links, checked against nbgitpuller itself.

The last test starts a Jupyter server with nbgitpuller's extension, follows one of the book's links the way
JupyterHub's user-redirect would hand it to a student's server, and checks that nbgitpuller clones the repository
into the folder the link names and that the page it renders opens the notebook the link names."""

import html
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from scaledl.book import load
from scaledl.book.hub_links import HUB_PATH, hub_link, hub_links, links_markdown, target_folder
from scaledl.cli import main

ROOT = Path(__file__).resolve().parents[2]
REPO = "https://github.com/course-org/sdl-2027.git"


def test_a_link_carries_what_nbgitpuller_reads():
    link = hub_link("https://hub.example.edu/", REPO, "labs/lab 01.ipynb", branch="fall/2027", app="classic")
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "hub.example.edu", "/" + HUB_PATH)
    assert "lab+01" in parts.query and "fall%2F2027" in parts.query  # form encoding, as URLSearchParams
    q = {k: v for k, [v] in parse_qs(parts.query, strict_parsing=True).items()}
    assert q == {"repo": REPO, "urlpath": "tree/sdl-2027/labs/lab 01.ipynb", "branch": "fall/2027",
                 "targetpath": "sdl-2027"}


def test_a_hub_behind_a_path_prefix_keeps_it():
    for hub in ("https://u.edu/jhub", "https://u.edu/jhub/", "https://u.edu/jhub/hub/"):
        assert hub_link(hub, REPO, "a.ipynb").startswith("https://u.edu/jhub/hub/user-redirect/git-pull?")


def test_every_notebook_a_student_opens_gets_one_link_and_no_solution_does():
    book = load(ROOT)
    links = hub_links(book, "https://hub.example.edu", repository=REPO)
    assert [i for i, _, _ in links] == [e.id for e in book.entries if e.validated]
    paths = [parse_qs(urlsplit(link).query)["urlpath"][0] for _, _, link in links]
    assert not [p for p in paths if "solutions" in p]
    assert all(p.startswith("lab/tree/sdl-2027/") and (ROOT / p.removeprefix("lab/tree/sdl-2027/")).is_file()
               for p in paths)
    text = links_markdown(book, "https://hub.example.edu", repository=REPO)
    assert text.count("\n- [") == len(links)


@pytest.mark.parametrize("kwargs, err, words", [
    (dict(hub_url="hub.example.edu"), ValueError, "hub_url='hub.example.edu'"),
    (dict(hub_url="https://h.edu/?next=x"), ValueError, "no query"),
    (dict(hub_url=None), TypeError, "hub_url must be a str"),
    (dict(app="vscode"), ValueError, "app='vscode'"),
    (dict(branch=""), ValueError, "branch=''"),
    (dict(path="../secret.ipynb"), ValueError, "path='../secret.ipynb'"),
    (dict(repository="sdl"), ValueError, "repository='sdl'"),
    (dict(repository="https://h.edu/org/.git"), ValueError, "is not a folder name"),
])
def test_bad_input_names_the_argument(kwargs, err, words):
    args = dict(hub_url="https://h.edu", repository=REPO, path="a.ipynb") | kwargs
    with pytest.raises(err, match=words.replace("?", r"\?").replace(".", r"\.")):
        hub_link(args.pop("hub_url"), args.pop("repository"), args.pop("path"), **args)


def test_the_folder_drops_dot_git():
    assert target_folder(REPO) == target_folder(REPO.removesuffix(".git")) == "sdl-2027"


def test_the_command_prints_or_writes_the_links(tmp_path, capsys):
    out = tmp_path / "links.md"
    assert main(["book", "hub-links", "https://hub.example.edu", "--repository", REPO, "--out", str(out)]) == 0
    assert "lab%2Ftree%2Fsdl-2027%2Flabs%2F" in out.read_text()
    capsys.readouterr()
    assert main(["book", "hub-links", "https://hub.example.edu"]) == 0
    captured = capsys.readouterr()
    assert "set-repository" in captured.err and captured.out.startswith("Open each notebook on https://hub.")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@x"})


def test_nbgitpuller_clones_where_the_link_says_and_opens_its_notebook(tmp_path):
    pytest.importorskip("nbgitpuller", reason="nbgitpuller is in the [dev] extra")
    course = tmp_path / "sdl-2027.git"  # a repository URL ending in .git: the case targetpath is there for
    (course / "labs").mkdir(parents=True)
    (course / "labs" / "lab01_x.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                               "nbformat_minor": 5}))
    _git("init", "-q", "-b", "main", cwd=course)
    _git("add", ".", cwd=course)
    _git("commit", "-q", "-m", "course", cwd=course)
    home = tmp_path / "home"
    home.mkdir()
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1", "--no-browser", "--allow-root",
         f"--ServerApp.root_dir={home}", "--IdentityProvider.token=", "--ServerApp.password=",
         "--ServerApp.disable_check_xsrf=True", "--ServerApp.jpserver_extensions={'nbgitpuller': True}"],
        cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")})
    try:
        base = f"http://127.0.0.1:{port}/"
        for _ in range(120):
            try:
                urllib.request.urlopen(base + "api/status", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"jupyter_server exited: {server.stderr.read()[-2000:]}")
                time.sleep(0.5)
        link = hub_link("https://hub.example.edu", course.as_uri(), "labs/lab01_x.ipynb")
        # JupyterHub's user-redirect hands the rest of the path and the query to the student's own server
        tail = link.split("/hub/user-redirect/", 1)[1]
        page = urllib.request.urlopen(base + tail, timeout=30).read().decode()
        urlpath = parse_qs(urlsplit(link).query)["urlpath"][0]
        assert html.escape(urlpath, quote=True) in page or urlpath in page  # where the status page sends the student
        api = tail.replace("git-pull?", "git-pull/api?", 1)
        events = urllib.request.urlopen(base + api, timeout=120).read().decode()
        assert '"phase": "finished"' in events, events[-2000:]
        opened = home / urlpath.removeprefix("lab/tree/")
        assert opened.is_file(), f"nbgitpuller did not clone to {opened}: {sorted(p.name for p in home.iterdir())}"
    finally:
        server.terminate()
        server.wait(timeout=30)
