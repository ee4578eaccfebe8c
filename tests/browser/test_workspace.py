"""Running a chapter in `make lab` and letting JupyterLab autosave it leaves the repository clean.

The command lines are the ones `make -n lab` prints, with the workspace moved to a temporary folder (a
reader's real workspace/ is theirs, never a test's) and a short autosave interval so the test waits past it
in seconds rather than two minutes. The reader's copy must change (autosave ran) and `git status` of the
checkout must not.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

# This tier's own settings and port finder, from its conftest (not importable by name in importlib mode).
_spec = importlib.util.spec_from_file_location("browser_conftest", Path(__file__).with_name("conftest.py"))
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)
LAB_SETTINGS, free_port = _conftest.LAB_SETTINGS, _conftest.free_port

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "chapters/04_writing_gemm_kernels.ipynb"
AUTOSAVE_S = 5

RUN_STATE_JS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  if (!w || !w.content || !w.sessionContext) return null;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  const pending = cells.filter(c => c.promptNode && /\\[\\*\\]/.test(c.promptNode.textContent)).length;
  return {path: w.context.path, status: w.sessionContext.kernelDisplayStatus, pending,
          dirty: w.context.model.dirty, code: cells.length};
}"""


def _make_lab_commands(workspace: Path, port: int) -> list[list[str]]:
    out = subprocess.run(["make", "-n", "-s", "lab", f"PORT={port}", f"WORKSPACE={workspace}"], cwd=ROOT,
                         capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")}).stdout
    return [shlex.split(line) for line in out.replace("\\\n", " ").splitlines() if line.strip()]


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--", "chapters", "labs", "docs"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def make_lab_server(tmp_path):
    if subprocess.run(["git", "rev-parse"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout: nothing to keep clean")
    workspace, home, port, token = tmp_path / "workspace", tmp_path / "home", free_port(), "scaledl-workspace"
    lines = _make_lab_commands(workspace, port)
    (sync,) = [c for c in lines if c[1:5] == ["-m", "scaledl", "book", "workspace"]]
    subprocess.run([sys.executable, *sync[1:]], cwd=ROOT, check=True, capture_output=True)
    (lab,) = [c for c in lines if any(t.endswith("/bin/jupyter") for t in c)]
    assert f"--ServerApp.root_dir={workspace}" in lab
    cmd = [str(Path(sys.executable).with_name("jupyter")) if t.endswith("/bin/jupyter") else t
           for t in lab if not t.startswith("JUPYTER_CONFIG_PATH=")]
    settings = home / "settings"
    for name, value in {**LAB_SETTINGS, "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings":
                        {"autosave": True, "autosaveInterval": AUTOSAVE_S}}.items():
        folder, file = name.rsplit("/", 1)
        (settings / folder).mkdir(parents=True, exist_ok=True)
        (settings / folder / file).write_text(json.dumps(value))
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "SCALEDL_BACKEND": "simulator"}
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(cmd + ["--LabApp.expose_app_in_browser=True"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"JupyterLab did not start:\n{(tmp_path / 'server.log').read_text()[-3000:]}")
            time.sleep(0.5)
    yield url, token, workspace
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_running_a_chapter_in_make_lab_leaves_the_repository_clean(chromium_browser, make_lab_server):
    url, token, workspace = make_lab_server
    before_status, before_copy = _git_status(), _sha(workspace / CHAPTER)
    page = chromium_browser.new_page()
    try:
        page.goto(f"{url}/lab/tree/{CHAPTER}?token={token}")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                               "&& window.jupyterapp.shell.currentWidget.sessionContext", timeout=90_000)
        deadline = time.time() + 120
        while (state := page.evaluate(RUN_STATE_JS)) is None or state["status"] != "idle":
            assert time.time() < deadline, f"the kernel did not become idle: {state}"
            time.sleep(0.5)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        deadline = time.time() + 300
        time.sleep(2)
        while (state := page.evaluate(RUN_STATE_JS))["pending"] or state["status"] != "idle":
            assert time.time() < deadline, f"Run All did not finish: {state}"
            time.sleep(1)
        time.sleep(3 * AUTOSAVE_S)              # past the autosave interval: JupyterLab saves what ran
        assert not page.evaluate(RUN_STATE_JS)["dirty"], "autosave did not run"
    finally:
        page.close()
    assert _sha(workspace / CHAPTER) != before_copy, "the reader's copy should hold what ran"
    assert _git_status() == before_status, "running a chapter in make lab changed the repository"
