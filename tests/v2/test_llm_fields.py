"""The checks of one LLM endpoint setting's value, shared by the judge's configuration and the simulated user's."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_osworld.v2.llm import fields
from pytest_osworld.v2.llm.settings import JudgeConfigError
from pytest_osworld.v2.llm.user_sim import UserSimError, UserSimSpecError


@pytest.mark.parametrize("value", ["lots", 0, 2.5, True, None])
def test_a_bad_whole_number_names_its_source_and_the_minimum(value: Any) -> None:
    with pytest.raises(UserSimSpecError) as raised:
        fields.whole(value, "task 024: user_simulator.max_tokens", error=UserSimSpecError, minimum=1)
    assert str(raised.value) == (
        f"task 024: user_simulator.max_tokens: expected a whole number of 1 or more, got {value!r}"
    )


def test_a_whole_number_is_read_from_text_or_a_whole_float() -> None:
    assert fields.whole("12", "OSWORLD_USER_SIM_MAX_TOKENS", error=UserSimError) == 12
    assert fields.whole(3.0, "options.max_tokens", error=JudgeConfigError, minimum=3) == 3


@pytest.mark.parametrize("value", ["-0.5", -1, "warm", float("nan"), False])
def test_a_number_out_of_range_names_its_source_and_the_minimum(value: Any) -> None:
    with pytest.raises(JudgeConfigError) as raised:
        fields.number(value, "OSWORLD_EVAL_MODEL_TEMPERATURE", error=JudgeConfigError, minimum=0.0)
    assert str(raised.value) == f"OSWORLD_EVAL_MODEL_TEMPERATURE: expected a number of 0 or more, got {value!r}"


def test_an_unknown_choice_names_its_source_and_the_allowed_values() -> None:
    assert fields.choice(" HIGH ", "options.image_detail", ("low", "high"), error=JudgeConfigError) == "high"
    with pytest.raises(JudgeConfigError) as raised:
        fields.choice("ultra", "options.image_detail", ("low", "high", "auto"), error=JudgeConfigError)
    assert str(raised.value) == "options.image_detail: expected one of low, high, auto, got 'ultra'"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (
            "acme",
            "OSWORLD_USER_SIM_PROVIDER: the provider 'acme' is unknown "
            "(supported: openai, openai_compatible, anthropic, claude)",
        ),
        (
            "Bedrock",
            "OSWORLD_USER_SIM_PROVIDER: the provider 'bedrock' is not supported here "
            "(supported: openai, openai_compatible, anthropic, claude); "
            "serve the model behind an OpenAI-compatible endpoint and use openai_compatible",
        ),
    ],
)
def test_an_unknown_provider_names_its_source_and_the_supported_ones(value: str, problem: str) -> None:
    with pytest.raises(UserSimError) as raised:
        fields.provider(value, "OSWORLD_USER_SIM_PROVIDER", error=UserSimError)
    assert str(raised.value) == problem


def test_a_provider_is_named_as_upstream_and_gives_its_client() -> None:
    assert fields.provider(" Claude ", "options.provider", error=JudgeConfigError) == ("claude", "anthropic")
    assert fields.provider("openai_compatible", "judge_provider", error=JudgeConfigError) == (
        "openai_compatible",
        "openai",
    )


def test_the_judge_words_an_unknown_provider_its_own_way() -> None:
    with pytest.raises(JudgeConfigError, match=r"^options.provider: unknown judge provider 'watsonx' \(supported: "):
        fields.provider("watsonx", "options.provider", error=JudgeConfigError, unknown="unknown judge provider {!r}")


def test_an_unusable_url_names_its_source() -> None:
    with pytest.raises(JudgeConfigError, match=r"^options.base_url: the judge URL is not usable: expected an http"):
        fields.url("gpu:8000", "options.base_url", error=JudgeConfigError, what="the judge URL")
    assert fields.url("http://gpu:8000/v1", "judge_url", error=JudgeConfigError).base == "http://gpu:8000/v1"


def test_a_missing_key_variable_names_where_it_was_named_and_asks_to_export_the_key() -> None:
    with pytest.raises(UserSimError) as raised:
        fields.key(
            "NO_SUCH_KEY",
            "OSWORLD_USER_SIM_API_KEY_ENV",
            {"NO_SUCH_KEY": " "},
            error=UserSimError,
            whose="the simulated user's",
        )
    assert str(raised.value) == (
        "OSWORLD_USER_SIM_API_KEY_ENV: the environment variable NO_SUCH_KEY is not set or empty; "
        "export the simulated user's API key in it"
    )
    key = fields.key("MY_KEY", "options.api_key_env", {"MY_KEY": " sk-1 "}, error=JudgeConfigError, whose="the judge's")
    assert key.reveal() == "sk-1"


def test_a_key_given_for_a_variable_name_is_refused_without_repeating_it() -> None:
    with pytest.raises(JudgeConfigError) as raised:
        fields.env_name("sk-abc def", "options.api_key_env", error=JudgeConfigError)
    message = str(raised.value)
    assert message.startswith("options.api_key_env must be the NAME of an environment variable")
    assert "sk-abc" not in message
