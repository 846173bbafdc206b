"""OSWorld's ``<`` rewrite in a real desktop: a ``<`` typed into a text editor lands as ``<`` in the file.

The task sets the keyboard map OSWorld's VM has (pc105: a second key with ``less``/``greater``), on
which pyautogui types ``<`` as ``>`` unless the action is rewritten to shift+comma.
"""

from __future__ import annotations

import json

import pytest

from tests.episode.runs import run_tasks
from tests.support.taskfactory import task, write_jsonl

pytestmark = pytest.mark.docker


FILE = "/home/user/Desktop/less.txt"


def less_than_task() -> dict[str, object]:
    return task(
        "type-less-than",
        config=[
            # OSWorld's VM keymap: keycode 94 is the pc105 key between left shift and Z.
            {
                "type": "execute",
                "parameters": {"command": ["xmodmap", "-e", "keycode 94 = less greater bar brokenbar"]},
            },
            {"type": "execute", "parameters": {"command": ["touch", FILE]}},
            {"type": "launch", "parameters": {"command": ["gedit", FILE]}},
            {"type": "execute", "parameters": {"command": ["wmctrl", "-l"], "until": {"stdout": "less.txt"}}},
            {"type": "activate_window", "parameters": {"window_name": "less.txt"}},
        ],
        solution=[
            "pyautogui.typewrite('if a < b: <')",
            "pyautogui.press('<')",
            "pyautogui.hotkey('ctrl', 's')",
            "WAIT",
            "DONE",
        ],
        evaluator={
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": f"cat {FILE}", "shell": True},
            "expected": {"type": "rule", "rules": {"expected": "if a < b: <<\n"}},
        },
    )


def test_a_typed_less_than_lands_as_less_than(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "t.jsonl", [less_than_task()])
    run = run_tasks(pytester, pytester.path / "t.jsonl", "--osworld-agent", "oracle")
    record = run.record("os/type-less-than")
    assert record["score"] == 1.0, record["message"]
    run.result.assert_outcomes(passed=1)
    steps = [
        json.loads(line) for line in (run.run_dir / "os" / "type-less-than" / "traj.jsonl").read_text().splitlines()
    ]
    assert steps[0]["action"] == "pyautogui.typewrite('if a < b: <')"  # the record keeps the action as given
    assert all(s["execute_status"] == "ok" for s in steps[:3])
