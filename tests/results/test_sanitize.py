from __future__ import annotations

import pytest

from pytest_osworld.sanitize import collect_secrets, is_env_name, sanitize, scrub
from pytest_osworld.settings import Settings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key is abcd-1234-secret!", "key is ***!"),
        ("proxy http://user:p4ss@10.0.0.1:3128 refused", "proxy http://***@10.0.0.1:3128 refused"),
        ("clone https://oauth2:tok@git.example/x.git", "clone https://***@git.example/x.git"),
        ("header Authorization: Bearer eyJhbGciOi.J9x", "header Authorization: Bearer ***"),
        ("url ?api_key=12345&x=1", "url ?api_key=***&x=1"),
        ('{"password": "s3cret"}', '{"password": "***"}'),
        ("(token=abcdef123456)", "(token=***)"),
        ("used sk-proj-ABCDEFGHIJKLMNOPQRST1234", "used ***"),
        ("google AIza" + "B" * 35, "google ***"),
    ],
)
def test_sanitize_removes_secrets(text: str, expected: str) -> None:
    assert sanitize(text, ["abcd-1234-secret"]) == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=512, prompt_tokens: 10, completion_tokens=3",
        "tokens: 100",
        "the password dialog did not open",
        "http://localhost:5000/screenshot answered 500",
        "score 0.5: the agent said DONE",
    ],
)
def test_sanitize_keeps_ordinary_text(text: str) -> None:
    assert sanitize(text, []) == text


def test_short_secrets_are_not_replaced_everywhere() -> None:
    assert sanitize("a b c", ["a"]) == "a b c"


def test_scrub_redacts_secret_keys_and_strings_inside() -> None:
    value = {
        "headers": {"Authorization": "Bearer x", "x-api-key": "k", "Content-Type": "json"},
        "body": ["hello K3Y-VALUE-123"],
        "usage": {"prompt_tokens": 5},
        "token": None,
    }
    assert scrub(value, ["K3Y-VALUE-123"]) == {
        "headers": {"Authorization": "***", "x-api-key": "***", "Content-Type": "json"},
        "body": ["hello ***"],
        "usage": {"prompt_tokens": 5},
        "token": None,
    }


def test_collect_secrets_finds_the_model_key_and_secret_named_variables() -> None:
    settings = Settings(model_key_env="MY_ENDPOINT_KEY", client_password="password")
    env = {
        "MY_ENDPOINT_KEY": "k-123456789",
        "HF_TOKEN": "hf_abcdefghij",
        "TOKENIZERS_PARALLELISM": "false",
        "HOME": "/root/somewhere",
        "DB_PASSWORD": "short",
    }
    assert collect_secrets(settings, env) == ("hf_abcdefghij", "k-123456789")
    assert "guest-pass" in collect_secrets(Settings(client_password="guest-pass"), {})


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "_x", "key2"])
def test_a_variable_name_is_an_env_name(name: str) -> None:
    assert is_env_name(name)


# A key pasted where the variable's name belongs is refused (and so never repeated); a trailing newline
# (what `$` in a pattern lets through) is no name either.
@pytest.mark.parametrize("name", ["", "2KEY", "sk-proj-abc", "KEY\n", "A B", "KEY="])
def test_anything_else_is_not(name: str) -> None:
    assert not is_env_name(name)
