"""scaledl._deadline.Deadline: the whole limit from the start, the call limit from the ready file. Time is
moved by shifting the recorded start (no sleeps: a loaded machine cannot make these flaky)."""

from scaledl._deadline import Deadline


def test_the_whole_limit_runs_from_the_start():
    d = Deadline(10)
    assert not d.watching and d.passed() is None
    d.start -= 11  # eleven seconds later
    assert d.passed() == "whole" and d.describe("whole") == "10 s"


def test_the_call_limit_starts_when_the_ready_file_appears(tmp_path):
    ready = tmp_path / "ranks.ready"
    d = Deadline(60, ready, call_timeout_s=5)
    assert d.watching
    d.start -= 30
    assert d.passed() is None  # 30 s without the file: a slow start is not a deadlock
    ready.touch()
    assert d.passed() is None and d.ready_at is not None  # the call limit starts now
    d.ready_at -= 4
    assert d.passed() is None
    d.ready_at -= 2  # six seconds after the ranks started
    assert d.passed() == "call" and d.describe("call") == "5 s of the ranks starting"
    d.start -= 40  # both passed: the call limit is the one named
    assert d.passed() == "call"


def test_a_ready_file_without_a_call_limit_is_not_watched(tmp_path):
    (tmp_path / "r").touch()
    d = Deadline(60, tmp_path / "r", call_timeout_s=None)
    assert not d.watching and d.passed() is None
