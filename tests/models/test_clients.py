"""The OpenAI-compatible and Anthropic clients against a real local HTTP server."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pytest_osworld.agents.endpoint import make_model_client
from pytest_osworld.errors import OsworldError
from pytest_osworld.models import Image, Message, ModelConfigError, ModelError, RetryPolicy
from pytest_osworld.models.transport import HttpModelClient
from pytest_osworld.settings import Settings
from tests.models.conftest import KEY, KEY_ENV
from tests.support.model_server import Api, Drop, Hang, Malformed, ModelServer, Reply, Status, empty

APIS: list[Api] = ["openai", "anthropic"]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16  # the bytes are passed through, never decoded


class Waits:
    """A RetryPolicy sleep that records the waits instead of sleeping them."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def client_for(
    server: ModelServer, api: Api, *, waits: Waits | None = None, retries: int = 3, **settings: Any
) -> HttpModelClient:
    values = server.settings(api, model_key_env=KEY_ENV, model_retries=retries, **settings)
    policy = RetryPolicy(retries=retries, base=0.01, sleep=waits or Waits())
    client = make_model_client(Settings(**values), retry=policy)
    assert client is not None
    return client


def prompt() -> list[Message]:
    return [Message.system("be brief"), Message.user("what is on screen?", Image(PNG))]


@pytest.fixture
def server(api_key: str) -> Any:
    with ModelServer(models=["test-model", "other-model"], api_key=api_key) as srv:
        yield srv


@pytest.mark.parametrize("api", APIS)
def test_complete_counts_tokens_and_cost(server: ModelServer, api: Api, no_key_in_logs: Any) -> None:
    server.script(
        "test-model", Reply("```python\npyautogui.click(1, 2)\n```", prompt_tokens=1200, completion_tokens=300)
    )
    with client_for(server, api, prompt_price=2.0, completion_price=10.0) as client:
        client.check()
        completion = client.complete(prompt())
    assert completion.text == "```python\npyautogui.click(1, 2)\n```"
    assert completion.usage.prompt_tokens == 1200
    assert completion.usage.completion_tokens == 300
    assert completion.usage.cost == pytest.approx((1200 * 2.0 + 300 * 10.0) / 1_000_000)
    assert completion.seconds > 0
    request = server.completions("test-model")[0]
    assert request.images() == [PNG]
    assert "be brief" in request.text() and "what is on screen?" in request.text()
    if api == "openai":
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert request.roles() == ["system", "user"]
    else:
        assert request.headers["x-api-key"] == KEY
        assert request.headers["anthropic-version"]
        assert request.body["system"] == "be brief"
        assert request.roles() == ["user"]
        assert request.body["max_tokens"] > 0


@pytest.mark.parametrize("api", APIS)
def test_cost_is_none_without_prices(server: ModelServer, api: Api) -> None:
    server.script("test-model", Reply("DONE"))
    with client_for(server, api) as client:
        assert client.complete(prompt()).usage.cost is None


@pytest.mark.parametrize("api", APIS)
def test_sampling_from_settings_and_per_request_overrides(server: ModelServer, api: Api) -> None:
    server.script("test-model", Reply("DONE"), Reply("DONE"))
    with client_for(server, api, temperature=0.5, top_p=0.9, max_tokens=77) as client:
        client.complete(prompt())
        client.complete(prompt(), temperature=0.0, max_tokens=12)
    first, second = (r.body for r in server.completions("test-model"))
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.5, 0.9, 77)
    assert (second["temperature"], second["top_p"], second["max_tokens"]) == (0.0, 0.9, 12)


def test_task_overrides_reach_the_request(server: ModelServer) -> None:
    settings = Settings(
        **server.settings("openai", model_key_env=KEY_ENV, temperature=0.7),
        task_overrides={"t1": {"temperature": 0.1, "max_tokens": 50}},
    )
    from pytest_osworld.models import Sampling

    server.script("test-model", Reply("DONE"))
    with make_model_client(settings) as client:  # type: ignore[union-attr]
        client.complete(prompt(), **Sampling.from_settings(settings.for_task("t1")).as_overrides())
    body = server.completions()[0].body
    assert (body["temperature"], body["max_tokens"]) == (0.1, 50)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("answer", [empty(), Reply(None)])
def test_empty_answer_is_empty_text(server: ModelServer, api: Api, answer: Reply) -> None:
    server.script("test-model", answer)
    with client_for(server, api) as client:
        assert client.complete(prompt()).text == ""


@pytest.mark.parametrize("api", APIS)
def test_429_burst_then_success_honours_retry_after(server: ModelServer, api: Api, no_key_in_logs: Any) -> None:
    server.script("test-model", Status(429, retry_after=2), Status(429, retry_after=0), Reply("DONE"))
    waits = Waits()
    with client_for(server, api, waits=waits) as client:
        completion = client.complete(prompt())
    assert completion.text == "DONE"
    assert completion.attempts == 3
    assert len(server.completions()) == 3
    assert waits.seconds[0] == pytest.approx(2.0)  # the server's Retry-After, not the 0.01 s backoff
    assert waits.seconds[1] <= 0.02  # backoff of the second retry: 0.02 s at most, with jitter


@pytest.mark.parametrize("api", APIS)
def test_retries_exhausted_raise_model_error(server: ModelServer, api: Api, no_key_in_logs: Any) -> None:
    server.script("test-model", *[Status(503)] * 4)
    waits = Waits()
    with client_for(server, api, waits=waits, retries=3) as client, pytest.raises(ModelError) as info:
        client.complete(prompt())
    assert isinstance(info.value, OsworldError)
    assert info.value.status == 503 and info.value.attempts == 4
    assert "failed after 4 attempt(s)" in str(info.value) and "HTTP 503" in str(info.value)
    assert server.url(api).split("//")[1] in str(info.value)  # names the endpoint
    assert len(server.completions()) == 4
    assert len(waits.seconds) == 3
    # Exponential backoff with full jitter: each wait is at most base * 2^(n-1).
    assert all(0 <= w <= 0.01 * 2**i for i, w in enumerate(waits.seconds))


@pytest.mark.parametrize("api", APIS)
def test_500_is_retried(server: ModelServer, api: Api) -> None:
    server.script("test-model", Status(500), Reply("WAIT"))
    with client_for(server, api) as client:
        assert client.complete(prompt()).text == "WAIT"
    assert len(server.completions()) == 2


@pytest.mark.parametrize("api", APIS)
def test_hung_connection_times_out_and_is_retried(server: ModelServer, api: Api) -> None:
    server.script("test-model", Hang(60), Reply("DONE"))
    started = time.monotonic()
    with client_for(server, api, model_timeout=0.5) as client:
        completion = client.complete(prompt())
    assert completion.text == "DONE"
    assert completion.attempts == 2
    assert 0.5 <= time.monotonic() - started < 10


def test_hang_past_all_retries_is_a_model_error(server: ModelServer) -> None:
    server.script("test-model", Hang(60), Hang(60))
    with client_for(server, "openai", model_timeout=0.3, retries=1) as client, pytest.raises(ModelError) as info:
        client.complete(prompt())
    assert "no answer within 0.3 s" in str(info.value)


@pytest.mark.parametrize("api", APIS)
def test_dropped_connection_is_retried(server: ModelServer, api: Api) -> None:
    server.script("test-model", Drop(), Reply("DONE"))
    with client_for(server, api) as client:
        assert client.complete(prompt()).text == "DONE"
    assert len(server.completions()) == 2


@pytest.mark.parametrize("api", APIS)
def test_malformed_json_is_retried_then_fails(server: ModelServer, api: Api) -> None:
    server.script("test-model", Malformed(), Reply("DONE"), Malformed(), Malformed())
    with client_for(server, api, retries=1) as client:
        assert client.complete(prompt()).text == "DONE"
        with pytest.raises(ModelError, match="not valid JSON"):
            client.complete(prompt())


@pytest.mark.parametrize("api", APIS)
def test_other_4xx_is_not_retried(server: ModelServer, api: Api) -> None:
    server.script("test-model", Status(400, {"error": {"message": "prompt is too long: 300000 tokens"}}), Reply("DONE"))
    with client_for(server, api) as client, pytest.raises(ModelError) as info:
        client.complete(prompt())
    assert "refused the request" in str(info.value) and "prompt is too long" in str(info.value)
    assert info.value.status == 400 and info.value.attempts == 1
    assert len(server.completions()) == 1


@pytest.mark.parametrize("api", APIS)
def test_check_rejects_a_refused_key(api: Api, monkeypatch: pytest.MonkeyPatch, no_key_in_logs: Any) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    # The server wants another key and echoes the one it got, as careless endpoints do.
    with ModelServer(api_key="the-right-key", echo_key=True) as server:
        client = client_for(server, api)
        with pytest.raises(ModelConfigError) as info:
            client.check()
        message = str(info.value)
        assert "refused the credentials" in message and "HTTP 401" in message
        assert KEY_ENV in message  # the fix names the variable
        assert server.url(api).split("//")[1] in message
        assert KEY not in message and KEY not in repr(info.value) and KEY not in repr(client)
        assert "***" in message  # the echoed key is masked
        # The same refusal at a completion is a ModelError, not retried, and masked too.
        with pytest.raises(ModelError) as refused:
            client.complete(prompt())
        assert KEY not in str(refused.value) and refused.value.status == 401
        client.close()


@pytest.mark.parametrize("api", APIS)
def test_check_rejects_an_unknown_model(server: ModelServer, api: Api) -> None:
    with client_for(server, api, model="gpt-nonexistent") as client, pytest.raises(ModelConfigError) as info:
        client.check()
    message = str(info.value)
    assert "does not serve model 'gpt-nonexistent'" in message
    assert "test-model" in message and "other-model" in message
    assert "--osworld-model" in message


def test_check_without_a_key_says_how_to_give_one(monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelServer(api_key="needed") as server:
        client = make_model_client(Settings(**server.settings("openai")))
        assert client is not None
        with client, pytest.raises(ModelConfigError, match="--osworld-model-key-env"):
            client.check()


def test_check_unreachable_endpoint() -> None:
    with ModelServer() as server:
        url = server.openai_url
    # The server is gone: its port refuses connections.
    client = make_model_client(Settings(model_url=url, model="test-model"))
    assert client is not None
    with client, pytest.raises(ModelConfigError) as info:
        client.check()
    assert "cannot reach the model endpoint" in str(info.value)
    assert url in str(info.value) and "--osworld-model-url" in str(info.value)


def test_check_wrong_base_path(server: ModelServer) -> None:
    client = make_model_client(Settings(model_url=server.base_url + "/api", model="test-model", model_key_env=KEY_ENV))
    with client, pytest.raises(ModelConfigError, match="has no model list .*API base"):  # type: ignore[union-attr]
        client.check()  # type: ignore[union-attr]


def test_check_without_model_lists_what_is_served(server: ModelServer) -> None:
    client = make_model_client(Settings(model_url=server.openai_url, model_key_env=KEY_ENV))
    with client, pytest.raises(ModelConfigError, match="set --osworld-model.*test-model"):  # type: ignore[union-attr]
        client.check()  # type: ignore[union-attr]


def test_anthropic_check_follows_pages_and_aliases(api_key: str) -> None:
    with ModelServer(
        models=["claude-a", "claude-b", "claude-c"],
        api_key=api_key,
        aliases={"claude-latest": "claude-c"},
        models_page_size=1,
    ) as server:
        with client_for(server, "anthropic", model="claude-c") as client:
            client.check()
        pages = [r for r in server.requests if r.path == "/v1/models"]
        assert len(pages) == 3 and pages[1].query["after_id"] == ["claude-a"]
        with client_for(server, "anthropic", model="claude-latest") as client:
            client.check()
        with client_for(server, "anthropic", model="claude-x") as client, pytest.raises(ModelConfigError):
            client.check()


def test_anthropic_base_url_with_v1(server: ModelServer) -> None:
    server.script("test-model", Reply("DONE"))
    settings = Settings(
        model_url=server.base_url + "/v1", model="test-model", model_api="anthropic", model_key_env=KEY_ENV
    )
    with make_model_client(settings) as client:  # type: ignore[union-attr]
        client.check()
        assert client.complete(prompt()).text == "DONE"
    assert server.completions()[0].path == "/v1/messages"


def test_anthropic_merges_turns_and_system(server: ModelServer) -> None:
    server.script("test-model", Reply("DONE"))
    messages = [
        Message.system("rules"),
        Message.user("one"),
        Message.user("two", Image(PNG)),
        Message.assistant("ok"),
        Message.user("three"),
    ]
    with client_for(server, "anthropic") as client:
        client.complete(messages)
    body = server.completions()[0].body
    assert body["system"] == "rules"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in body["messages"][0]["content"]] == ["text", "text", "image"]


def test_openai_text_only_messages_are_plain_strings(server: ModelServer) -> None:
    server.script("test-model", Reply("DONE"))
    with client_for(server, "openai") as client:
        client.complete(
            [Message.system("rules"), Message.user("hello"), Message.assistant("hi"), Message.user("x", Image(PNG))]
        )
    messages = server.completions()[0].body["messages"]
    assert messages[0] == {"role": "system", "content": "rules"}
    assert messages[1] == {"role": "user", "content": "hello"}
    assert messages[3]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_describe_and_repr_hold_no_credentials(server: ModelServer) -> None:
    url = server.openai_url.replace("http://", "http://alice:s3cret-pass@")
    client = make_model_client(Settings(model_url=url, model="test-model", model_key_env=KEY_ENV, model_backoff=0.01))
    assert client is not None
    with client:
        assert client.describe() == {"api": "openai", "name": "test-model", "host": f"127.0.0.1:{server.port}"}
        text = repr(client) + repr(client.describe()) + repr(vars(client))
        assert KEY not in text and "s3cret-pass" not in text and "alice" not in text
        server.script("test-model", Status(500, "echo alice:s3cret-pass " + KEY), Status(500), Status(500), Status(500))
        with pytest.raises(ModelError) as info:
            client.complete(prompt())
        assert "s3cret-pass" not in str(info.value) and KEY not in str(info.value)
    # The key travelled as the bearer header; the URL's credentials were not sent as a second one.
    assert server.completions()[0].headers["authorization"] == f"Bearer {KEY}"
    assert "alice" not in server.completions()[0].path


def test_url_credentials_travel_as_basic_auth(model_server: ModelServer) -> None:
    url = model_server.openai_url.replace("http://", "http://alice:pw@")
    model_server.script("test-model", Reply("DONE"))
    with make_model_client(Settings(model_url=url, model="test-model")) as client:  # type: ignore[union-attr]
        client.complete(prompt())
    assert model_server.completions()[0].headers["authorization"].startswith("Basic ")


def test_missing_key_variable_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ModelConfigError, match=f"{KEY_ENV} .*is not set"):
        make_model_client(Settings(model_url="http://127.0.0.1:9/v1", model="m", model_key_env=KEY_ENV))


def test_a_key_given_instead_of_a_variable_name_is_not_repeated() -> None:
    with pytest.raises(ModelConfigError) as info:
        make_model_client(Settings(model_url="http://127.0.0.1:9/v1", model="m", model_key_env="sk-abc/123+xyz"))
    assert "sk-abc" not in str(info.value) and "NAME of an environment variable" in str(info.value)


def test_no_url_no_client() -> None:
    assert make_model_client(Settings()) is None


def test_bad_url_is_a_config_error() -> None:
    with pytest.raises(ModelConfigError, match="--osworld-model-url"):
        make_model_client(Settings(model_url="gpu:8000", model="m"))
    with pytest.raises(ModelConfigError, match="query string"):
        make_model_client(Settings(model_url="http://gpu:8000/v1?api-key=abc", model="m"))


def test_script_exhausted_fails_fast_with_a_reason(model_server: ModelServer) -> None:
    client = make_model_client(Settings(**model_server.settings("openai")))
    with client, pytest.raises(ModelError, match="no scripted answer left"):  # type: ignore[union-attr]
        client.complete(prompt())  # type: ignore[union-attr]


def test_server_shutdown_is_not_held_by_a_hung_request(api_key: str) -> None:
    server = ModelServer(api_key=api_key).start()
    server.script("test-model", Hang(600))
    client = client_for(server, "openai", model_timeout=0.2, retries=0)
    with pytest.raises(ModelError):
        client.complete(prompt())
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 5
    client.close()
