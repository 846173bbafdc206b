"""Settings: CLI > profile > ini > defaults, validated once, errors naming the key and its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_osworld.errors import SettingsError
from pytest_osworld.settings import Settings, merge, read_profile
from tests.support.taskfactory import task, write_jsonl


def test_precedence_cli_over_profile_over_ini_over_default(tmp_path: Path) -> None:
    merged = merge(
        cli={"max_steps": "30"},
        profile={"max_steps": 20, "model": "from-profile"},
        ini={"max_steps": "10", "model": "from-ini", "agent": "null"},
    )
    assert merged.loop.max_steps == 30
    assert merged.model.name == "from-profile"
    assert merged.loop.agent == "null"
    assert merged.loop.episode_timeout == Settings().loop.episode_timeout


def test_relative_paths_follow_where_they_were_written(tmp_path: Path) -> None:
    profile = tmp_path / "conf" / "p.yaml"
    merged = merge(cli={}, profile={"report_dir": "out"}, profile_path=profile, invocation_dir=tmp_path)
    assert merged.reports.dir == tmp_path / "conf" / "out"
    merged = merge(
        cli={"report_dir": "cli-out"}, profile={"report_dir": "out"}, profile_path=profile, invocation_dir=tmp_path
    )
    assert merged.reports.dir == tmp_path / "cli-out"


def test_errors_name_key_and_source(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as info:
        merge(cli={"max_steps": "many"}, profile={"top_p": 3}, profile_path=tmp_path / "p.yaml", ini={"repeat": "0"})
    text = str(info.value)
    assert "--osworld-max-steps: Input should be a valid integer" in text
    assert f"profile {tmp_path / 'p.yaml'}: top_p: Input should be less than or equal to 1" in text
    assert "ini key osworld_repeat: Input should be greater than or equal to 1" in text


def test_unknown_profile_key_suggests_the_right_one(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("max-step: 3\n")
    with pytest.raises(SettingsError, match=r"unknown setting 'max_step'; did you mean 'max_steps'\?"):
        read_profile(profile)


def test_broken_yaml_names_the_line(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("a: 1\nb: [\n")
    with pytest.raises(SettingsError, match=r"p.yaml:3: not valid YAML"):
        read_profile(profile)


def test_task_overrides_apply_to_their_task_only() -> None:
    merged = merge(cli={}, profile={"temperature": 0.2, "task_overrides": {"t1": {"temperature": 0.9, "max_steps": 3}}})
    assert merged.for_task("t1").model.temperature == 0.9
    assert merged.for_task("t1").loop.max_steps == 3
    assert merged.for_task("t2").model.temperature == 0.2


def test_task_overrides_refuse_infrastructure_keys() -> None:
    with pytest.raises(SettingsError, match="task t1: sandbox cannot be set per task"):
        merge(cli={}, profile={"task_overrides": {"t1": {"sandbox": "vm"}}})


def test_layers_through_pytest(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "t.jsonl", [task("a")])
    pytester.makeini("[pytest]\nosworld_max_steps = 7\nosworld_repeat = 2\nosworld_agent = null\n")
    (pytester.path / "p.yaml").write_text("repeat: 3\nmodel: m-profile\n")
    pytester.makeconftest(
        """
        def pytest_collection_finish(session):
            from pytest_osworld.plugin.run import get_run
            s = get_run(session.config).settings
            print(f"SETTINGS max_steps={s.loop.max_steps} repeat={s.tasks.repeat} agent={s.loop.agent} model={s.model.name}")
        """
    )
    result = pytester.runpytest(
        "--collect-only", "-s", "--osworld-profile", "p.yaml", "--osworld-agent", "oracle", "t.jsonl"
    )
    result.stdout.fnmatch_lines(["SETTINGS max_steps=7 repeat=3 agent=oracle model=m-profile"])
    assert result.ret == 0


def test_bad_setting_stops_pytest_with_a_usage_error(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "t.jsonl", [task("a")])
    result = pytester.runpytest("--osworld-shard", "3/2", "t.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--osworld-shard: the shard index must be between 1 and 2, got '3/2'*"])
    assert "Traceback" not in result.stderr.str()
