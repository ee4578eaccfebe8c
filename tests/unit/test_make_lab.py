"""`make lab` starts the reader's JupyterLab without nbgrader's menus, toolbar and server extensions.

nbgrader is in the [course] extra, so `make test` ([dev]) installs it into the .venv that `make lab` also
uses. These tests read the command line `make -n lab` prints, check that it switches off every
nbgrader lab and server extension installed here, and (where JupyterLab is installed) start that command on a
free port and read the page config and the nbgrader routes back from the server. Also: `make lab` opens the
reader's copy in workspace/ (scaledl.book.workspace) after refreshing it, `make lab-authors` the checkout, no
recipe echoes its command, and the .venv's settings overrides switch off JupyterLab's news and update checks.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NBGRADER_LAB_EXTENSION = "@jupyter/nbgrader"  # what `jupyter labextension list` shows for nbgrader 0.9

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


def make_lab_lines(port: int = 8888) -> list[list[str]]:
    """The shell commands `make -n lab PORT=port` prints, continuation lines joined, each split as sh would."""
    out = subprocess.run(["make", "-n", "-s", "lab", f"PORT={port}"], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")}).stdout
    return [shlex.split(line) for line in out.replace("\\\n", " ").splitlines() if line.strip()]


def _jupyter_lab(lines):
    (cmd,) = [c for c in lines if "lab" in c and any(t.endswith("/bin/jupyter") for t in c)]
    return cmd


def _flag(cmd, name):
    values = [t.split("=", 1)[1] for t in cmd if t.startswith(f"--{name}=")]
    assert len(values) == 1, f"--{name} given {len(values)} times in {cmd}"
    return values[0]


def _page_config(lines):
    """The page config `make lab` writes, and where."""
    (echo,) = [c for c in lines if c[:1] == ["echo"] and ">" in c and c[-1].endswith("page_config.json")]
    return json.loads(echo[1]), echo[-1]


def installed_nbgrader_server_extensions() -> set[str]:
    """The nbgrader server extensions this Python's Jupyter config enables (at least nbgrader 0.9's four)."""
    from jupyter_core.paths import jupyter_config_path

    names = {f"nbgrader.server_extensions.{n}" for n in ("formgrader", "validate_assignment", "assignment_list",
                                                          "course_list")}
    for folder in jupyter_config_path():
        for path in glob.glob(os.path.join(folder, "jupyter_server_config.d", "*.json")):
            try:
                exts = json.loads(Path(path).read_text())["ServerApp"]["jpserver_extensions"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            names |= {name for name, on in exts.items() if on and name.split(".")[0] == "nbgrader"}
    return names


def test_make_lab_turns_off_every_nbgrader_server_extension():
    cmd = _jupyter_lab(make_lab_lines())
    off = ast.literal_eval(_flag(cmd, "ServerApp.jpserver_extensions"))
    missing = {name for name in installed_nbgrader_server_extensions() if off.get(name) is not False}
    assert not missing, f"make lab leaves these nbgrader server extensions on: {sorted(missing)}"
    assert all(v is False for v in off.values()), off  # it only switches things off


def test_make_lab_disables_nbgrader_lab_extension_through_its_own_config_path():
    lines = make_lab_lines()
    config, path = _page_config(lines)
    assert config == {"disabledExtensions": {NBGRADER_LAB_EXTENSION: True}}
    try:
        import nbgrader
    except ImportError:
        pass
    else:  # the name nbgrader installs its lab extension under, from nbgrader itself
        assert {p["dest"] for p in nbgrader._jupyter_labextension_paths()} == {NBGRADER_LAB_EXTENSION}
    (env,) = [t for c in lines for t in c if t.startswith("JUPYTER_CONFIG_PATH=")]
    first = env.split("=", 1)[1].split("$")[0].split(os.pathsep)[0]
    assert Path(path).parent.parent.resolve() == Path(first).resolve()
    assert Path(path).parent.name == "labconfig"  # where JupyterLab looks for page_config.json


def _overrides(lines):
    """The JupyterLab settings overrides `make lab` writes into the .venv, and where."""
    (echo,) = [c for c in lines if c[:1] == ["echo"] and ">" in c and c[-1].endswith("overrides.json")]
    return json.loads(echo[1]), echo[-1]


def _recipe(target: str) -> list[str]:
    """The recipe lines of ``target`` in the Makefile, as written."""
    text = (ROOT / "Makefile").read_text()
    m = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.M)
    assert m, f"no {target} target"
    return [line for line in m.group(1).split("\n") if line.startswith("\t") and not line.startswith("\t\t")]


def test_make_lab_opens_the_readers_copy_after_refreshing_it():
    lines = make_lab_lines()
    sync = [i for i, c in enumerate(lines) if c[1:6] == ["-m", "scaledl", "book", "workspace", "--dir"]]
    server = [i for i, c in enumerate(lines) if "lab" in c and any(t.endswith("/bin/jupyter") for t in c)]
    assert len(sync) == 1 and len(server) == 1 and sync[0] < server[0]
    assert lines[sync[0]][6] == "workspace"
    assert "--notices-after-start" in lines[sync[0]]   # what it kept is said below JupyterLab's start-up lines
    assert _flag(lines[server[0]], "ServerApp.root_dir") == str(ROOT / "workspace")
    out = subprocess.run(["make", "-n", "-s", "lab-authors"], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")}).stdout
    (authors,) = [shlex.split(line) for line in out.replace("\\\n", " ").splitlines() if "/bin/jupyter" in line]
    assert _flag(authors, "ServerApp.root_dir") == str(ROOT)


def test_make_lab_echoes_no_command_and_switches_off_the_news():
    for target in ("lab", "lab-authors", "lab-config", "lab-reset"):
        noisy = [line for line in _recipe(target) if not line.startswith("\t@")]
        assert not noisy, f"make {target} would echo {noisy}"
    overrides, path = _overrides(make_lab_lines())
    assert overrides == {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                                         "checkForUpdates": False}}
    assert path.endswith("share/jupyter/lab/settings/overrides.json")    # this .venv's JupyterLab only


def test_instructor_guide_says_how_to_get_nbgrader_back():
    guide = (ROOT / "docs" / "instructor-guide.md").read_text()
    assert "make lab" in guide and ".venv/bin/jupyter lab" in guide


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:  # not listening yet
        return 0, ""


@pytest.mark.skipif(not Path(sys.executable).with_name("jupyter").exists(), reason="no JupyterLab here")
def test_the_server_make_lab_starts_has_no_nbgrader(tmp_path):
    """The command line `make -n lab` prints, run (its page config written to a temporary config path):
    the /lab page's config disables nbgrader's lab extension, and nbgrader's routes are not served."""
    port, token = _free_port(), "scaledl-make-lab-test"
    lines = make_lab_lines(port)
    config, _ = _page_config(lines)
    overrides, _ = _overrides(lines)
    (tmp_path / "labconfig").mkdir()
    (tmp_path / "labconfig" / "page_config.json").write_text(json.dumps(config))
    (tmp_path / "app-settings").mkdir()
    (tmp_path / "app-settings" / "overrides.json").write_text(json.dumps(overrides))
    (tmp_path / "workspace").mkdir()          # a reader's own workspace/ is theirs, never a test's
    cmd = _jupyter_lab(lines)
    cmd = [str(Path(sys.executable).with_name("jupyter")) if t.endswith("/bin/jupyter") else
           f"--ServerApp.root_dir={tmp_path / 'workspace'}" if t.startswith("--ServerApp.root_dir=") else t
           for t in cmd if not t.startswith("JUPYTER_CONFIG_PATH=")]
    cmd.append(f"--LabApp.app_settings_dir={tmp_path / 'app-settings'}")
    assert f"--ServerApp.port={port}" in cmd and "--ServerApp.ip=127.0.0.1" in cmd
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(tmp_path), "JUPYTER_TOKEN": token,
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "SCALEDL_BACKEND": "simulator"}
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while _get(f"{url}/api/status?token={token}")[0] != 200:
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(f"JupyterLab did not start:\n{(tmp_path / 'server.log').read_text()[-3000:]}")
            time.sleep(0.5)
        status, html = _get(f"{url}/lab?token={token}")
        assert status == 200
        m = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
        page_config = json.loads(m.group(1))
        assert NBGRADER_LAB_EXTENSION in page_config["disabledExtensions"]
        for route in ("/formgrader", "/assignments", "/courses"):
            assert _get(f"{url}{route}?token={token}")[0] == 404, route
        status, body = _get(f"{url}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={token}")
        defaults = {k: v.get("default") for k, v in json.loads(body)["schema"]["properties"].items()}
        assert status == 200 and defaults["fetchNews"] == "false" and defaults["checkForUpdates"] is False
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
