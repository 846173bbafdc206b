"""``--osworld-compat``: every loop knob at OSWorld's run script defaults, and the summary says so."""

from __future__ import annotations

import re

import pytest

from pytest_osworld.agents import prompts
from pytest_osworld.errors import SettingsError
from pytest_osworld.record import TaskResult, Termination
from pytest_osworld.results.render import summary_lines
from pytest_osworld.results.summary import build_summary
from pytest_osworld.settings import OSWORLD_LOOP, Settings, merge
from pytest_osworld.settings.schema import record_knobs
from tests.episode.runs import BUNDLED, bundled_task, run_tasks, scripted_pyautogui
from tests.support.model_server import ModelServer, solution_answers

TASK = "os-rename-report"


@pytest.mark.docker
def test_compat_runs_with_osworlds_knobs_and_the_summary_says_so(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    server.script("scripted", *solution_answers(bundled_task(TASK)["solution"]))
    run = run_tasks(
        pytester,
        BUNDLED,
        "-k",
        TASK,
        "--osworld-compat",
        *scripted_pyautogui(server),
    )
    run.result.assert_outcomes(passed=1)
    record = run.record(f"os/{TASK}")
    assert record["loop"] == {"mode": "osworld-compat", "knobs": record_knobs(OSWORLD_LOOP), "differs": {}}
    assert record["settle"]["mode"] == "fixed" and record["settle"]["seconds"] >= 20.0  # OSWorld's sleep(20)

    first = server.completions("scripted")[0]
    assert first.body["temperature"] == 1.0 and first.body["top_p"] == 0.9
    assert first.body["max_tokens"] == 1500
    assert first.images() == [] and prompts.TREE in first.text()  # observation a11y_tree: the tree, no screenshot

    summary = run.summary()
    assert summary["identity"]["loop"] == {"mode": "osworld-compat", "modes": {"osworld-compat": 1}, "differs": {}}
    assert re.search(r"^ +loop +osworld-compat$", run.result.stdout.str(), re.MULTILINE), run.result.stdout.str()


def test_a_knob_given_beside_compat_is_refused_before_any_sandbox(pytester: pytest.Pytester) -> None:
    run = run_tasks(
        pytester, BUNDLED, "-k", TASK, "--osworld-agent", "oracle", "--osworld-compat", "--osworld-max-steps", "30"
    )
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    run.result.stderr.fnmatch_lines(["*--osworld-compat: compat sets max_steps to 50*--osworld-max-steps*"])
    assert not (run.run_dir / "os").exists()


def test_compat_overrides_the_layers_below_it_and_refuses_a_per_task_change() -> None:
    settings = merge(cli={"compat": "true"}, ini={"max_steps": "15", "observation": "screenshot"})
    assert {name: settings.value(name) for name in OSWORLD_LOOP} == OSWORLD_LOOP
    assert merge(cli={}, ini={"compat": "false", "max_steps": "15"}).loop.max_steps == 15
    with pytest.raises(SettingsError, match="compat sets max_steps for every task, and task_overrides of t"):
        merge(cli={"compat": True}, profile={"task_overrides": {"t": {"max_steps": 10}}})
    assert Settings(compat=True, task_overrides={"t": {"temperature": 1.0}}).for_task("t").model.temperature == 1.0


def _record(task_id: str, settings: Settings) -> TaskResult:
    return TaskResult.model_validate(
        {
            "run_id": "r",
            "task_id": task_id,
            "domain": "os",
            "termination": Termination.DONE,
            "score": 1.0,
            "loop": settings.loop_record(),
        }
    )


def test_the_summary_names_the_loop_and_the_knobs_that_differ_from_osworld() -> None:
    project = build_summary({"os/a": _record("a", Settings())}, None)
    assert project["identity"]["loop"]["mode"] == "project defaults"
    assert project["identity"]["loop"]["differs"]["max_steps"] == {"values": [15], "osworld": 50}
    line = summary_lines(project)[1]
    assert line.startswith("  loop       project defaults; differs from OSWorld's run: ")
    assert "max_steps 15 (OSWorld 50)" in line and "eval_settle quiet (OSWorld 20.0)" in line

    mixed = build_summary({"os/a": _record("a", Settings()), "os/b": _record("b", Settings(compat=True))}, None)
    assert summary_lines(mixed)[1].startswith("  loop       mixed: project defaults in 1, osworld-compat in 1; ")

    older = _record("a", Settings()).model_copy(update={"loop": None})  # a record from before the field
    assert build_summary({"os/a": older}, None)["identity"]["loop"] is None
    assert not any(line.lstrip().startswith("loop") for line in summary_lines(build_summary({"os/a": older}, None)))
