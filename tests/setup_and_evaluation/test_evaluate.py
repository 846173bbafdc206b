"""The evaluator's semantics with real getters, real metrics and a real sandbox."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.agents.base import Action
from pytest_osworld.errors import EvaluatorError
from pytest_osworld.evaluation.evaluate import Evaluation, evaluate, is_fail
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.setup.errors import SetupError
from pytest_osworld.tasks.model import Getter, Task
from tests.support.desktop import Desktop
from tests.support.desktop_fixtures import make_context
from tests.support.taskfactory import task as make_task

EXPECTED_URL = "https://files.example.invalid/expected-lines.txt"


def task(evaluator: dict[str, Any]) -> Task:
    return Task.model_validate(make_task(f"t-{time.monotonic_ns()}", evaluator=evaluator))


def echo(text: str) -> dict[str, Any]:
    return {"type": "vm_command_line", "command": ["printf", "%s", text]}


def rule(value: Any) -> dict[str, Any]:
    return {"type": "rule", "rules": {"expected": value}}


# A getter that crashes: a cache file no step wrote (a command that cannot run is a valid 0, as upstream).
BROKEN = {"type": "cache_file", "path": "no-such-cache-file-for-eval.txt"}


@pytest.fixture
def ctx(shared_desktop: Desktop, tmp_path: Path) -> TaskContext:
    made = make_context(shared_desktop, tmp_path, offline=True)
    made.guest.upload("~/eval-test/lines.txt", b"a\nb\nc\n")
    made.assets.put_bytes(EXPECTED_URL, b"a\nb\nc\nd\n")
    return made


def test_is_fail_reads_every_form() -> None:
    assert is_fail("FAIL") and is_fail({"action_type": "FAIL"}) and is_fail(Action("FAIL"))
    assert not any(is_fail(a) for a in (None, "DONE", "WAIT", {"action_type": "DONE"}, Action.of_code("x=1")))


@pytest.mark.docker
def test_infeasible_runs_postconfig_then_rewards_fail(ctx: TaskContext) -> None:
    marker = f"/tmp/postconfig-{time.monotonic_ns()}"
    infeasible = task(
        {
            "func": "infeasible",
            "postconfig": [{"type": "execute", "parameters": {"command": ["bash", "-c", f"echo ran >> {marker}"]}}],
        }
    )
    assert evaluate(ctx, infeasible, "FAIL").score == 1.0
    assert evaluate(ctx, infeasible, {"action_type": "FAIL"}).score == 1.0
    assert evaluate(ctx, infeasible, "DONE").score == 0.0
    assert evaluate(ctx, infeasible, None).score == 0.0
    assert ctx.guest.file(marker) == b"ran\n" * 4
    assert [r.phase for r in ctx.steps] == ["postconfig"] * 4


@pytest.mark.docker
def test_a_last_fail_scores_zero_without_running_getters(ctx: TaskContext) -> None:
    broken = task({"func": "exact_match", "result": BROKEN, "expected": rule("x")})
    assert evaluate(ctx, broken, "FAIL") == Evaluation(0.0, [None], "the agent answered FAIL")
    with pytest.raises(EvaluatorError, match="no-such-cache-file-for-eval"):
        evaluate(ctx, broken, "DONE")


@pytest.mark.docker
def test_single_metric(ctx: TaskContext) -> None:
    assert (
        evaluate(ctx, task({"func": "exact_match", "result": echo("ok"), "expected": rule("ok")}), "DONE").score == 1.0
    )
    assert (
        evaluate(ctx, task({"func": "exact_match", "result": echo("no"), "expected": rule("ok")}), "DONE").score == 0.0
    )
    fractional = task(
        {
            "func": "diff_text_file",
            "result": {"type": "vm_file", "path": "~/eval-test/lines.txt", "dest": "lines.txt"},
            "expected": {"type": "cloud_file", "path": EXPECTED_URL, "dest": "expected.txt"},
        }
    )
    assert evaluate(ctx, fractional, "DONE").score == pytest.approx(6 / 7)


@pytest.mark.docker
def test_a_missing_result_file_scores_zero(ctx: TaskContext) -> None:
    missing = task(
        {
            "func": "compare_text_file",
            "result": {"type": "vm_file", "path": "~/eval-test/never-written.txt", "dest": "out.txt"},
            "expected": {"type": "cloud_file", "path": EXPECTED_URL, "dest": "expected.txt"},
        }
    )
    evaluation = evaluate(ctx, missing, "DONE")
    assert evaluation.score == 0.0 and "no result" in evaluation.message
    derived = task(
        {
            "func": "literal_match",
            "expected": rule(["x"]),
            "options": {"type": "list"},
            "result": {
                "type": "content_from_vm_file",
                "path": "~/eval-test/absent.xlsx",
                "file_type": "xlsx",
                "file_content": "last_row",
            },
        }
    )
    assert evaluate(ctx, derived, "DONE").score == 0.0


def three_metrics(options: list[Any]) -> Task:
    return task(
        {
            "func": ["literal_match", "is_utc_0", "diff_text_file"],
            "result": [
                echo("HELLO"),
                echo("a\nb\nc\nTime zone: Etc/UTC (UTC, +0000)"),
                {"type": "vm_file", "path": "~/eval-test/lines.txt", "dest": "lines.txt"},
            ],
            "expected": [
                {"type": "rule", "rules": "hello"},
                None,
                {"type": "cloud_file", "path": EXPECTED_URL, "dest": "e.txt"},
            ],
            "options": options,
        }
    )


@pytest.mark.docker
def test_conj_and_with_null_entries_and_parallel_options(ctx: TaskContext) -> None:
    full = evaluate(ctx, three_metrics([{"ignore_case": True}, None, None]), "DONE")
    assert full.metric_scores == [1.0, 1.0, pytest.approx(6 / 7)]
    assert full.score == pytest.approx((2 + 6 / 7) / 3)
    # Without its option the first metric is 0: "and" stops there.
    stopped = evaluate(ctx, three_metrics([None, None, None]), "DONE")
    assert stopped.score == 0.0 and stopped.metric_scores == [0.0, None, None]


@pytest.mark.docker
def test_conj_and_stops_before_a_later_crash(ctx: TaskContext) -> None:
    evaluation = evaluate(
        ctx,
        task(
            {
                "func": ["exact_match", "exact_match"],
                "result": [echo("a"), BROKEN],
                "expected": [rule("b"), rule("x")],
            }
        ),
        "DONE",
    )
    assert evaluation.score == 0.0 and evaluation.metric_scores == [0.0, None]


@pytest.mark.docker
def test_conj_or(ctx: TaskContext) -> None:
    first_one = evaluate(
        ctx,
        task(
            {
                "func": ["exact_match", "exact_match", "exact_match"],
                "conj": "or",
                "result": [echo("a"), echo("b"), BROKEN],
                "expected": [rule("x"), rule("b"), rule("x")],
            }
        ),
        "DONE",
    )
    assert first_one.score == 1.0 and first_one.metric_scores == [0.0, 1.0, None]
    best = evaluate(
        ctx,
        task(
            {
                "func": ["exact_match", "diff_text_file"],
                "conj": "or",
                "result": [echo("a"), {"type": "vm_file", "path": "~/eval-test/lines.txt", "dest": "l.txt"}],
                "expected": [rule("x"), {"type": "cloud_file", "path": EXPECTED_URL, "dest": "e.txt"}],
            }
        ),
        "DONE",
    )
    assert best.score == pytest.approx(6 / 7)
    missing_in_or = evaluate(
        ctx,
        task(
            {
                "func": ["compare_text_file", "exact_match"],
                "conj": "or",
                "result": [{"type": "vm_file", "path": "~/eval-test/none.txt", "dest": "n.txt"}, echo("y")],
                "expected": [{"type": "cloud_file", "path": EXPECTED_URL, "dest": "e.txt"}, rule("y")],
            }
        ),
        "DONE",
    )
    assert missing_in_or.score == 1.0 and missing_in_or.metric_scores == [0.0, 1.0]


@pytest.mark.docker
def test_crashes_are_evaluator_errors_never_zero(ctx: TaskContext) -> None:
    with pytest.raises(EvaluatorError, match="metric 'literal_match' failed"):
        evaluate(
            ctx,
            task(
                {
                    "func": "literal_match",
                    "result": echo("a"),
                    "expected": rule("a"),
                    "options": {"type": "unknown-kind"},
                }
            ),
            "DONE",
        )
    with pytest.raises(EvaluatorError, match="not implemented"):
        evaluate(
            ctx, task({"func": "exact_match", "result": {"type": "no_such_getter"}, "expected": rule("a")}), "DONE"
        )
    with pytest.raises(EvaluatorError, match="not implemented"):
        evaluate(ctx, task({"func": "no_such_metric_name", "result": echo("a")}), "DONE")
    with pytest.raises(EvaluatorError, match="expected getter 'cloud_file'"):
        evaluate(
            ctx,
            task(
                {
                    "func": "compare_text_file",
                    "result": {"type": "vm_file", "path": "~/eval-test/lines.txt", "dest": "x.txt"},
                    "expected": {"type": "cloud_file", "path": "https://files.example.invalid/none", "dest": "n"},
                }
            ),
            "DONE",
        )


@pytest.mark.docker
def test_postconfig_failure_masks_or_scores_zero(ctx: TaskContext) -> None:
    failing = {"type": "execute", "parameters": {"command": ["false"]}, "on_nonzero": "mask"}
    with pytest.raises(SetupError) as info:
        evaluate(
            ctx,
            task({"func": "exact_match", "result": echo("a"), "expected": rule("a"), "postconfig": [failing]}),
            "DONE",
        )
    assert info.value.phase == "postconfig"
    zero = evaluate(
        ctx,
        task(
            {
                "func": "exact_match",
                "result": echo("a"),
                "expected": rule("a"),
                "postconfig": [failing | {"on_nonzero": "score_zero"}],
            }
        ),
        "DONE",
    )
    assert zero.score == 0.0 and "postconfig" in zero.message


@pytest.mark.docker
def test_rule_getters_get_a_private_copy(ctx: TaskContext) -> None:
    relative = task(
        {
            "func": "check_direct_json_object",
            "result": {"type": "rule", "rules": {"time": "x"}},
            "expected": {
                "type": "rule_relativeTime",
                "rules": {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{Year}"}},
            },
        }
    )
    evaluate(ctx, relative, "DONE")
    expected = relative.evaluator.expected
    assert isinstance(expected, Getter)
    assert expected.to_json()["rules"]["expected"]["time"] == "{Year}"
