"""The wait after setup (``start_settle``): OSWorld sleeps 60 s before the first observation; quiet waits
until what setup launched has stopped changing the screen for a moment, a number waits exactly that long."""

from __future__ import annotations

from typing import Any

import pytest

from tests.episode.runs import RED, corner, run_tasks, scripted_pyautogui
from tests.support.model_server import ModelServer, Reply
from tests.support.taskfactory import task, write_jsonl

pytestmark = pytest.mark.docker


PAINT_SECONDS = 3


def late_paint_task(task_id: str) -> dict[str, Any]:
    """Setup launches a program that keeps repainting the desktop for a few seconds (an application
    still opening: a new colour each time, never a blinking caret's two) and ends on red."""
    frames = " ".join(f"'#0000{level:02x}'" for level in range(60, 60 + 8 * PAINT_SECONDS * 5, 8))
    paint = f"for c in {frames}; do xsetroot -solid $c; sleep 0.2; done; xsetroot -solid '#ff0000'"
    return task(task_id, config=[{"type": "launch", "parameters": {"command": ["bash", "-c", paint]}}])


def test_the_first_observation_waits_for_what_setup_launched(pytester: pytest.Pytester, server: ModelServer) -> None:
    write_jsonl(pytester.path / "t.jsonl", [late_paint_task("paint-quiet"), late_paint_task("paint-none")])
    # The same task, once with the default (quiet) and once with no wait at all (per-task setting).
    (pytester.path / "profile.yaml").write_text("task_overrides:\n  paint-none:\n    start_settle: 0\n")
    server.script("scripted", Reply("DONE"), Reply("DONE"))
    run = run_tasks(
        pytester,
        pytester.path / "t.jsonl",
        *scripted_pyautogui(server),
        "--osworld-profile",
        "profile.yaml",
    )
    run.result.assert_outcomes(passed=2)  # the factory's evaluator holds whatever the agent did

    quiet_prompt, none_prompt = server.completions("scripted")
    assert corner(quiet_prompt.images()[-1]) == RED  # the agent's first screen shows what setup started
    assert corner(none_prompt.images()[-1]) != RED  # without the wait it sees the desktop still changing

    quiet = run.record("os/paint-quiet")["start_settle"]
    assert quiet["mode"] == "quiet" and quiet["quiet"] is True and quiet["limit"] == 60.0
    assert PAINT_SECONDS - 1 <= quiet["seconds"] < 60, quiet  # waited for the screen, not for the bound
    none = run.record("os/paint-none")["start_settle"]
    assert none["mode"] == "fixed" and none["seconds"] < 1.0
