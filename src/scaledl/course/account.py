"""The unprivileged account sandboxed code runs as (``scaledl-grader``, made once, as root), handing a
workdir to it, and the grader's one-line notices to the instructor (each said once per process)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from scaledl._args import UsageError

GRADING_ACCOUNT = "scaledl-grader"


def grading_user() -> tuple[str, int, int]:
    """The unprivileged account sandboxed code runs as: (name, uid, gid); created (as root) when absent.

    Creating the account changes the machine, so it is said, in one line on stderr (the grade command's
    output), the first time only: an existing account is used silently. Falls back to ``nobody`` where
    ``useradd`` is missing or fails, which is said too (then :meth:`Sandbox.sweep` may also kill other
    ``nobody`` processes).

    Raises:
        ValueError: not running as root (an account can be neither made nor switched to).
    """
    if os.geteuid() != 0:
        raise UsageError(f"grading_user: needs root to create and switch to {GRADING_ACCOUNT!r} "
                         f"(running as uid {os.geteuid()})")
    created = False
    for attempt in range(2):
        try:
            p = pwd.getpwnam(GRADING_ACCOUNT)
        except KeyError:
            useradd = shutil.which("useradd") or ("/usr/sbin/useradd" if Path("/usr/sbin/useradd").exists() else None)
            if attempt or useradd is None:
                break
            made = subprocess.run([useradd, "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell",
                                   "/usr/sbin/nologin", GRADING_ACCOUNT], capture_output=True, check=False)
            created = made.returncode == 0
        else:
            if created:
                _notice(f"created the system account {GRADING_ACCOUNT!r} (uid {p.pw_uid}, no home, no login "
                        f"shell) to run student code as; `userdel {GRADING_ACCOUNT}` removes it")
            return p.pw_name, p.pw_uid, p.pw_gid
    p = pwd.getpwnam("nobody")
    _notice(f"could not create the system account {GRADING_ACCOUNT!r} (useradd missing or failed); running "
            f"student code as {p.pw_name!r} (uid {p.pw_uid}) instead")
    return p.pw_name, p.pw_uid, p.pw_gid


_SAID: set[str] = set()  # notices already printed by this process (detect() may build several sandboxes)


def _notice(text: str) -> None:
    """One line for the instructor on stderr, beside the command's own output; each at most once."""
    if text not in _SAID:
        _SAID.add(text)
        print(f"scaledl: {text}", file=sys.stderr, flush=True)


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    os.chown(top, uid, gid)
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)
