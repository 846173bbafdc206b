"""Tasks that need services carry markers that select them, and a service no definition names skips them."""

from __future__ import annotations

import json

import pytest

from pytest_osworld.services import BUILTIN, merge, required
from pytest_osworld.tasks.model import Task
from tests.support.taskfactory import task, write_jsonl


def collected(result: pytest.RunResult) -> list[str]:
    return [line.split("::")[1] for line in result.stdout.lines if "::" in line]


@pytest.mark.docker
def test_services_select_with_markers_under_strict_markers(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path / "t.jsonl",
        [
            task("echo1", services=["echo"]),
            task("both", services=["echo", "shop"]),
            task("px", domain="chrome", proxy=True),
            task("plain"),
        ],
    )
    cases = {
        "needs_services": ["os/echo1", "os/both", "chrome/px"],
        "not needs_services": ["os/plain"],
        "service(name='echo')": ["os/echo1", "os/both"],
        "service(name='shop')": ["os/both"],
        "service(name='proxy')": ["chrome/px"],
        "needs_proxy and service(name='proxy')": ["chrome/px"],
    }
    for marker, expected in cases.items():
        result = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", marker, "t.jsonl")
        assert collected(result) == expected, marker


@pytest.mark.docker
def test_a_task_needing_an_undefined_service_is_skipped_before_any_sandbox(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path / "t.jsonl",
        [task("px", domain="chrome", proxy=True, services=["mailer"]), task("shop", services=["shop"])],
    )
    result = pytester.runpytest(
        "t.jsonl", "-p", "no:cacheprovider", "-rs", "--osworld-agent", "null", "--osworld-run-id", "sel"
    )
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*needs the shared service 'mailer', which is not defined here (defined: *echo*proxy*)*services: in the YAML*",
            "*needs the shared service 'shop', which is not defined here*",
        ]
    )
    record = json.loads((pytester.path / "reports" / "sel" / "chrome" / "px" / "result.json").read_text())
    assert record["termination"] == "unsupported" and "'mailer'" in record["message"]
    assert record["services"] is None  # nothing was held: no sandbox, no service
    assert "needs_services" in record["markers"] and "needs_proxy" in record["markers"]


@pytest.mark.docker
def test_a_profile_that_defines_the_service_lets_the_task_run(pytester: pytest.Pytester) -> None:
    """Defined in the profile, the same task is no longer skipped (it is collected to run)."""
    write_jsonl(pytester.path / "t.jsonl", [task("shop", services=["shop"])])
    pytester.makefile(".yaml", profile="services:\n  shop:\n    image: example/shop:1\n")
    result = pytester.runpytest("--collect-only", "-q", "--osworld-profile=profile.yaml", "t.jsonl")
    assert collected(result) == ["os/shop"]
    result = pytester.runpytest(
        "t.jsonl",
        "-p",
        "no:cacheprovider",
        "--osworld-agent",
        "null",
        "--osworld-profile=profile.yaml",
        "-m",
        "not needs_services",
    )
    result.assert_outcomes(deselected=1)


def test_proxy_true_needs_the_proxy_service_only_where_the_run_enables_it() -> None:
    """OSWorld's proxy is an option of the run (its enable_proxy, here the proxy setting): without it a
    proxy: true task runs on the sandbox's own network (never skipped for it); with it, it needs the proxy."""
    flagged = Task.model_validate(task("px", domain="chrome", proxy=True))
    assert required(flagged, merge(BUILTIN, {})) == []
    assert required(flagged, merge(BUILTIN, {}), proxy=True) == ["proxy"]
    explicit = Task.model_validate(task("shop", services=["shop", "echo"]))
    assert required(explicit, merge(BUILTIN, {})) == ["shop", "echo"]
