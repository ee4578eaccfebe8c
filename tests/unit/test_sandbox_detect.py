"""``sandbox.detect("auto")`` tries the levels strongest first and passes over only SandboxUnavailable: a bug in
a probe is an error, not a silent fall back to a weaker level (which, for ``user``, leaves the network open)."""

import pytest

from scaledl.course import sandbox as S


def test_a_missing_tool_is_sandbox_unavailable_a_value_error_that_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(S.shutil, "which", lambda name: None)
    with pytest.raises(S.SandboxUnavailable, match="bwrap is not on PATH; .*apt-get install bubblewrap"):
        S.detect("bwrap")
    assert issubclass(S.SandboxUnavailable, ValueError)  # callers that report a ValueError still do
    with pytest.raises(ValueError, match="mode='nope'") as err:
        S.detect("nope")
    assert not isinstance(err.value, S.SandboxUnavailable)


def test_auto_falls_back_only_past_an_unavailable_level(monkeypatch):
    monkeypatch.setattr(S.shutil, "which", lambda name: None)  # no bwrap, no unshare, no setpriv
    monkeypatch.setattr(S.os, "geteuid", lambda: 1000)  # not root: neither bwrap nor user works
    assert S.detect("auto").level == "none"


def test_a_bug_in_a_probe_is_not_mistaken_for_an_unavailable_level(monkeypatch):
    monkeypatch.setattr(S.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(S.os, "geteuid", lambda: 0)
    # whether the grading account exists yet is this machine's state, not the test's: with `which` faked, making
    # it would run a useradd that is not there
    monkeypatch.setattr(S, "grading_user", lambda: ("scaledl-grader", 64000, 64000))

    def broken(self):
        raise ValueError("a bug in the bwrap probe")

    monkeypatch.setattr(S.Sandbox, "_problem", broken)
    with pytest.raises(ValueError, match="a bug in the bwrap probe"):
        S.detect("auto")
