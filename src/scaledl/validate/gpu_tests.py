"""Run ``pytest tests/gpu`` in a fresh process and read each test's outcome back from its JUnit XML."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from scaledl import device

TIMEOUT_S = 3600  # the whole GPU suite; a hung kernel must not hang the validation forever


def parse_junit(path: Path) -> list[dict]:
    """One ``{"name", "status", "seconds", "message"}`` per ``<testcase>``; status is passed, failed,
    error or skipped, and message is the first line of the failure, error or skip reason."""
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        status, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                status = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = (node.get("message") or node.text or "").strip().splitlines()[0:1]
                message = message[0] if message else ""
                break
        name = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
        tests.append({"name": name, "status": status, "seconds": float(case.get("time") or 0.0),
                      "message": message})
    return tests


def run(root: Path | None, out: Path, *, progress=print) -> dict:
    """The tests/gpu step: ``absent`` without a checkout's tests/ folder (a wheel install), else pytest's
    per-test outcomes. The step fails when a test fails or errors, or pytest itself cannot run."""
    folder = None if root is None else root / "tests" / "gpu"
    if folder is None or not folder.is_dir():
        return {"status": "absent", "reason": "no tests/gpu folder here (an installed wheel has no tests; run "
                                              "scaledl validate from a checkout of the book)", "tests": []}
    xml = out / "tests-gpu.xml"
    env = dict(os.environ, **{device.ENV_VAR: device.backend(), device.QUIET_VAR: "1"})
    cmd = [sys.executable, "-m", "pytest", "tests/gpu", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}"]
    progress(f"running {' '.join(cmd[2:])}")
    try:
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "reason": f"pytest tests/gpu ran past {TIMEOUT_S} s", "tests": []}
    if not xml.is_file():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        return {"status": "failed", "reason": f"pytest exited {proc.returncode} without a report: "
                                              + " / ".join(tail), "tests": []}
    tests = parse_junit(xml)
    counts = {s: sum(t["status"] == s for t in tests) for s in ("passed", "failed", "error", "skipped")}
    if counts["failed"] or counts["error"] or proc.returncode not in (0, 5):  # 5: nothing collected
        status = "failed"
    elif tests and counts["skipped"] == len(tests):
        status = "skipped"
    else:
        status = "passed"
    reason = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    if status == "skipped":
        reason += f" ({tests[0]['message']})"
    return {"status": status, "reason": reason, "counts": counts, "exit_code": proc.returncode,
            "junit_xml": xml.name, "tests": tests}
