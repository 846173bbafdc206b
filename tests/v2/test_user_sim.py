"""The simulated user: fixed, scripted and llm users (the last against a real local model server), the
environment's overrides, inheritance of the judge's configuration, failures, and bad specs."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pytest_osworld.v2.llm.judge import Judge
from pytest_osworld.v2.llm.settings import JudgeLayer, JudgeSettings
from pytest_osworld.v2.llm.user_sim import (
    DEFAULT_RESPONSE,
    LlmUser,
    UserSimError,
    UserSimSpecError,
    make_user_simulator,
)
from tests.support.model_server import ModelServer, Reply, Status, empty
from tests.v2.conftest import KEY, KEY_ENV

NO_JUDGE = JudgeSettings()


def judge_settings(server: ModelServer, **layer: Any) -> JudgeSettings:
    """A judge on ``server`` as a profile would give it (below the environment)."""
    return JudgeSettings(configured=JudgeLayer(base_url=server.openai_url, **layer))


LLM_SPEC: dict[str, Any] = {
    "type": "llm",
    "model": "gpt-4o",
    "knowledge": "The trip is from the 3rd to the 9th of May. The budget is 800 euros.",
    "persona": "A busy nurse who answers in short sentences.",
}


@pytest.fixture
def server() -> Any:
    with ModelServer(models=["gpt-4o", "sim-model"]) as srv:
        yield srv


# --- fixed and scripted


def test_a_fixed_user_always_gives_its_response() -> None:
    user = make_user_simulator({"type": "fixed", "response": "Yes, please proceed."}, NO_JUDGE)
    assert user.respond("Shall I delete the file?") == "Yes, please proceed."
    assert user.respond("Really?") == "Yes, please proceed."
    assert user.get_history() == [
        {"question": "Shall I delete the file?", "answer": "Yes, please proceed."},
        {"question": "Really?", "answer": "Yes, please proceed."},
    ]
    assert user.record() is None  # no model calls to count
    assert all(e.ok and e.model is None for e in user.exchanges())


def test_a_scripted_user_answers_from_the_first_keyword_found_case_insensitively() -> None:
    spec = {
        "type": "scripted",
        "knowledge": {"Date of Birth": "1990-03-15", "name": "John Smith", "birth": "never used: a later key"},
        "default_response": "I don't have that.",
    }
    user = make_user_simulator(spec, NO_JUDGE)
    assert user.respond("What is your DATE OF BIRTH, and your name?") == "1990-03-15"
    assert user.respond("what's your name?") == "John Smith"
    assert user.respond("Where do you live?") == "I don't have that."
    assert [h["answer"] for h in user.get_history()] == ["1990-03-15", "John Smith", "I don't have that."]
    user.reset()
    assert user.get_history() == []


def test_a_spec_without_type_is_scripted_and_defaults_apply() -> None:
    user = make_user_simulator({"knowledge": {"colour": 7}}, NO_JUDGE)
    assert user.kind == "scripted"
    assert user.respond("Which colour?") == "7"
    assert user.respond("Which size?") == DEFAULT_RESPONSE


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"type": "robot"}, r"task 024: user_simulator.type: unknown type 'robot'; use llm, scripted or fixed"),
        ({"type": 3}, r"task 024: user_simulator.type: expected text, got int 3"),
        ({"type": "fixed"}, r"task 024: user_simulator.response: missing; give the answer the user always gives"),
        ({"type": "fixed", "response": ["a"]}, r"user_simulator.response: expected text, got list"),
        ({"type": "scripted"}, r"user_simulator.knowledge: missing; a scripted user needs a mapping"),
        ({"type": "scripted", "knowledge": "text"}, r"user_simulator.knowledge: expected a mapping, got str"),
        ({"type": "llm"}, r"user_simulator.knowledge: missing; an llm user answers only from what it knows"),
        ({**LLM_SPEC, "knowledge": 5}, r"user_simulator.knowledge: expected text or a mapping, got int"),
        ({**LLM_SPEC, "api_key": "sk-in-the-task"}, r"user_simulator.api_key: a key written in a task is not used"),
        ({**LLM_SPEC, "provider": "bedrock"}, r"user_simulator.provider: the provider 'bedrock' is not supported here"),
        ({**LLM_SPEC, "provider": "acme"}, r"user_simulator.provider: the provider 'acme' is unknown"),
        ({**LLM_SPEC, "temperature": "hot"}, r"user_simulator.temperature: expected a number of 0 or more, got 'hot'"),
        ({**LLM_SPEC, "max_tokens": 0}, r"user_simulator.max_tokens: expected a whole number of 1 or more, got 0"),
        ({**LLM_SPEC, "reasoning_effort": "max"}, r"user_simulator.reasoning_effort: expected one of none, minimal"),
        ({**LLM_SPEC, "base_url": "gpu:8000"}, r"user_simulator.base_url: not usable: expected an http\(s\) URL"),
        ({**LLM_SPEC, "api_key_env": "sk-1 2"}, r"user_simulator.api_key_env must be the NAME of an environment"),
    ],
)
def test_a_bad_spec_is_an_error_naming_the_field(spec: dict[str, Any], problem: str) -> None:
    with pytest.raises(UserSimSpecError, match=problem) as raised:
        make_user_simulator(spec, NO_JUDGE, task_id="024")
    assert raised.value.reason == "setup_error"  # the task cannot be set up as written
    assert "sk-in-the-task" not in str(raised.value)


def test_a_spec_that_is_not_a_mapping_is_an_error() -> None:
    with pytest.raises(UserSimSpecError, match=r"user_simulator: expected a mapping with a type"):
        make_user_simulator(["llm"], NO_JUDGE)  # type: ignore[arg-type]


# --- llm


def test_an_llm_user_plays_the_user_from_its_knowledge_and_remembers_the_conversation(server: ModelServer) -> None:
    server.script("gpt-4o", Reply("From the 3rd to the 9th of May.", 50, 9), Reply("About 800 euros.", 70, 4))
    user = make_user_simulator(LLM_SPEC, judge_settings(server), instruction="Book the cheapest flight.")
    assert isinstance(user, LlmUser)
    assert user.respond("Which dates should I book?") == "From the 3rd to the 9th of May."
    assert user.respond("What is the budget?") == "About 800 euros."
    first, second = server.completions("gpt-4o")
    system = first.body["messages"][0]["content"]
    assert LLM_SPEC["knowledge"] in system and LLM_SPEC["persona"] in system
    assert "Book the cheapest flight." in system
    assert first.body["max_tokens"] == 256  # upstream's default for the simulated user
    assert second.roles() == ["system", "user", "assistant", "user"]
    assert second.texts()[1:] == [
        "Which dates should I book?",
        "From the 3rd to the 9th of May.",
        "What is the budget?",
    ]
    assert user.get_history() == [
        {"question": "Which dates should I book?", "answer": "From the 3rd to the 9th of May."},
        {"question": "What is the budget?", "answer": "About 800 euros."},
    ]
    calls = user.record()
    assert calls is not None and (calls.calls, calls.failed, calls.usage.prompt_tokens) == (2, 0, 120)
    user.reset(instruction="Book a train instead.")
    server.script("gpt-4o", Reply("Fine."))
    user.respond("Train?")
    third = server.completions("gpt-4o")[2]
    assert third.roles() == ["system", "user"] and "Book a train instead." in third.texts()[0]


def test_the_specs_own_instruction_wins_over_the_tasks(server: ModelServer) -> None:
    server.script("gpt-4o", Reply("Yes."))
    spec = {**LLM_SPEC, "instruction": "Pay with the company card."}
    make_user_simulator(spec, judge_settings(server), instruction="something else").respond("Card?")
    assert "Pay with the company card." in server.completions()[0].texts()[0]


def test_the_environment_overrides_the_spec_and_unset_values_inherit_the_judges(
    server: ModelServer, monkeypatch: pytest.MonkeyPatch, api_key: str
) -> None:
    monkeypatch.setenv("OSWORLD_USER_SIM_MODEL", "sim-model")
    monkeypatch.setenv("OSWORLD_USER_SIM_MAX_TOKENS", "40")
    monkeypatch.setenv("OSWORLD_USER_SIM_TEMPERATURE", "0.2")
    monkeypatch.setenv("OSWORLD_USER_SIM_REASONING_EFFORT", "low")
    spec = {**LLM_SPEC, "max_tokens": 100, "temperature": 1.0}
    server.script("sim-model", Reply("OK."))
    # The judge's URL and key variable come from the profile: the user inherits both.
    user = make_user_simulator(spec, judge_settings(server, key_env=KEY_ENV))
    assert user.respond("Go?") == "OK."
    request = server.completions("sim-model")[0]
    assert (request.body["max_tokens"], request.body["temperature"], request.body["reasoning_effort"]) == (
        40,
        0.2,
        "low",
    )
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_the_users_own_url_and_key_variables_win(monkeypatch: pytest.MonkeyPatch, server: ModelServer) -> None:
    with ModelServer(models=["gpt-4o"], api_key=KEY) as own:
        own.script("gpt-4o", Reply("Mine."))
        monkeypatch.setenv("OSWORLD_USER_SIM_BASE_URL", own.openai_url)
        monkeypatch.setenv("OSWORLD_USER_SIM_API_KEY", KEY)
        user = make_user_simulator(LLM_SPEC, judge_settings(server))
        assert user.respond("Whose?") == "Mine."
        assert own.completions()[0].headers["authorization"] == f"Bearer {KEY}"
        assert server.completions() == [] and KEY not in repr(user) + repr(user.exchanges())


def test_the_model_name_and_model_base_url_variables_are_not_read(
    server: ModelServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OSWORLD_USER_SIM_MODEL_NAME", "sim-model")
    monkeypatch.setenv("OSWORLD_USER_SIM_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
    server.script("gpt-4o", Reply("Spec's model."))
    with caplog.at_level(logging.WARNING, logger="pytest_osworld.v2.llm.user_sim"):
        user = make_user_simulator(LLM_SPEC, judge_settings(server))
    assert user.respond("Which model?") == "Spec's model."  # neither the name nor the URL was taken
    assert "OSWORLD_USER_SIM_MODEL_NAME is not read (nor is it upstream); set OSWORLD_USER_SIM_MODEL" in caplog.text
    assert (
        "OSWORLD_USER_SIM_MODEL_BASE_URL is not read (nor is it upstream); set OSWORLD_USER_SIM_BASE_URL" in caplog.text
    )


def test_a_spec_without_model_asks_for_gpt_4o_as_upstream(server: ModelServer) -> None:
    server.script("gpt-4o", Reply("Yes."))
    spec = {k: v for k, v in LLM_SPEC.items() if k != "model"}
    make_user_simulator(spec, judge_settings(server, model="sim-model")).respond("?")
    assert server.completions()[0].model == "gpt-4o"  # the judge's model is not the user's


def test_the_judges_clients_can_be_shared(server: ModelServer) -> None:
    server.script("gpt-4o", Reply("YES"), Reply("Sure."))
    judge = Judge(judge_settings(server))
    judge.generate_text("same?")
    user = make_user_simulator(LLM_SPEC, judge.settings, clients=judge.clients)
    assert user.respond("Go on?") == "Sure."
    assert repr(judge.clients) == "ClientPool(1 clients)"
    assert len(judge.calls()) == 1  # the user's exchanges are not judge calls


@pytest.mark.parametrize(
    ("behaviours", "problem"),
    [
        (
            [Status(500)] * 3,
            r"the simulated user's model at http://127.0.0.1:\d+/v1 \(model gpt-4o\) did not answer: "
            r"HTTP 500: scripted status 500 \(3 attempts\)",
        ),
        ([empty()], r"the simulated user's model at .* \(model gpt-4o\) gave an empty answer"),
    ],
    ids=["5xx", "empty"],
)
def test_a_failed_or_empty_answer_is_a_user_sim_error(server: ModelServer, behaviours: list[Any], problem: str) -> None:
    server.script("gpt-4o", Reply("Monday."), *behaviours)
    user = make_user_simulator(LLM_SPEC, judge_settings(server))
    assert user.respond("Which day?") == "Monday."
    with pytest.raises(UserSimError, match=problem) as raised:
        user.respond("Which time?")
    assert raised.value.reason == "user_sim_error"
    assert [e.ok for e in user.exchanges()] == [True, False]
    assert user.get_history() == [{"question": "Which day?", "answer": "Monday."}]
    assert user.error() == str(raised.value)
    calls = user.record()
    assert calls is not None and (calls.calls, calls.failed) == (2, 1)


@pytest.mark.parametrize(
    ("environ", "problem"),
    [
        ({"OSWORLD_USER_SIM_TEMPERATURE": "hot"}, r"OSWORLD_USER_SIM_TEMPERATURE: expected a number of 0 or more"),
        ({"OSWORLD_USER_SIM_MAX_TOKENS": "-1"}, r"OSWORLD_USER_SIM_MAX_TOKENS: expected a whole number of 1 or more"),
        ({"OSWORLD_USER_SIM_PROVIDER": "gemini"}, r"OSWORLD_USER_SIM_PROVIDER: the provider 'gemini' is not supported"),
        (
            {"OSWORLD_USER_SIM_API_KEY_ENV": "NO_SUCH_KEY_VARIABLE"},
            r"OSWORLD_USER_SIM_API_KEY_ENV: the environment variable NO_SUCH_KEY_VARIABLE is not set or empty",
        ),
        (
            {"OSWORLD_EVAL_MODEL_RETRY_ATTEMPTS": "many"},
            r"the simulated user's model cannot be configured: OSWORLD_EVAL_MODEL_RETRY_ATTEMPTS: expected a whole",
        ),
    ],
)
def test_a_bad_environment_value_is_a_user_sim_error_naming_it(
    server: ModelServer, environ: dict[str, str], problem: str
) -> None:
    with pytest.raises(UserSimError, match=problem):
        make_user_simulator(LLM_SPEC, judge_settings(server), environ=environ)
    assert server.completions() == []
