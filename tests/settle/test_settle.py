"""The quiet settle against a real desktop: still screens and files end it fast, a file not written yet
or still changing holds it, never past its bound."""

from __future__ import annotations

import time

import pytest

from pytest_osworld.settle import QUIET_WINDOW_S, Watched, wait_fixed, wait_quiet, watched_files
from pytest_osworld.tasks.model import Evaluator
from tests.support.desktop import Desktop


@pytest.mark.docker
def test_a_still_desktop_settles_after_one_quiet_window(shared_desktop: Desktop) -> None:
    guest = shared_desktop.client()
    settled = wait_quiet(guest, [Watched("/etc/hostname")], last_screen=guest.screenshot())
    assert settled.mode == "quiet" and settled.quiet is True
    assert QUIET_WINDOW_S <= settled.seconds < QUIET_WINDOW_S + 1.5, settled
    assert settled.watched == ["/etc/hostname"]


@pytest.mark.docker
def test_a_blinking_caret_does_not_hold_the_wait(fresh_desktop: Desktop) -> None:
    guest = fresh_desktop.client()
    guest.launch(["gedit", "--new-window"])
    started = time.monotonic()
    while "gedit" not in guest.execute(["wmctrl", "-l"]).output.lower():  # readiness: its window is up
        assert time.monotonic() - started < 60, "gedit did not open"
        time.sleep(0.3)
    wait_quiet(guest, [], limit=20)  # let it finish drawing
    settled = wait_quiet(guest, [], last_screen=guest.screenshot(), limit=20)
    assert settled.quiet is True and settled.seconds < 5, settled


@pytest.mark.docker
def test_a_missing_result_file_holds_the_wait_until_it_is_written(fresh_desktop: Desktop) -> None:
    guest = fresh_desktop.client()
    late = Watched("~/late-result.txt")
    settled = wait_quiet(guest, [late], last_screen=guest.screenshot(), limit=3)
    assert settled.quiet is False and 3 <= settled.seconds < 4, settled  # bounded

    screen = guest.screenshot()
    launched = time.monotonic()  # the file is written 2 s after this; the wait starts a moment later
    guest.launch("sleep 2; echo done > ~/late-result.txt", shell=True)
    settled = wait_quiet(guest, [late], last_screen=screen, limit=20)
    assert settled.quiet is True and settled.seconds < 10, settled
    assert time.monotonic() - launched >= 2 + QUIET_WINDOW_S, settled  # held until written, then quiet
    assert guest.file("~/late-result.txt") == b"done\n"


@pytest.mark.docker
def test_a_file_that_keeps_changing_holds_the_wait(fresh_desktop: Desktop) -> None:
    guest = fresh_desktop.client()
    guest.launch("for i in 1 2 3 4 5 6; do echo $i >> ~/growing.txt; sleep 0.5; done", shell=True)
    settled = wait_quiet(guest, [Watched("~/growing.txt", required=False)], limit=20)
    assert settled.quiet is True and settled.seconds >= 2.5, settled  # written for 3 s, then still
    assert guest.file("~/growing.txt") == b"1\n2\n3\n4\n5\n6\n"


@pytest.mark.docker
def test_a_missing_optional_file_does_not_hold_the_wait(shared_desktop: Desktop) -> None:
    settled = wait_quiet(shared_desktop.client(), [Watched("~/.config/google-chrome/Default/Bookmarks", False)])
    assert settled.quiet is True and settled.seconds < QUIET_WINDOW_S + 1.5


def test_the_fixed_wait_is_exactly_its_seconds() -> None:
    settled = wait_fixed(0.5)
    assert settled.mode == "fixed" and settled.limit == 0.5 and 0.5 <= settled.seconds < 0.7
    assert wait_fixed(0).seconds < 0.05


def test_watched_files_are_the_result_getters_paths() -> None:
    evaluator = Evaluator.model_validate(
        {
            "func": ["compare_table", "check_include_exclude", "is_expected_bookmarks", "check_json_settings"],
            "result": [
                {"type": "vm_file", "path": ["/a.xlsx", "~/b.xlsx"], "dest": ["a", "b"], "multi": True},
                {"type": "vm_command_line", "command": "ls"},
                {"type": "bookmarks"},
                {"type": "vm_file", "path": "/a.xlsx", "dest": "a2"},
            ],
            "expected": [{"type": "vm_file", "path": "/expected.xlsx", "dest": "e"}, None, None, None],
        }
    )
    assert watched_files(evaluator) == [
        Watched("/a.xlsx"),
        Watched("~/b.xlsx"),
        Watched("~/.config/google-chrome/Default/Bookmarks", required=False),
    ]
    assert watched_files(Evaluator.model_validate({"func": "infeasible"})) == []
