"""scaledl._deadline.Deadline: the whole limit from the start, the call limit from the ready file."""

import time

from scaledl._deadline import Deadline


def test_the_whole_limit_runs_from_the_start():
    d = Deadline(0.05)
    assert not d.watching and d.passed() is None
    time.sleep(0.08)
    assert d.passed() == "whole" and d.describe("whole") == "0.05 s"


def test_the_call_limit_starts_when_the_ready_file_appears(tmp_path):
    ready = tmp_path / "ranks.ready"
    d = Deadline(60, ready, call_timeout_s=0.05)
    assert d.watching
    time.sleep(0.08)
    assert d.passed() is None  # no file yet: a slow start is not a deadlock
    ready.touch()
    assert d.passed() is None  # the call limit starts now
    time.sleep(0.08)
    assert d.passed() == "call" and d.describe("call") == "0.05 s of the ranks starting"


def test_a_ready_file_without_a_call_limit_is_not_watched(tmp_path):
    (tmp_path / "r").touch()
    d = Deadline(60, tmp_path / "r", call_timeout_s=None)
    assert not d.watching and d.passed() is None
