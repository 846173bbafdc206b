"""Raw JSON requests of the native runners over the model clients: the same retries, Retry-After, masks and
redaction as a chat answer, and the key kept out of every text a runner can record (no Docker)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_osworld.agents.base import Observation, RunnerContext
from pytest_osworld.agents.endpoint import make_model_client
from pytest_osworld.agents.registry import make_runner
from pytest_osworld.models.base import ModelError
from pytest_osworld.models.retry import RetryPolicy
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.model import Task
from pytest_osworld.tasks.readers import TaskEntry
from tests.agents.native_helpers import png
from tests.models.conftest import KEY, KEY_ENV
from tests.support.model_server import Json, ModelServer, Status

AGENTS = {"anthropic-computer": "anthropic", "openai-computer": "openai", "tool-calling": "openai", "uitars": "openai"}


class Waits:
    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def client(server: ModelServer, agent: str, waits: Waits, retries: int = 2) -> Any:
    settings = Settings(
        model_url=server.url(AGENTS[agent]),  # type: ignore[arg-type]
        model=server.models[0],
        agent=agent,
        model_key_env=KEY_ENV,
        model_retries=retries,
    )
    return make_model_client(settings, retry=RetryPolicy(retries=retries, base=0.0, sleep=waits, rng=random.Random(1)))


@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_runners_protocol_decides_the_endpoints_api(agent: str) -> None:
    settings = Settings(model_url="http://127.0.0.1:9/v1", model="m", agent=agent)
    made = make_model_client(settings)
    assert made is not None and made.api == AGENTS[agent]


def test_overloaded_and_rate_limited_answers_are_retried_after_their_retry_after(
    api_key: str, no_key_in_logs: Any
) -> None:
    waits = Waits()
    with ModelServer(models=["m"], api_key=KEY) as server:
        overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        server.script("m", Status(529, overloaded, retry_after=2), Status(429, retry_after="3"), Json({"ok": True}))
        made = client(server, "anthropic-computer", waits)
        reply = made.send_json(
            made.completion_path(), {"model": "m"}, headers={"anthropic-beta": "computer-use-2025-01-24"}
        )
        assert reply.data == {"ok": True} and reply.attempts == 3
        assert waits.seconds == [2.0, 3.0]
        seen = server.completions()
        assert [r.headers.get("anthropic-beta") for r in seen] == ["computer-use-2025-01-24"] * 3
        assert all(r.headers["x-api-key"] == KEY for r in seen)


def test_past_the_retries_it_is_the_endpoints_failure_with_no_key_in_it(api_key: str, no_key_in_logs: Any) -> None:
    waits = Waits()
    with ModelServer(models=["m"], api_key=KEY) as server:
        echo = {"error": {"message": f"overloaded, your key {KEY} is fine"}}
        server.script(
            "m", Status(529, echo, retry_after=0), Status(529, echo, retry_after=0), Status(529, echo, retry_after=0)
        )
        made = client(server, "tool-calling", waits)
        with pytest.raises(ModelError) as info:
            made.send_json("chat/completions", {"model": "m"})
        assert info.value.status == 529 and info.value.attempts == 3
        assert "failed after 3 attempt(s)" in str(info.value) and KEY not in str(info.value)


def test_a_refused_request_is_not_retried(api_key: str) -> None:
    with ModelServer(models=["m"], api_key=KEY) as server:
        server.script("m", Status(400, {"error": {"message": "tools[0].display_width_px is required"}}))
        made = client(server, "openai-computer", Waits())
        with pytest.raises(ModelError, match="refused the request: HTTP 400: tools"):
            made.send_json("responses", {"model": "m"})
        assert len(server.completions()) == 1


def _entry() -> TaskEntry:
    return TaskEntry(
        task=Task.model_validate({"id": "t", "instruction": "Rename the file.", "evaluator": {"func": "exact_match"}}),
        domain="os",
        origin="tests/t.jsonl:1",
    )


ECHOES: dict[str, dict[str, Any]] = {
    # Each protocol's answer, its text echoing the key (a careless endpoint): recorded only redacted.
    "anthropic-computer": {"content": [{"type": "text", "text": f"done {KEY}"}], "stop_reason": "end_turn"},
    "openai-computer": {
        "id": "resp_1",
        "status": "completed",
        "output": [{"type": "message", "content": [{"type": "output_text", "text": f"done {KEY}"}]}],
    },
    "tool-calling": {
        "choices": [{"message": {"role": "assistant", "content": f"done {KEY}"}, "finish_reason": "stop"}]
    },
    "uitars": {"choices": [{"message": {"role": "assistant", "content": f"x {KEY}"}, "finish_reason": "stop"}]},
}


@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_key_given_to_each_runner_never_reaches_what_it_records(
    agent: str, api_key: str, no_key_in_logs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ModelServer(models=["m"], api_key=KEY, echo_key=True) as server:
        settings = Settings(
            model_url=server.url(AGENTS[agent]),  # type: ignore[arg-type]
            model="m",
            agent=agent,
            model_key_env=KEY_ENV,
            model_retries=0,
            keep_model_io=True,
        )
        made = make_model_client(settings)
        runner = make_runner(agent, RunnerContext(entry=_entry(), settings=settings, model=made))
        observation = Observation("Rename the file.", png(), (1920, 1080), 0)
        server.script("m", Json(ECHOES[agent]))
        decision = runner.predict(observation)
        recorded = (
            f"{decision.response} {decision.parse_error} {decision.details} {[a.recorded() for a in decision.actions]}"
        )
        recorded += " ".join(m.text for m in runner.last_messages)
        assert KEY not in recorded and "***" in recorded
        # A refused key echoed back by the endpoint: the error names the variable, never the key.
        monkeypatch.setenv(KEY_ENV, "sk-wrong-key")
        wrong = make_model_client(settings)
        other = make_runner(agent, RunnerContext(entry=_entry(), settings=settings, model=wrong))
        with pytest.raises(ModelError) as info:
            other.predict(observation)
        assert "sk-wrong-key" not in str(info.value) and KEY_ENV in str(info.value)
