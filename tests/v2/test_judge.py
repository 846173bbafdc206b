"""The LLM judge against a real local model server: answers, configuration and its precedence, every
way a call fails (each a JudgeError, recorded), secrets, task scopes across threads, the preflight."""

from __future__ import annotations

import base64
import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.models.base import Prices
from pytest_osworld.plugin.outcomes import classify
from pytest_osworld.record import MASK_TERMINATIONS, ModelCalls, TaskResult, Termination
from pytest_osworld.settings import Settings
from pytest_osworld.v2.llm.clients import ClientPool
from pytest_osworld.v2.llm.judge import (
    NOT_CONFIGURED,
    PREFLIGHT_TOKENS,
    Judge,
    JudgeConfigError,
    JudgeError,
    preflight,
)
from pytest_osworld.v2.llm.settings import CallDefaults, JudgeLayer, JudgeSettings, resolve
from tests.support.model_server import Api, Drop, Hang, Malformed, ModelServer, Reply, Status, empty
from tests.v2.conftest import KEY, KEY_ENV

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 24  # passed through, never decoded
JPEG = b"\xff\xd8\xff\xe0" + b"\x02" * 24


def judge_at(server: ModelServer, api: Api = "openai", model: str = "test-model", **settings: Any) -> Judge:
    """A judge pointed at ``server`` as the command line would point it."""
    provider = "openai_compatible" if api == "openai" else "claude"
    given = JudgeLayer(provider=provider, model=model, base_url=server.url(api))
    return Judge(JudgeSettings(given=given, **settings))


@pytest.fixture
def images(tmp_path: Path) -> list[str]:
    (tmp_path / "before.png").write_bytes(PNG)
    (tmp_path / "after.jpg").write_bytes(JPEG)
    return [str(tmp_path / "before.png"), str(tmp_path / "after.jpg")]


# --- answers


def test_generate_text_sends_prompt_system_and_images_and_records_the_call(
    model_server: ModelServer, images: list[str]
) -> None:
    model_server.script("test-model", Reply("  YES \n", prompt_tokens=1200, completion_tokens=2))
    judge = judge_at(model_server, prices=Prices(prompt=2.0, completion=10.0))
    answer = judge.generate_text("Are the images the same?", images, {"max_tokens": 8}, system="Answer YES or NO.")
    assert answer == "YES"
    request = model_server.completions("test-model")[0]
    assert request.roles() == ["system", "user"]
    assert request.texts() == ["Answer YES or NO.", "Are the images the same?", "Image 1:", "Image 2:"]
    assert request.images() == [PNG, JPEG]
    parts = request.messages()[1]["content"]
    assert [p["image_url"]["detail"] for p in parts if p["type"] == "image_url"] == ["high", "high"]
    assert parts[4]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert request.body["max_tokens"] == 8 and "temperature" not in request.body
    [call] = judge.calls()
    assert (call.ok, call.model, call.provider, call.task_id, call.kind) == (
        True,
        "test-model",
        "openai_compatible",
        None,
        "text",
    )
    assert (call.prompt_tokens, call.completion_tokens, call.attempts) == (1200, 2, 1)
    assert call.cost == pytest.approx((1200 * 2.0 + 2 * 10.0) / 1_000_000)
    assert call.url == model_server.openai_url and call.error is None
    assert judge.usage() == ModelCalls(calls=1, failed=0, seconds=call.seconds, usage=judge.usage().usage)
    assert judge.usage().usage.prompt_tokens == 1200


def test_the_anthropic_client_serves_the_claude_provider(model_server: ModelServer, images: list[str]) -> None:
    model_server.script("test-model", Reply("NO"))
    judge = judge_at(model_server, "anthropic")
    assert judge.generate_text("same?", images[0], {"reasoning_effort": "low"}, system="be strict") == "NO"
    request = model_server.completions("test-model")[0]
    assert request.path == "/v1/messages"
    assert request.body["system"] == "be strict" and request.images() == [PNG]
    assert request.body["max_tokens"] == 512  # the call's default_max_tokens
    assert "reasoning_effort" not in request.body  # OpenAI's parameter, not Anthropic's
    assert judge.calls()[0].provider == "claude"


def test_generate_chat_takes_openai_style_messages_with_data_url_images(model_server: ModelServer) -> None:
    model_server.script("test-model", Reply("The second one."))
    judge = judge_at(model_server)
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You compare screenshots."},
        {"role": "user", "content": "Which is brighter?"},
        {"role": "assistant", "content": "Show me."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Here:"}, {"type": "image_url", "image_url": {"url": data_url}}],
        },
    ]
    assert judge.generate_chat(messages, {"temperature": 0}) == "The second one."
    request = model_server.completions("test-model")[0]
    assert request.roles() == ["system", "user", "assistant", "user"]
    assert request.images() == [PNG] and request.body["temperature"] == 0
    assert judge.calls()[0].kind == "chat"


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([{"role": "tool", "content": "x"}], r"messages\[0\]\.role: expected system, user or assistant"),
        ([{"role": "user", "content": 3}], r"messages\[0\]\.content: expected text or a list of parts"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}]}],
            r"messages\[0\]\.content\[0\]: an image must be a data: URL",
        ),
    ],
)
def test_a_malformed_chat_is_refused_before_any_call(
    model_server: ModelServer, messages: list[dict[str, Any]], problem: str
) -> None:
    judge = judge_at(model_server)
    with pytest.raises(ValueError, match=problem):
        judge.generate_chat(messages)
    assert model_server.completions() == [] and judge.calls() == []


def test_a_missing_image_is_the_evaluators_input_not_a_judge_failure(model_server: ModelServer, tmp_path: Path) -> None:
    judge = judge_at(model_server)
    with pytest.raises(FileNotFoundError, match="the image .*nothing.png given to the LLM judge does not exist"):
        judge.generate_text("same?", [str(tmp_path / "nothing.png")])
    assert model_server.completions() == [] and judge.calls() == []


def test_reasoning_effort_and_image_detail_come_from_the_environment(
    model_server: ModelServer, images: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_REASONING_EFFORT", "minimal")
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_IMAGE_DETAIL", "low")
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_TEMPERATURE", "0.5")
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_MAX_OUTPUT_TOKENS", "64")
    model_server.script("test-model", Reply("YES"), Reply("NO"))
    judge = judge_at(model_server)
    judge.generate_text("same?", images[:1], default_max_tokens=5)
    first = model_server.completions()[0].body
    assert (first["reasoning_effort"], first["temperature"], first["max_tokens"]) == ("minimal", 0.5, 64)
    assert first["messages"][0]["content"][2]["image_url"]["detail"] == "low"
    # A call's options come first.
    judge.generate_text("same?", options={"max_output_tokens": 5, "reasoning_effort": "high", "temperature": 0})
    second = model_server.completions()[1].body
    assert (second["reasoning_effort"], second["temperature"], second["max_tokens"]) == ("high", 0, 5)


# --- precedence


def test_precedence_options_then_cli_then_environment_then_profile_then_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = ["from-options", "from-cli", "from-env", "from-profile", "from-default"]
    with ModelServer(models=names) as server:
        for name in names:
            server.respond_with(name, lambda request: Reply(str(request.model)))
        cli = JudgeLayer(model="from-cli", base_url=server.openai_url)
        profile = JudgeLayer(model="from-profile", base_url=server.openai_url)
        monkeypatch.setenv("OSWORLD_EVAL_MODEL_NAME", "from-env")

        def asked(given: JudgeLayer, configured: JudgeLayer, options: dict[str, Any] | None = None) -> str:
            return Judge(JudgeSettings(given=given, configured=configured)).generate_text(
                "q", options=options, default_model="from-default"
            )

        assert asked(cli, profile, {"model": "from-options"}) == "from-options"
        assert asked(cli, profile) == "from-cli"
        assert asked(JudgeLayer(base_url=server.openai_url), profile) == "from-env"
        monkeypatch.delenv("OSWORLD_EVAL_MODEL_NAME")
        assert asked(JudgeLayer(), profile) == "from-profile"
        assert asked(JudgeLayer(), JudgeLayer(base_url=server.openai_url)) == "from-default"


def test_settings_given_on_the_command_line_win_over_the_environment_and_a_profile_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ModelServer(models=["m"]) as cli_server, ModelServer(models=["m"]) as env_server:
        for server in (cli_server, env_server):
            server.respond_with("m", lambda request: Reply("YES"))
        monkeypatch.setenv("OSWORLD_EVAL_MODEL_BASE_URL", env_server.openai_url)
        settings = Settings(judge_url=cli_server.openai_url, judge_model="m")
        Judge(JudgeSettings.from_settings(settings, given_on_cli={"judge_url", "judge_model"})).generate_text("q")
        assert len(cli_server.completions()) == 1 and env_server.completions() == []
        Judge(JudgeSettings.from_settings(settings, given_on_cli=())).generate_text("q")  # from the profile
        assert len(env_server.completions()) == 1


def test_openai_base_url_is_honoured_for_openai_only(monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelServer(models=["gpt-4o"]) as server:
        server.respond_with("gpt-4o", lambda request: Reply("YES"))
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OSWORLD_EVAL_MODEL_NAME", "gpt-4o")
        judge = Judge()
        assert judge.configured()
        assert judge.generate_text("q") == "YES"  # default provider openai, default model overridden by the env
        config = resolve(
            {"provider": "anthropic"}, JudgeSettings(), {"OPENAI_BASE_URL": server.openai_url}, CallDefaults()
        )
        assert config.url == "https://api.anthropic.com"  # not OpenAI's variable


def test_upstream_defaults_when_nothing_is_given() -> None:
    config = resolve(None, JudgeSettings(), {}, CallDefaults())
    assert (config.provider, config.model, config.url, config.key_env, config.key) == (
        "openai",
        "gpt-4o",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        None,
    )
    assert (config.max_tokens, config.retry_attempts, config.retry_delay, config.image_detail) == (512, 3, 2.0, "high")
    assert config.temperature is None and config.reasoning_effort is None
    claude = resolve({"provider": "claude"}, JudgeSettings(), {"ANTHROPIC_API_KEY": KEY}, CallDefaults())
    assert claude.key_env == "ANTHROPIC_API_KEY" and claude.key is not None and claude.key.reveal() == KEY


def test_nothing_named_is_not_configured_and_openais_key_alone_is_not_a_judge() -> None:
    assert not Judge(environ={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://x/v1"}).configured()
    assert Judge(environ={"OSWORLD_EVAL_MODEL_NAME": "gpt-4o"}).configured()
    assert Judge(JudgeSettings(configured=JudgeLayer(base_url="http://x/v1")), environ={}).configured()
    assert preflight(Judge(environ={})) == NOT_CONFIGURED


# --- failures: each a JudgeError, recorded as a failed call


def test_a_5xx_past_the_retries_is_a_judge_error_naming_the_judge(model_server: ModelServer) -> None:
    model_server.script("test-model", Status(500), Status(503), Status(500))
    judge = judge_at(model_server)
    with pytest.raises(JudgeError) as raised:
        judge.generate_text("same?")
    assert str(raised.value) == (
        f"the LLM judge at {model_server.openai_url} (model test-model) did not answer: "
        "HTTP 500: scripted status 500 (3 attempts)"
    )
    assert raised.value.reason == "judge_error"
    assert len(model_server.completions()) == 3  # OSWORLD_EVAL_MODEL_RETRY_ATTEMPTS' default: 3
    [call] = judge.failed()
    assert (call.ok, call.attempts, call.error) == (False, 3, str(raised.value))


def test_a_retry_that_succeeds_is_one_good_call(model_server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_RETRY_ATTEMPTS", "2")
    model_server.script("test-model", Status(429, retry_after=0), Reply("YES"))
    judge = judge_at(model_server)
    assert judge.generate_text("same?") == "YES"
    assert [(c.ok, c.attempts) for c in judge.calls()] == [(True, 2)]


def test_retries_wait_up_to_the_retry_delay(model_server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_RETRY_DELAY", "2.0")
    waits: list[float] = []
    model_server.script("test-model", Status(500), Status(500), Reply("YES"))
    judge = Judge(judge_at(model_server).settings, clients=ClientPool(sleep=waits.append))
    assert judge.generate_text("same?") == "YES"
    assert len(waits) == 2 and all(0 <= w <= 2.0 for w in waits)


@pytest.mark.parametrize(
    ("behaviours", "problem"),
    [
        ([empty()], r"gave an empty answer \(finish reason stop\)$"),
        ([Reply("  \n ")], r"gave an empty answer"),
        ([Reply(None)], r"gave an empty answer"),
        ([Malformed()] * 3, r"did not answer: unreadable answer: not valid JSON .* \(3 attempts\)$"),
        ([Drop()] * 3, r"did not answer: connection failed \(.*\) \(3 attempts\)$"),
        ([Status(400)], r"did not answer: HTTP 400: scripted status 400 \(1 attempt\)$"),
    ],
    ids=["empty", "blank", "null", "malformed", "dropped", "refused"],
)
def test_every_failure_is_a_judge_error_and_a_failed_call(
    model_server: ModelServer, behaviours: list[Any], problem: str
) -> None:
    model_server.script("test-model", *behaviours)
    judge = judge_at(model_server)
    with pytest.raises(JudgeError, match=problem):
        judge.generate_text("same?")
    assert [c.ok for c in judge.calls()] == [False]
    assert judge.usage().failed == 1


def test_an_empty_answer_keeps_its_spent_tokens(model_server: ModelServer) -> None:
    model_server.script("test-model", Reply("", prompt_tokens=900, completion_tokens=16, finish_reason="length"))
    judge = judge_at(model_server)
    with pytest.raises(JudgeError, match=r"gave an empty answer \(finish reason length\)"):
        judge.generate_text("same?", default_max_tokens=16)
    [call] = judge.calls()
    assert (call.ok, call.prompt_tokens, call.completion_tokens) == (False, 900, 16)


def test_a_hung_judge_times_out(model_server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_RETRY_ATTEMPTS", "1")
    model_server.script("test-model", Hang(30))
    judge = judge_at(model_server, timeout=0.5)
    with pytest.raises(JudgeError, match=r"did not answer: no answer within 0.5 s \(ReadTimeout\) \(1 attempt\)"):
        judge.generate_text("same?")
    assert judge.calls()[0].seconds < 10


def test_an_unreachable_judge_is_a_judge_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    judge = Judge(JudgeSettings(given=JudgeLayer(base_url=f"http://127.0.0.1:{port}/v1", model="m")))
    with pytest.raises(
        JudgeError, match=rf"the LLM judge at http://127.0.0.1:{port}/v1 \(model m\) did not answer: connection failed"
    ):
        judge.generate_text("same?")


@pytest.mark.parametrize(
    ("options", "environ", "problem"),
    [
        (
            {"provider": "bedrock"},
            {},
            r"options.provider: the judge provider 'bedrock' is not supported here \(supported: openai, openai_compatible, anthropic, claude\)",
        ),
        (
            {},
            {"OSWORLD_EVAL_MODEL_PROVIDER": "gemini"},
            r"OSWORLD_EVAL_MODEL_PROVIDER: the judge provider 'gemini' is not supported here",
        ),
        (
            {"provider": "watsonx"},
            {},
            r"options.provider: unknown judge provider 'watsonx' \(supported: openai, openai_compatible, anthropic, claude\)",
        ),
        (
            {},
            {"OSWORLD_EVAL_MODEL_MAX_OUTPUT_TOKENS": "lots"},
            r"OSWORLD_EVAL_MODEL_MAX_OUTPUT_TOKENS: expected a whole number of 1 or more, got 'lots'",
        ),
        ({"max_tokens": 0}, {}, r"options.max_tokens: expected a whole number of 1 or more, got 0"),
        (
            {},
            {"OSWORLD_EVAL_MODEL_TEMPERATURE": "warm"},
            r"OSWORLD_EVAL_MODEL_TEMPERATURE: expected a number of 0 or more, got 'warm'",
        ),
        (
            {},
            {"OSWORLD_EVAL_MODEL_IMAGE_DETAIL": "ultra"},
            r"OSWORLD_EVAL_MODEL_IMAGE_DETAIL: expected one of low, high, auto, got 'ultra'",
        ),
        (
            {},
            {"OSWORLD_EVAL_MODEL_RETRY_ATTEMPTS": "0"},
            r"OSWORLD_EVAL_MODEL_RETRY_ATTEMPTS: expected a whole number of 1 or more",
        ),
        ({"base_url": "gpu:8000"}, {}, r"options.base_url: the judge URL is not usable: expected an http\(s\) URL"),
        (
            {"api_key_env": "NO_SUCH_VARIABLE_HERE"},
            {},
            r"options.api_key_env: the environment variable NO_SUCH_VARIABLE_HERE is not set or empty",
        ),
        (
            {},
            {"OSWORLD_EVAL_MODEL_API_KEY_ENV": "sk-abc def"},
            r"OSWORLD_EVAL_MODEL_API_KEY_ENV must be the NAME of an environment variable",
        ),
        ({"api_key": "sk-written-in-a-task"}, {}, r"options.api_key: a key written in a task is not used"),
    ],
)
def test_a_call_that_cannot_be_configured_is_a_failed_call_naming_the_value(
    model_server: ModelServer, options: dict[str, Any], environ: dict[str, str], problem: str
) -> None:
    settings = JudgeSettings(configured=JudgeLayer(base_url=model_server.openai_url, model="test-model"))
    judge = Judge(settings, environ={"OSWORLD_EVAL_MODEL_RETRY_DELAY": "0", **environ})
    with pytest.raises(JudgeConfigError, match=problem) as raised:
        judge.generate_text("same?", options=options)
    assert isinstance(raised.value, JudgeError) and raised.value.reason == "judge_error"
    [call] = judge.calls()
    assert not call.ok and call.url is None and call.error == str(raised.value)
    assert "sk-written-in-a-task" not in str(raised.value)
    assert model_server.completions() == []


# --- secrets


def test_the_key_reaches_the_endpoint_and_no_text(no_key_in_logs: Any, api_key: str) -> None:
    with ModelServer(models=["m"], api_key="the-right-key", echo_key=True) as server:
        server.respond_with("m", lambda request: Reply("YES"))
        judge = Judge(JudgeSettings(given=JudgeLayer(base_url=server.openai_url, model="m", key_env=KEY_ENV)))
        with pytest.raises(JudgeError) as raised:
            judge.generate_text("same?")
        assert server.completions()[0].headers["authorization"] == f"Bearer {KEY}"
        message = str(raised.value)
        assert "HTTP 401: invalid api key: ***" in message and KEY not in message
        assert f"check that the environment variable {KEY_ENV} holds a valid API key" in message
        config = resolve(None, judge.settings, {KEY_ENV: KEY}, CallDefaults())
        for text in (repr(judge), repr(config), repr(judge.calls()), json.dumps([c.as_dict() for c in judge.calls()])):
            assert KEY not in text
        assert KEY not in repr(judge.clients) + repr(judge.usage())


def test_the_literal_key_variable_is_used_and_never_shown(monkeypatch: pytest.MonkeyPatch, no_key_in_logs: Any) -> None:
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_API_KEY", KEY)
    with ModelServer(models=["m"], api_key=KEY) as server:
        server.script("m", Reply("YES"))
        judge = Judge(JudgeSettings(configured=JudgeLayer(base_url=server.openai_url, model="m")))
        assert judge.generate_text("same?") == "YES"
        assert server.completions()[0].headers["authorization"] == f"Bearer {KEY}"
        config = resolve(None, judge.settings, {"OSWORLD_EVAL_MODEL_API_KEY": KEY}, CallDefaults())
        assert config.key_env == "OSWORLD_EVAL_MODEL_API_KEY" and KEY not in repr(config)


def test_credentials_in_the_url_are_sent_as_a_header_and_never_shown(no_key_in_logs: Any) -> None:
    with ModelServer(models=["m"]) as server:
        server.script("m", Status(500), Status(500), Status(500))
        url = server.openai_url.replace("http://", f"http://judge:{KEY}@")
        judge = Judge(JudgeSettings(given=JudgeLayer(base_url=url, model="m")))
        with pytest.raises(JudgeError) as raised:
            judge.generate_text("same?")
        assert server.completions()[0].headers["authorization"].startswith("Basic ")
        assert KEY not in str(raised.value) + repr(judge.calls()) + repr(
            resolve(None, judge.settings, {}, CallDefaults())
        )


# --- task scopes


def test_task_scopes_keep_each_tasks_calls_apart_across_threads(model_server: ModelServer) -> None:
    def answer(request: Any) -> Any:
        text = request.text()
        return Status(400) if "fail" in text else Reply("YES")

    model_server.respond_with("test-model", answer)
    judge = judge_at(model_server)

    def task(task_id: str) -> tuple[str, list[bool], str | None]:
        with judge.for_task(task_id) as scope:
            for i in range(3):
                prompt = f"{task_id} fail" if task_id == "002" and i == 1 else f"{task_id} ok"
                try:
                    if i == 0:
                        judge.generate_text(prompt)  # the judge's own call, in the scope's context
                    else:
                        scope.generate_text(prompt)
                except JudgeError:
                    pass
            return task_id, [c.ok for c in scope.calls()], scope.error()

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = {r[0]: r[1:] for r in pool.map(task, ["001", "002", "003", "004"])}
    assert results["001"] == ([True, True, True], None)
    oks, error = results["002"]
    assert oks == [True, False, True]
    assert error is not None and "did not answer: HTTP 400" in error
    assert len(judge.calls()) == 12 and len(judge.failed()) == 1
    assert {c.task_id for c in judge.calls()} == {"001", "002", "003", "004"}
    judge.generate_text("outside")  # after the blocks: no scope
    assert judge.calls()[-1].task_id is None


def test_a_scope_gives_the_records_judge_field(model_server: ModelServer) -> None:
    model_server.script("test-model", Reply("YES", prompt_tokens=7, completion_tokens=1), Reply("NO", 3, 1))
    judge = judge_at(model_server, prices=Prices(prompt=1.0))
    with judge.for_task("003") as scope:
        assert scope.record() is None
        scope.generate_text("a")
        scope.generate_chat([{"role": "user", "content": "b"}])
    calls = scope.record()
    assert calls is not None and (calls.calls, calls.failed, calls.usage.prompt_tokens) == (2, 0, 10)
    result = TaskResult(run_id="r", task_id="003", domain="v2", termination=Termination.DONE, score=1.0, judge=calls)
    again = TaskResult.model_validate_json(result.model_dump_json())
    assert again.judge == calls and again.user_sim is None
    old = json.loads(result.model_dump_json())
    del old["judge"], old["user_sim"]
    assert TaskResult.model_validate(old).judge is None  # records written before the field still read


def test_a_judge_error_masks_the_task_judge_error(model_server: ModelServer) -> None:
    assert Termination.JUDGE_ERROR in MASK_TERMINATIONS and Termination.USER_SIM_ERROR in MASK_TERMINATIONS
    model_server.script("test-model", Status(400))
    with pytest.raises(JudgeError) as raised:
        judge_at(model_server).generate_text("same?")
    report = pytest.TestReport("v2/003", ("t.py", 0, "v2/003"), {}, "failed", str(raised.value), "call")
    outcome = classify(report, raised)
    assert outcome is not None
    assert (outcome.status, outcome.termination, outcome.message) == (
        "masked",
        Termination.JUDGE_ERROR,
        str(raised.value),
    )
    record = TaskResult(run_id="r", task_id="003", domain="v2", termination=Termination.JUDGE_ERROR)
    assert record.masked and not record.valid


# --- the preflight


def test_the_preflight_asks_one_tiny_question(model_server: ModelServer) -> None:
    model_server.script("test-model", Reply("YES"))
    judge = judge_at(model_server)
    assert preflight(judge) is None
    [request] = model_server.completions()
    assert request.body["max_tokens"] == PREFLIGHT_TOKENS
    assert "YES or NO" in request.text()
    assert [c.task_id for c in judge.calls()] == [None]


def test_the_preflight_of_a_dead_judge_says_why(model_server: ModelServer) -> None:
    model_server.script("test-model", Status(500), Status(500), Status(500))
    reason = preflight(judge_at(model_server))
    assert reason == (
        f"the LLM judge at {model_server.openai_url} (model test-model) did not answer: "
        "HTTP 500: scripted status 500 (3 attempts)"
    )


def test_the_preflight_of_a_judge_answering_nothing_says_so(model_server: ModelServer) -> None:
    model_server.script("test-model", Reply("", finish_reason="length"))
    reason = preflight(judge_at(model_server))
    assert reason is not None and reason.endswith("gave an empty answer (finish reason length)")


def test_concurrent_calls_share_one_client(model_server: ModelServer) -> None:
    model_server.respond_with("test-model", lambda request: Reply("YES"))
    judge = judge_at(model_server)
    barrier = threading.Barrier(8)

    def call(_: int) -> str:
        barrier.wait()
        return judge.generate_text("same?")

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(call, range(8))) == ["YES"] * 8
    assert len(judge.calls()) == 8 and repr(judge.clients) == "ClientPool(1 clients)"
    judge.close()
