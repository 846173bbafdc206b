"""Declared real stacks (the ``osworld-v2`` service preset) and the skip of a service whose image is
not on the engine: before any sandbox starts, with the reason; never a mask or an error."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import docker
import pytest

from pytest_osworld.errors import SettingsError
from pytest_osworld.services import defined
from pytest_osworld.services.presets import PRESET_DIR, entries, names
from pytest_osworld.settings import Settings, read_profile
from pytest_osworld.settings import merge as merge_settings
from tests.episode.runs import run_tasks
from tests.services.tasks import plain_task, service_task, write_tasks
from tests.support.paths import REPO
from tests.support.services import run_leftovers

ORACLE = ("--osworld-agent", "oracle")
# OSWorld-V2 release osworld-v2-2026.08.08 (docs/services.md): GitLab's image, the websites' code.
GITLAB_IMAGE = "gitlab/gitlab-ce:18.7.0-ce.0"
RELEASE, WEB_CODE = "osworld-v2-2026.08.08", "90ec2218"
SPLIT_SITES = ("budgetwise", "cloudcrm", "eventix", "expenseflow", "insurance-claim", "mailhub", "vaultbank")


def settings_from(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "profile.yaml"
    path.write_text(text, encoding="utf-8")
    return merge_settings(cli={}, profile=read_profile(path), profile_path=path)


def test_the_osworld_v2_preset_declares_gitlab_with_its_pins(tmp_path: Path) -> None:
    services = defined(settings_from(tmp_path, "service_presets: [osworld-v2]\n"))
    gitlab = services["gitlab"]
    assert gitlab.image == GITLAB_IMAGE and gitlab.build is None and gitlab.ports == [80]
    assert gitlab.exclusive and gitlab.hostnames("osworld.test") == ["gitlab.osworld.test"]
    assert (gitlab.readiness.path, gitlab.readiness.status, gitlab.readiness.deadline) == ("/users/sign_in", 200, 900)
    # The token comes from this process's environment, by name only; the bootstrap sets root's to it.
    assert gitlab.pass_env == ["GITLAB_PRIVATE_TOKEN"] and "GITLAB_PRIVATE_TOKEN" not in gitlab.env
    assert gitlab.bootstrap is not None and gitlab.bootstrap[:2] == ["gitlab-rails", "runner"]
    assert "set_token(ENV.fetch('GITLAB_PRIVATE_TOKEN'))" in gitlab.bootstrap[2]
    assert gitlab.reset is not None and gitlab.reset.command is not None and gitlab.reset.http is None
    assert "external_url 'http://gitlab.osworld.test'" in gitlab.env["GITLAB_OMNIBUS_CONFIG"]
    # Not taken: the run has its built-in services only.
    assert "gitlab" not in defined(Settings())


def test_the_osworld_v2_preset_declares_the_websites_compose_builds(tmp_path: Path) -> None:
    services = defined(settings_from(tmp_path, "service_presets: osworld-v2\n"))
    whole = services["awsconsole"]
    assert (whole.image, whole.ports) == ("osworld-web-awsconsole", [3000])
    for site in SPLIT_SITES:
        backend = services[site]
        assert backend.image == f"osworld-web-{site.replace('-', '_')}_web_backend", site
        assert backend.ports == [8000] and backend.env["API_PREFIX"] == "/api"
    for site in ("awsconsole", *SPLIT_SITES):
        service = services[site]
        assert service.hostnames("osworld.test") == [f"{site}.osworld.test"]
        assert service.readiness.path == "/api/state?cookie=readycheck" and service.readiness.status == 200
        assert service.reset is not None and service.reset.state_key == "cookie" and not service.exclusive


def test_a_profile_adjusts_a_preset_service_and_a_wrong_preset_is_named(tmp_path: Path) -> None:
    services = defined(
        settings_from(
            tmp_path,
            "service_presets: [osworld-v2]\nservices:\n  mailhub: {image: web-mailhub_web_backend}\n"
            "  gitlab: {readiness: {deadline: 1200}}\n",
        )
    )
    assert services["mailhub"].image == "web-mailhub_web_backend" and services["mailhub"].ports == [8000]
    assert services["gitlab"].readiness.deadline == 1200 and services["gitlab"].readiness.path == "/users/sign_in"
    with pytest.raises(SettingsError, match=r"service_presets: 'osworld-v3' is not a service preset .*osworld-v2"):
        settings_from(tmp_path, "service_presets: [osworld-v3]\n")
    with pytest.raises(SettingsError, match=r"gitlab is declared by the preset osworld-v2: add service_presets"):
        settings_from(tmp_path, "services:\n  gitlab: {exclusive: false}\n")


def test_every_declaration_and_pin_is_in_the_docs() -> None:
    docs = (REPO / "docs" / "services.md").read_text(encoding="utf-8")
    assert names() == ["osworld-v2"] and (PRESET_DIR / "osworld-v2.yaml").is_file()
    for name, entry in entries("osworld-v2").items():
        assert f"`{name}`" in docs and f"`{entry['image']}`" in docs, name
    for pin in (RELEASE, WEB_CODE, "8655d651", "/api/state?cookie=readycheck", "GITLAB_PRIVATE_TOKEN"):
        assert pin in docs, pin


@pytest.mark.docker
def test_a_service_whose_image_is_absent_skips_its_tasks_before_any_sandbox(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    absent = f"pytest-osworld/absent-{secrets.token_hex(4)}:1"
    osworld_pytester.makefile(
        ".yaml",
        profile=f"services:\n  ghost:\n    image: {absent}\n    ports: [8000]\n    readiness: {{path: /health}}\n",
    )
    tasks = write_tasks(
        osworld_pytester.path / "t.jsonl",
        [
            service_task("g1", service="ghost"),
            service_task("e1"),
            service_task("g2", service="ghost"),
            plain_task("p1"),
        ],
    )
    run = run_tasks(osworld_pytester, tasks, "--osworld-profile=profile.yaml", "-rs", *ORACLE, run_id=run_id)
    run.result.assert_outcomes(passed=2, skipped=2)
    records = run.records()
    for key in ("os/g1", "os/g2"):
        record = records[key]
        assert record["termination"] == "unsupported" and not record["masked"], record
        assert record["message"].endswith("; pull or build it (docs/services.md)"), record["message"]
        assert record["message"].startswith(f"unsupported here: service ghost: image {absent} is not on the engine at ")
        assert record["sandbox"] == {} and record["services"] is None  # nothing started for it
    assert records["os/e1"]["score"] == 1.0 and records["os/p1"]["score"] == 1.0
    run.result.stdout.fnmatch_lines(
        [
            f"SKIPPED [[]2[]] *unsupported here: service ghost: image {absent} is not on the engine at *; pull or build it*"
        ]
    )
    # The summary counts the echo service the run used, and nothing of the one it could not start.
    summary = run.summary()
    assert set(summary["services"]) == {"echo"} and summary["services"]["echo"]["tasks"] == 1
    run.result.stdout.fnmatch_lines(["*services   echo: 1 task, 1 start, 0 restarts, 0 failures"])
    assert run_leftovers(engine, run_id) == ([], [])
    assert json.loads((run.run_dir / "summary.json").read_text())["integrity"]["skipped"] == 2
