"""A model-driven runner in real episodes: a scripted model through real HTTP, every failure as specified."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.episode.runs import BUNDLED, bundled_task, run_tasks
from tests.support.model_server import Api, Behaviour, Drop, Hang, ModelServer, Reply, Status, empty, solution_answers

KEY = "sk-test-0123456789-SECRET-KEY"
TASK = "os-rename-report"


def model_args(server: ModelServer, api: Api = "openai", *extra: str) -> list[str]:
    return [
        "--osworld-model-url",
        server.url(api),
        "--osworld-model",
        server.models[0],
        "--osworld-model-api",
        api,
        "--osworld-model-key-env",
        "OSWORLD_TEST_KEY",
        "--osworld-model-backoff",
        "0",
        *extra,
    ]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    monkeypatch.setenv("OSWORLD_TEST_KEY", KEY)
    with ModelServer(models=["scripted"], api_key=KEY) as running:
        yield running


def files_holding(folder: Path, secret: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.mark.docker
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_scripted_model_replaying_the_solution_scores_like_the_oracle(
    pytester: pytest.Pytester, server: ModelServer, api: Api
) -> None:
    solution = bundled_task(TASK)["solution"]
    server.script("scripted", *solution_answers(solution))
    run = run_tasks(pytester, BUNDLED, "-k", TASK, "--osworld-agent", "pyautogui", *model_args(server, api))
    run.result.assert_outcomes(passed=1)
    record = run.record(f"os/{TASK}")
    assert record["score"] == 1.0 and record["termination"] == "done"
    assert record["steps"] == len(solution)
    assert record["usage"]["prompt_tokens"] == 10 * len(solution)
    assert record["usage"]["completion_tokens"] == 5 * len(solution)
    assert record["model"]["name"] == "scripted"
    seen = server.completions("scripted")
    assert len(seen) == len(solution)
    assert seen[0].images() and seen[0].images()[0].startswith(b"\x89PNG")  # the model saw the screen
    assert "final_report.txt" in seen[0].text() or "Rename" in seen[0].text()
    assert files_holding(pytester.path, KEY) == []


@pytest.mark.docker
def test_prices_give_a_cost(pytester: pytest.Pytester, server: ModelServer) -> None:
    server.script("scripted", Reply("DONE", prompt_tokens=1000, completion_tokens=500))
    run = run_tasks(
        pytester,
        BUNDLED,
        "-k",
        TASK,
        "--osworld-agent",
        "pyautogui",
        *model_args(server, "openai", "--osworld-prompt-price", "2", "--osworld-completion-price", "10"),
    )
    run.result.assert_outcomes(failed=1)
    assert run.record(f"os/{TASK}")["usage"]["cost"] == pytest.approx(1000 * 2 / 1e6 + 500 * 10 / 1e6)


@pytest.mark.docker
def test_malformed_code_is_a_recorded_step_that_costs_a_step(pytester: pytest.Pytester, server: ModelServer) -> None:
    server.script("scripted", Reply("```python\nos.rename('a',\n```"), Reply("DONE"))
    run = run_tasks(pytester, BUNDLED, "-k", TASK, "--osworld-agent", "pyautogui", *model_args(server))
    run.result.assert_outcomes(failed=1)  # a valid zero, not a crash and not a mask
    record = run.record(f"os/{TASK}")
    assert record["score"] == 0.0 and record["steps"] == 2 and record["termination"] == "done"
    traj = (run.run_dir / "os" / TASK / "traj.jsonl").read_text().splitlines()
    assert "SyntaxError" in traj[0] or "parse" in traj[0]


@pytest.mark.docker
def test_empty_answers_spend_the_step_budget(pytester: pytest.Pytester, server: ModelServer) -> None:
    server.script("scripted", empty(), empty())
    run = run_tasks(
        pytester, BUNDLED, "-k", TASK, "--osworld-agent", "pyautogui", "--osworld-max-steps", "2", *model_args(server)
    )
    run.result.assert_outcomes(failed=1)
    record = run.record(f"os/{TASK}")
    assert record["termination"] == "max_steps" and record["steps"] == 2 and record["score"] == 0.0


@pytest.mark.docker
def test_a_429_burst_is_retried_and_the_task_still_scores(pytester: pytest.Pytester, server: ModelServer) -> None:
    solution = bundled_task(TASK)["solution"]
    answers = solution_answers(solution)
    server.script(
        "scripted", Status(429, retry_after=0), Status(429, retry_after=0), Status(503), answers[0], *answers[1:]
    )
    run = run_tasks(pytester, BUNDLED, "-k", TASK, "--osworld-agent", "pyautogui", *model_args(server))
    run.result.assert_outcomes(passed=1)
    assert run.record(f"os/{TASK}")["score"] == 1.0


@pytest.mark.docker
@pytest.mark.parametrize(
    "behaviour",
    [Status(500), Hang(30), Drop()],
    ids=["500", "hung", "dropped"],
)
def test_model_failures_past_the_retries_mask_the_task(
    pytester: pytest.Pytester, server: ModelServer, behaviour: Behaviour
) -> None:
    server.script("scripted", *[behaviour] * 3)
    run = run_tasks(
        pytester,
        BUNDLED,
        "-k",
        TASK,
        "--osworld-agent",
        "pyautogui",
        "--osworld-model-retries",
        "2",
        "--osworld-model-timeout",
        "2",
        *model_args(server),
    )
    outcomes = run.result.parseoutcomes()
    assert outcomes.get("masked") == 1, run.result.stdout.str()
    record = run.record(f"os/{TASK}")
    assert record["termination"] == "model_error" and record["masked"] is True and record["score"] is None
    assert len(server.completions("scripted")) == 3  # the first try and two retries
    assert files_holding(pytester.path, KEY) == []


def test_an_unreachable_model_stops_the_session_before_any_sandbox(pytester: pytest.Pytester) -> None:
    run = run_tasks(
        pytester,
        BUNDLED,
        "-k",
        TASK,
        "--osworld-agent",
        "pyautogui",
        "--osworld-model-url",
        "http://127.0.0.1:9/v1",
        "--osworld-model",
        "m",
    )
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    run.result.stderr.fnmatch_lines(["*cannot reach the model endpoint http://127.0.0.1:9/v1*"])
    assert not (run.run_dir / "os").exists()


def test_a_misnamed_model_stops_the_session(pytester: pytest.Pytester, server: ModelServer) -> None:
    args = model_args(server)
    args[args.index("scripted")] = "no-such-model"
    run = run_tasks(pytester, BUNDLED, "-k", TASK, "--osworld-agent", "pyautogui", *args)
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no-such-model" in run.result.stderr.str()
    assert KEY not in run.result.stderr.str() + run.result.stdout.str()
