"""The LLM judge's preflight through pytest: a V2 run whose selection holds an ``llm_judge`` task asks the
judge one tiny question first; a dead judge or none skips that task with the reason, before any sandbox
starts (the runs below name a sandbox image that does not exist: starting one would be an error)."""

from __future__ import annotations

import io
import json
import os
import secrets
import socket
import tarfile
from collections.abc import Iterator
from pathlib import Path

import docker

# httpx imports httpcore on its first request and keeps its exception classes; pytester's in-process runs
# forget the modules first imported inside them, so it is imported here, before any of them.
import httpcore  # noqa: F401
import pytest

from pytest_osworld.plugin.v2 import NO_RUNNER
from pytest_osworld.v2.llm.judge import NOT_CONFIGURED, PREFLIGHT_TOKENS
from tests.support.model_server import ModelServer, Reply, Status
from tests.support.v2data import copy_v2_data

NOT_CACHED = ("-p", "no:cacheprovider")
JUDGE_LINE = "osworld: LLM judge (apart from the agent's usage): "
NOWHERE = "sandbox: nowhere\nsandbox_profiles:\n  nowhere:\n    image: pytest-osworld/no-such-image:never\n"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("OSWORLD_EVAL_MODEL_", "OSWORLD_USER_SIM_")) or name in (
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
        ):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_RETRY_DELAY", "0")


@pytest.fixture
def data(pytester: pytest.Pytester) -> Path:
    copy_v2_data(pytester.path)
    (pytester.path / "nowhere.yaml").write_text(NOWHERE)
    return pytester.path


@pytest.fixture
def judge() -> Iterator[ModelServer]:
    with ModelServer(models=["m"]) as server:
        yield server


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "evaluation_examples/test_v2.json",
        "--osworld-profile",
        "nowhere.yaml",
        "-rs",
        *NOT_CACHED,
        *args,
    )


def cli(server: ModelServer) -> tuple[str, ...]:
    return ("--osworld-judge-url", server.openai_url, "--osworld-judge-model", "m")


@pytest.mark.docker
def test_without_a_judge_the_judge_task_is_skipped_saying_how_to_configure_one(
    pytester: pytest.Pytester, data: Path
) -> None:
    result = run(pytester)
    result.assert_outcomes(skipped=8)
    result.stdout.fnmatch_lines(
        [
            f"osworld: {NOT_CONFIGURED}; 1 task(s) marked llm_judge are skipped",
            f"SKIPPED*task_001.py: {NO_RUNNER}",
            f"SKIPPED*task_003.py: needs the LLM judge: {NOT_CONFIGURED}",
        ]
    )
    assert JUDGE_LINE not in result.stdout.str()  # no call was made


@pytest.fixture
def empty_image() -> Iterator[str]:
    """An image with nothing in it: a profile may name it, but no sandbox of it can start."""
    client = docker.from_env()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("empty")
        tar.addfile(info, io.BytesIO(b""))
    name = f"pytest-osworld/empty-test:{secrets.token_hex(4)}"
    repository, _, tag = name.partition(":")
    client.api.import_image_from_data(buffer.getvalue(), repository=repository, tag=tag)
    yield name
    client.images.remove(name, force=True)
    client.close()


@pytest.mark.docker
def test_a_dead_judge_masks_the_judge_task_judge_error_before_any_sandbox(
    pytester: pytest.Pytester, data: Path, judge: ModelServer, empty_image: str
) -> None:
    judge.script("m", Status(500), Status(500), Status(500))
    reports = data / "reports"
    (data / "nowhere.yaml").write_text(NOWHERE.replace("pytest-osworld/no-such-image:never", empty_image))
    # The null runner on a profile whose image holds nothing: a sandbox start would be an error.
    result = run(
        pytester, *cli(judge), "-m", "llm_judge", "--osworld-agent", "null", "--osworld-report-dir", str(reports)
    )
    assert result.parseoutcomes() == {"masked": 1, "deselected": 7}, result.stdout.str()
    reason = f"the LLM judge at {judge.openai_url} (model m) did not answer: HTTP 500: scripted status 500 (3 attempts)"
    result.stdout.fnmatch_lines(
        [
            f"osworld: {reason}; 1 task(s) marked llm_judge are masked judge_error without starting",
            "*MASKED v2/003: masked (judge_error)*",
        ]
    )
    assert f"{JUDGE_LINE}1 call, 1 failed, 0 prompt + 0 completion tokens" in result.stdout.lines
    assert len(judge.completions()) == 3  # the preflight, retried: one question, no more
    [path] = reports.glob("*/v2/003/result.json")
    record = json.loads(path.read_text())
    assert record["termination"] == "judge_error" and record["score"] is None and record["sandbox"] == {}
    assert record["message"] == f"the LLM judge failed its preflight: {reason}"


@pytest.mark.docker
def test_a_dead_judge_leaves_other_skips_and_other_tasks_alone(
    pytester: pytest.Pytester, data: Path, judge: ModelServer
) -> None:
    judge.script("m", Status(500), Status(500), Status(500))
    result = run(pytester, *cli(judge))
    result.assert_outcomes(skipped=8)  # no runner is chosen: that reason stands for every task
    result.stdout.fnmatch_lines([f"SKIPPED*task_002.py: {NO_RUNNER}", f"SKIPPED*task_003.py: {NO_RUNNER}"])
    assert "needs the LLM judge" not in result.stdout.str()


@pytest.mark.docker
def test_an_unreachable_judge_from_the_environment_masks_the_judge_task(
    pytester: pytest.Pytester, data: Path, monkeypatch: pytest.MonkeyPatch, empty_image: str
) -> None:
    (data / "nowhere.yaml").write_text(NOWHERE.replace("pytest-osworld/no-such-image:never", empty_image))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once the block ends
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_NAME", "m")
    result = run(pytester, "-m", "llm_judge", "--osworld-agent", "null")
    assert result.parseoutcomes() == {"masked": 1, "deselected": 7}, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            f"osworld: the LLM judge at http://127.0.0.1:{port}/v1 (model m) did not answer: connection failed*",
            "*MASKED v2/003: masked (judge_error)*",
        ]
    )


@pytest.mark.docker
def test_a_live_judge_passes_the_preflight(pytester: pytest.Pytester, data: Path, judge: ModelServer) -> None:
    judge.script("m", Reply("YES", prompt_tokens=21, completion_tokens=1))
    result = run(pytester, *cli(judge))
    result.assert_outcomes(skipped=8)
    # The judge answered: the task keeps its own reason (no runner is chosen).
    result.stdout.fnmatch_lines([f"SKIPPED*task_003.py: {NO_RUNNER}"])
    assert f"{JUDGE_LINE}1 call, 21 prompt + 1 completion tokens" in result.stdout.lines
    assert "needs the LLM judge" not in result.stdout.str()
    [request] = judge.completions()
    assert request.model == "m" and request.body["max_tokens"] == PREFLIGHT_TOKENS


@pytest.mark.docker
def test_the_command_line_wins_over_the_environment_and_the_environment_over_a_profile(
    pytester: pytest.Pytester, data: Path, judge: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ModelServer(models=["m"]) as other:
        judge.respond_with("m", lambda request: Reply("YES"))
        other.respond_with("m", lambda request: Reply("YES"))
        monkeypatch.setenv("OSWORLD_EVAL_MODEL_BASE_URL", other.openai_url)
        run(pytester, *cli(judge), "-m", "llm_judge").assert_outcomes(skipped=1, deselected=7)
        assert (len(judge.completions()), len(other.completions())) == (1, 0)
        (data / "nowhere.yaml").write_text(NOWHERE + f"judge_url: {judge.openai_url}\njudge_model: m\n")
        run(pytester, "-m", "llm_judge").assert_outcomes(skipped=1, deselected=7)
        assert (len(judge.completions()), len(other.completions())) == (1, 1)


@pytest.mark.docker
def test_no_preflight_without_a_selected_judge_task_nor_when_only_collecting(
    pytester: pytest.Pytester, data: Path, judge: ModelServer
) -> None:
    # Nothing is scripted: a question would be answered 400 and show as a skip reason.
    result = run(pytester, *cli(judge), "-m", "not llm_judge")
    result.assert_outcomes(skipped=7, deselected=1)
    result = pytester.runpytest("evaluation_examples/test_v2.json", "--collect-only", *cli(judge), *NOT_CACHED)
    assert result.ret == 0
    assert judge.completions() == []


def test_the_judge_fixture(pytester: pytest.Pytester, judge: ModelServer) -> None:
    pytester.makepyfile(
        test_uses_judge="""
        def test_it(osworld_judge):
            assert osworld_judge is not None
            with osworld_judge.for_task("003") as scope:
                assert osworld_judge.generate_text("Same?", options={"max_tokens": 5}) == "NO"
            assert [c.task_id for c in scope.calls()] == ["003"]

        def test_same_judge(osworld_judge):
            assert len(osworld_judge.calls()) == 1
        """
    )
    judge.script("m", Reply("NO"))
    pytester.runpytest(*cli(judge), *NOT_CACHED).assert_outcomes(passed=2)
    assert judge.completions()[0].body["max_tokens"] == 5
    pytester.makepyfile(test_uses_judge="def test_none(osworld_judge):\n    assert osworld_judge is None\n")
    pytester.runpytest(*NOT_CACHED).assert_outcomes(passed=1)


@pytest.mark.docker
def test_workers_preflight_and_the_controller_adds_up_their_calls(
    pytester: pytest.Pytester, data: Path, judge: ModelServer
) -> None:
    judge.respond_with("m", lambda request: Reply("YES", prompt_tokens=10, completion_tokens=1))
    # xdist's controller checks a chosen sandbox profile before the session: the default one here.
    result = pytester.runpytest("evaluation_examples/test_v2.json", *cli(judge), "-n", "2", *NOT_CACHED)
    result.assert_outcomes(skipped=8)
    result.stdout.fnmatch_lines([f"{JUDGE_LINE}2 calls, 20 prompt + 2 completion tokens"])
    assert len(judge.completions()) == 2  # one preflight per worker
