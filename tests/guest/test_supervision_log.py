"""The guest's record of restarts, read from the supervisor's log of starts and ends (no container)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_osworld.guest.server import supervision


def _log(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "supervised.jsonl"
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def _event(service: str, event: str, at: float, **extra: object) -> str:
    return json.dumps({"service": service, "event": event, "at": at, **extra})


def test_every_start_after_the_first_is_a_restart_with_how_the_process_before_it_ended(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        _event("xvfb", "start", 1000.0),
        _event("guest-server", "start", 1000.5),
        _event("guest-server", "exit", 1010.25, exit_code=None, signal=15),
        _event("guest-server", "start", 1010.5),
        _event("xvfb", "exit", 1020.0, exit_code=0, signal=None),
        '{"service": "xvfb", "event": "start", "at": 10',  # a torn last line is left out
    )
    events = supervision.read_events(path)
    assert supervision.supervised(events) == ["xvfb", "guest-server"]
    assert supervision.restarts(events) == [
        {
            "process": "guest-server",
            "at": "1970-01-01T00:16:50.500+00:00",
            "exit_code": None,
            "signal": 15,
            "down_seconds": 0.25,
        }
    ]


def test_a_start_without_a_recorded_end_is_still_a_restart(tmp_path: Path) -> None:
    events = supervision.read_events(
        _log(tmp_path, _event("openbox", "start", 5.0), "not json", _event("openbox", "start", 6.0))
    )
    assert supervision.restarts(events) == [
        {
            "process": "openbox",
            "at": "1970-01-01T00:00:06.000+00:00",
            "exit_code": None,
            "signal": None,
            "down_seconds": None,
        }
    ]


def test_the_report_reads_the_log_the_environment_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(supervision.SUPERVISED_LOG_ENV, str(tmp_path / "absent.jsonl"))
    assert supervision.report() == {"supervised": [], "restarts": []}  # no supervisor: nothing restarted
    path = _log(tmp_path, _event("dbus", "start", 1.0), _event("dbus", "exit", 2.0, exit_code=None, signal=9))
    monkeypatch.setenv(supervision.SUPERVISED_LOG_ENV, str(path))
    assert supervision.report() == {"supervised": ["dbus"], "restarts": []}
