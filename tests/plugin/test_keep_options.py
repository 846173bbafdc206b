"""``--osworld-keep-failed`` and its companions are checked before any sandbox starts (no engine needed)."""

from __future__ import annotations

import pytest

from tests.support.taskfactory import task, write_jsonl

ARGS = ("-p", "no:cacheprovider", "--osworld-agent", "null")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    write_jsonl(pytester.path / "tasks.jsonl", [task("t1")])
    return pytester


@pytest.mark.parametrize(("sandbox", "provider"), [("vm", "VmProvider"), ("ray", "RayProvider")])
def test_a_provider_that_cannot_keep_refuses_the_option(project: pytest.Pytester, sandbox: str, provider: str) -> None:
    run = project.runpytest("tasks.jsonl", *ARGS, "--osworld-keep-failed", "1", "--osworld-sandbox", sandbox)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines(
        [
            f"*--osworld-keep-failed is not supported by the '{sandbox}' sandbox ({provider})*leave --osworld-keep-failed out*"
        ]
    )
    assert "Traceback" not in run.stdout.str() + run.stderr.str()


def test_until_exit_needs_a_number_to_keep(project: pytest.Pytester) -> None:
    run = project.runpytest("tasks.jsonl", *ARGS, "--osworld-keep-failed-until-exit")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines(["*--osworld-keep-failed-until-exit needs --osworld-keep-failed N*"])


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--osworld-keep-failed", "-1", "*--osworld-keep-failed: Input should be greater than or equal to 0*"),
        ("--osworld-keep-failed", "some", "*--osworld-keep-failed: Input should be a valid integer*"),
        ("--osworld-keep-failed-timeout", "0", "*--osworld-keep-failed-timeout: Input should be greater than 0*"),
    ],
)
def test_bad_values_are_named(project: pytest.Pytester, option: str, value: str, message: str) -> None:
    run = project.runpytest("tasks.jsonl", *ARGS, option, value)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines([message])


def test_the_desktop_sandbox_takes_the_options(project: pytest.Pytester) -> None:
    run = project.runpytest(
        "tasks.jsonl",
        *ARGS,
        "--osworld-keep-failed",
        "2",
        "--osworld-keep-failed-until-exit",
        "--osworld-keep-failed-timeout",
        "5",
        "--collect-only",
        "-q",
    )
    assert run.ret == pytest.ExitCode.OK, run.stdout.str() + run.stderr.str()
    run.stdout.fnmatch_lines(["tasks.jsonl::os/t1"])


def test_the_profile_sets_them_too(project: pytest.Pytester) -> None:
    (project.path / "profile.yaml").write_text("keep_failed: 1\nsandbox: vm\n")
    run = project.runpytest("tasks.jsonl", *ARGS, "--osworld-profile", "profile.yaml")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines(["*--osworld-keep-failed is not supported by the 'vm' sandbox (VmProvider)*"])
