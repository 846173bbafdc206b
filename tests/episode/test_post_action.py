"""Observations are taken after the actions, as OSWorld's ``env.step`` returns them: step N's screenshot
is the screen after action N, and the model's next prompt shows that same screen."""

from __future__ import annotations

import json

import pytest

from tests.episode.runs import PAINT_ROOT_RED, RED, corner, run_tasks, scripted_pyautogui
from tests.support.model_server import ModelServer, Reply
from tests.support.taskfactory import task, write_jsonl

pytestmark = pytest.mark.docker


def test_step_screenshots_and_the_next_prompt_show_the_screen_after_the_action(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    write_jsonl(pytester.path / "t.jsonl", [task("paint", config=[])])
    server.script("scripted", Reply(f"```python\n{PAINT_ROOT_RED}\n```"), Reply("DONE"))
    run = run_tasks(
        pytester,
        pytester.path / "t.jsonl",
        *scripted_pyautogui(server),
    )
    run.result.assert_outcomes(passed=1)
    folder = run.run_dir / "os" / "paint"
    steps = [json.loads(line) for line in (folder / "traj.jsonl").read_text().splitlines()]
    assert [(s["step_num"], s["screenshot_file"]) for s in steps] == [(1, "step_1.png"), (2, "step_2.png")]
    step_1 = (folder / "step_1.png").read_bytes()
    assert corner(step_1) == RED  # taken after step 1's action changed the screen

    first_prompt, second_prompt = server.completions("scripted")
    assert corner(first_prompt.images()[-1]) != RED  # the first observation: after setup, before any action
    assert second_prompt.images()[-1] == step_1  # the next prompt sees step 1's screenshot
    assert "The screen at the start:" in second_prompt.text()  # the past screen, named as the record names it
    # The step that said DONE has the screen after it too, which is the final screen.
    assert (folder / "step_2.png").read_bytes() == (folder / "final.png").read_bytes()
