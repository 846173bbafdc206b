"""The native runners by name: their endpoint protocol, the checks before any sandbox, the settings."""

from __future__ import annotations

import pytest

from pytest_osworld.agents import check_agent, get_runner_class, make_runner, runner_names
from pytest_osworld.agents.endpoint import endpoint_api, make_model_client
from pytest_osworld.agents.native.loop import NativeRunner
from pytest_osworld.errors import OsworldError, SettingsError
from pytest_osworld.models import ModelConfigError
from pytest_osworld.settings import Settings, merge
from tests.agents.helpers import context, observation
from tests.support.model_server import Json, ModelServer
from tests.support.paths import REPO

NATIVE = {"anthropic-computer": "anthropic", "openai-computer": "openai", "tool-calling": "openai", "uitars": "openai"}


def test_the_native_runners_are_built_in_and_each_speaks_one_api() -> None:
    assert runner_names()[4:8] == list(NATIVE)
    for name, api in NATIVE.items():
        source = get_runner_class(name)
        assert isinstance(source, type) and issubclass(source, NativeRunner)
        assert source.needs_model and source.model_api == api and source.name == name


def test_the_runner_chooses_the_endpoints_protocol_unless_told_otherwise() -> None:
    settings = Settings(agent="anthropic-computer", model_url="https://api.anthropic.com", model="claude-x")
    assert endpoint_api(settings) == "anthropic"
    made = make_model_client(settings)
    assert made is not None and made.api == "anthropic"
    assert endpoint_api(Settings(agent="pyautogui", model_api="anthropic", model_url="http://x/v1")) == "anthropic"
    with pytest.raises(ModelConfigError, match="speaks the anthropic API; --osworld-model-api openai names another"):
        check_agent(
            merge(cli={"agent": "anthropic-computer", "model_url": "http://x", "model": "m", "model_api": "openai"})
        )
    check_agent(
        merge(cli={"agent": "anthropic-computer", "model_url": "http://x", "model": "m", "model_api": "anthropic"})
    )


@pytest.mark.parametrize("name", list(NATIVE))
def test_a_native_runner_needs_a_model_and_screenshots(name: str) -> None:
    with pytest.raises(ModelConfigError, match="needs a model endpoint"):
        check_agent(Settings(agent=name))
    with pytest.raises(OsworldError, match="does not support --osworld-observation a11y_tree"):
        check_agent(Settings(agent=name, model_url="http://gpu:8000/v1", model="m", observation="a11y_tree"))
    with pytest.raises(ModelConfigError, match="needs a model endpoint"):
        make_runner(name, context())  # no client at all


def test_the_native_settings_refuse_what_the_protocols_do_not_have() -> None:
    with pytest.raises(SettingsError, match="--osworld-anthropic-tool"):
        merge(cli={"anthropic_tool": "computer_20241022"})
    with pytest.raises(SettingsError, match="--osworld-openai-chaining"):
        merge(cli={"openai_chaining": "threads"})
    with pytest.raises(SettingsError, match="--osworld-uitars-coordinates"):
        merge(cli={"uitars_coordinates": "normalized"})
    values = merge(cli={"acknowledge_safety_checks": "yes", "uitars_factor": "32", "anthropic_zoom": "no"})
    assert (
        values.model.acknowledge_safety_checks is True
        and values.model.uitars_factor == 32
        and values.model.anthropic_zoom is False
    )


def test_the_docs_worked_example_runs_as_written(model_server: ModelServer) -> None:
    """docs/agents.md's runner for another protocol, executed from the page against a chat server."""
    page = (REPO / "docs" / "agents.md").read_text()
    section = page[page.index("### A runner for another computer-use protocol") :]
    code = section[section.index("```python\n") + 10 : section.index("\n```", section.index("```python"))]
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/agents.md", "exec"), namespace)  # the page's own example
    runner_class = namespace["JsonClicks"]
    settings = Settings(model_url=model_server.openai_url, model="test-model", model_retries=0)
    assert endpoint_api(settings.replace(agent="pyautogui")) == "openai"
    ctx = context(settings, server=model_server)

    def said(text: str) -> Json:
        return Json({"choices": [{"message": {"content": text}, "finish_reason": "stop"}], "usage": {}})

    model_server.script(
        "test-model", said('{"click": [10, 20]}'), said('{"click": "there"}'), said("The task is infeasible.")
    )
    runner = runner_class(ctx)  # type: ignore[operator]
    clicked = runner.predict(observation(0))
    assert [a.code for a in clicked.actions] == ["pyautogui.click(10, 20, clicks=1, button='left')"]
    assert "click must be [x, y]" in runner.predict(observation(1)).parse_error
    assert [a.kind for a in runner.predict(observation(2)).actions] == ["FAIL"]
