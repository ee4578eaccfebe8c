"""Grading as root creates the system account `scaledl-grader` on first use, and says so in one line on stderr;
an existing account is used silently. The account database and useradd are stand-ins here (no root needed)."""

from __future__ import annotations

import pwd
import subprocess

import pytest

from scaledl.course import account as S


class Accounts:
    """pwd.getpwnam and useradd over an in-memory account table."""

    def __init__(self, *, exists: bool, useradd_status: int = 0):
        self.table = {"nobody": pwd.struct_passwd(("nobody", "x", 65534, 65534, "", "/nonexistent", "/bin/false"))}
        if exists:
            self._add()
        self.useradd_status, self.calls = useradd_status, []

    def _add(self):
        self.table[S.GRADING_ACCOUNT] = pwd.struct_passwd(
            (S.GRADING_ACCOUNT, "x", 996, 996, "", "/nonexistent", "/usr/sbin/nologin"))

    def getpwnam(self, name):
        return self.table[name]  # KeyError when absent, as pwd raises

    def run(self, argv, **kw):
        self.calls.append(argv)
        if self.useradd_status == 0:
            self._add()
        return subprocess.CompletedProcess(argv, self.useradd_status, b"", b"")


@pytest.fixture
def accounts(monkeypatch):
    def install(**kw):
        acc = Accounts(**kw)
        monkeypatch.setattr(S.os, "geteuid", lambda: 0)
        monkeypatch.setattr(S, "_SAID", set())  # what earlier tests had it say
        monkeypatch.setattr(S.pwd, "getpwnam", acc.getpwnam)
        monkeypatch.setattr(S.subprocess, "run", acc.run)
        monkeypatch.setattr(S.shutil, "which", lambda name, *a, **k: "/usr/sbin/useradd" if name == "useradd" else None)
        return acc
    return install


def test_creating_the_account_is_said_once(accounts, capsys):
    acc = accounts(exists=False)
    assert S.grading_user() == (S.GRADING_ACCOUNT, 996, 996)
    assert len(acc.calls) == 1 and acc.calls[0][0] == "/usr/sbin/useradd" and "--system" in acc.calls[0]
    assert acc.calls[0][-1] == S.GRADING_ACCOUNT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("scaledl: created the system account 'scaledl-grader' (uid 996")
    assert "userdel scaledl-grader" in err
    assert S.grading_user() == (S.GRADING_ACCOUNT, 996, 996)  # now it exists: nothing more is said
    assert capsys.readouterr().err == "" and len(acc.calls) == 1


def test_an_existing_account_is_used_silently(accounts, capsys):
    acc = accounts(exists=True)
    assert S.grading_user() == (S.GRADING_ACCOUNT, 996, 996)
    assert acc.calls == [] and capsys.readouterr() == ("", "")


def test_a_failed_useradd_falls_back_to_nobody_and_says_so(accounts, capsys):
    acc = accounts(exists=False, useradd_status=9)
    assert S.grading_user() == ("nobody", 65534, 65534)
    err = capsys.readouterr().err
    assert "created" not in err.replace("could not create", "")
    assert err.startswith("scaledl: could not create the system account 'scaledl-grader'") and "'nobody'" in err
    assert len(acc.calls) == 1
    assert S.grading_user() == ("nobody", 65534, 65534)  # detect() may build several sandboxes: said once
    assert capsys.readouterr().err == ""


def test_without_root_nothing_is_created(monkeypatch):
    monkeypatch.setattr(S.os, "geteuid", lambda: 1000)
    with pytest.raises(ValueError, match="needs root to create and switch to 'scaledl-grader'"):
        S.grading_user()
