"""Every flat setting of main before the grouping (old_spellings.json) still works as the user wrote it:
the option, the profile key and the ini key, each landing in its nested field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_osworld.errors import SettingsError
from pytest_osworld.settings import Settings, from_pytest_config, merge, read_profile

OLD = json.loads((Path(__file__).parent / "old_spellings.json").read_text(encoding="utf-8"))["settings"]
# compat sets the loop knobs; given beside another value of one of them it is an error (tested on its own).
TOGETHER = {name: spec for name, spec in OLD.items() if name != "compat"}


def landed(settings: Settings, nested: str) -> Any:
    group, field = nested.split(".")
    return getattr(settings, group).model_dump(mode="json")[field]


def cli_args(specs: dict[str, dict[str, Any]]) -> list[str]:
    args = []
    for spec in specs.values():
        if spec["option"] is None:
            continue
        if isinstance(spec["value"], bool):
            args.append(spec["option"] if spec["value"] else spec["option"].replace("--osworld-", "--osworld-no-", 1))
        else:
            args += [spec["option"], spec["value"]]
    return args


def test_the_list_is_mains_106_settings() -> None:
    assert len(OLD) == 106 and sum(spec["option"] is None for spec in OLD.values()) == 4


def test_every_old_option_lands_in_its_nested_field(pytester: pytest.Pytester) -> None:
    for specs in (TOGETHER, {"compat": OLD["compat"]}):
        settings = from_pytest_config(pytester.parseconfig(*cli_args(specs)))
        for name, spec in specs.items():
            if spec["option"] is not None:
                assert landed(settings, spec["nested"]) == spec["expected"], name


def test_every_old_profile_key_lands_in_its_nested_field(tmp_path: Path) -> None:
    for specs in (TOGETHER, {"compat": OLD["compat"]}):
        profile = tmp_path / "profile.yaml"
        profile.write_text(yaml.safe_dump({name: spec["value"] for name, spec in specs.items()}), encoding="utf-8")
        settings = merge(cli={}, profile=read_profile(profile), profile_path=profile)
        for name, spec in specs.items():
            assert landed(settings, spec["nested"]) == spec["expected"], name


def test_every_old_ini_key_lands_in_its_nested_field(pytester: pytest.Pytester) -> None:
    lines = [f"osworld_{name} = {spec['value']}" for name, spec in TOGETHER.items() if spec["option"] is not None]
    pytester.makeini("[pytest]\n" + "\n".join(lines) + "\n")
    settings = from_pytest_config(pytester.parseconfig())
    for name, spec in TOGETHER.items():
        if spec["option"] is not None:
            assert landed(settings, spec["nested"]) == spec["expected"], name


def test_precedence_is_cli_over_profile_over_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nosworld_max_steps = 7\nosworld_model_url = http://ini/v1\nosworld_gate_view = valid\n")
    profile = pytester.path / "p.yaml"
    profile.write_text("max_steps: 8\nmodel: {url: http://profile/v1}\n", encoding="utf-8")
    settings = from_pytest_config(pytester.parseconfig("--osworld-profile", str(profile), "--osworld-max-steps", "9"))
    assert (settings.loop.max_steps, settings.model.url, settings.gate.view) == (9, "http://profile/v1", "valid")


def test_a_bad_value_names_the_key_as_written(pytester: pytest.Pytester, tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"--osworld-model-retries: .*\(got 'many'\)"):
        from_pytest_config(pytester.parseconfig("--osworld-model-retries", "many"))
    flat = tmp_path / "flat.yaml"
    flat.write_text("judge_timeout: -1\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=rf"profile {flat}: judge_timeout: "):
        merge(cli={}, profile=read_profile(flat), profile_path=flat)
    nested = tmp_path / "nested.yaml"
    nested.write_text("judge: {timeout: -1}\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=rf"profile {nested}: judge.timeout: "):
        merge(cli={}, profile=read_profile(nested), profile_path=nested)
    pytester.makeini("[pytest]\nosworld_vm_cpus = lots\n")
    with pytest.raises(SettingsError, match=r"ini key osworld_vm_cpus: "):
        from_pytest_config(pytester.parseconfig())


def test_a_profile_writes_a_group_nested_by_field_or_flat_name(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "model: {url: http://gpu/v1, name: m, model_retries: 2}\nsandbox: {name: vm, cpus: 2}\n"
        "gate: {mode: fixed}\nservices: {shop: {image: example/shop:1, ports: [8080]}}\n",
        encoding="utf-8",
    )
    settings = merge(cli={}, profile=read_profile(profile), profile_path=profile)
    assert (settings.model.url, settings.model.name, settings.model.retries) == ("http://gpu/v1", "m", 2)
    assert (settings.sandbox.name, settings.sandbox.cpus, settings.gate.mode) == ("vm", 2, "fixed")
    assert "shop" in settings.services.declared  # services: stays the services' declarations
    profile.write_text("model: {url: http://a/v1}\nmodel_url: http://b/v1\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="model_url and model.url are the same setting"):
        read_profile(profile)
    profile.write_text("loop: {steps: 3}\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"unknown setting loop.steps \(the loop group has: agent, max_steps"):
        read_profile(profile)


def test_a_renamed_setting_takes_its_old_name_wherever_a_flat_name_is_taken(tmp_path: Path) -> None:
    """settle (the pause after an action) is action_pause now: the option, ini key and profile key are
    above; here the code's flat names, a profile's nested group and a task's overrides."""
    assert Settings(settle=2.0).loop.action_pause == 2.0
    assert Settings.model_validate({"loop": {"settle": 3.0}}).loop.action_pause == 3.0
    assert Settings().replace(settle=1.5).loop.action_pause == 1.5
    settings = Settings(task_overrides={"t": {"settle": 4.0}})
    assert settings.for_task("t").loop.action_pause == 4.0 and settings.value("settle") == 0.5
    profile = tmp_path / "p.yaml"
    profile.write_text("loop: {settle: 0.25}\n", encoding="utf-8")
    assert merge(cli={}, profile=read_profile(profile), profile_path=profile).loop.action_pause == 0.25
    profile.write_text("settle: 1\naction_pause: 2\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="action_pause and settle are the same setting"):
        read_profile(profile)
    profile.write_text("settle: -1\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=rf"profile {profile}: settle: "):
        merge(cli={}, profile=read_profile(profile), profile_path=profile)
    assert merge(cli={"settle": 0}, ini={"action_pause": 3}).loop.action_pause == 0  # the CLI's, as spelled
