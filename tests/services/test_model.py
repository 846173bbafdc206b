"""The service model, the profile's ``services:`` key (merge rules, located errors) and what tasks declare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_osworld.errors import SettingsError
from pytest_osworld.services import BUILTIN, defined, undefined_reason
from pytest_osworld.services.declaration import Service, ServiceConfigError, merge
from pytest_osworld.settings import Settings, read_profile
from pytest_osworld.settings import merge as merge_settings
from pytest_osworld.tasks.markers import task_markers
from pytest_osworld.tasks.model import Task


def settings_from(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "profile.yaml"
    path.write_text(text, encoding="utf-8")
    return merge_settings(cli={}, profile=read_profile(path), profile_path=path)


def test_the_builtin_echo_service() -> None:
    echo = BUILTIN["echo"]
    assert echo.build == "desktop" and echo.image_ref() == "pytest-osworld/desktop:latest"
    assert echo.ports == [8000] and echo.readiness.path == "/health" and not echo.exclusive
    assert echo.hostnames("osworld.test") == ["echo.osworld.test"]


def test_a_profile_adjusts_a_builtin_service_and_adds_its_own(tmp_path: Path) -> None:
    settings = settings_from(
        tmp_path,
        """
services:
  echo:
    exclusive: true
    env: {EXTRA: 4}
    readiness: {deadline: 5}
  shop:
    image: example/shop:1
    ports: [80, 443]
    aliases: [store, shop.example.com]
    reset: {state_key: cookie}
""",
    )
    services = defined(settings)
    echo = services["echo"]
    assert echo.exclusive
    assert echo.env == {"ECHO_PORT": "8000", "EXTRA": "4"}  # merged, YAML's 4 as text
    assert (echo.readiness.deadline, echo.readiness.path) == (5.0, "/health")  # other probe keys kept
    assert echo.entrypoint == BUILTIN["echo"].entrypoint
    shop = services["shop"]
    assert shop.image == "example/shop:1" and shop.build is None and shop.probe_port == 80
    assert shop.hostnames("osworld.test") == ["shop.osworld.test", "store.osworld.test", "shop.example.com"]
    assert shop.reset is not None and shop.reset.state_key == "cookie"


def test_an_image_given_to_a_builtin_service_replaces_its_build() -> None:
    services = merge(BUILTIN, {"echo": {"image": "example/echo:2"}})
    assert services["echo"].image == "example/echo:2" and services["echo"].build is None


def test_errors_name_the_profile_the_service_the_key_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as caught:
        settings_from(
            tmp_path,
            """
services:
  echo:
    readiness: {status: ok, bogus: 1}
    colour: red
  shop:
    ports: [80]
  Bad_Name:
    image: x
""",
        )
    text = str(caught.value)
    assert f"profile {tmp_path / 'profile.yaml'}: services:" in text
    assert "echo.readiness.status: Input should be a valid integer" in text and "(got 'ok')" in text
    assert "echo.readiness.bogus: unknown key (known: port, path, status, deadline, check_timeout)" in text
    assert "echo.colour: unknown key (known: image, build, entrypoint" in text
    assert "shop: give exactly one of image: REF (on the engine) or build: desktop" in text
    assert "'Bad_Name' is not a valid service name" in text


def test_a_service_entry_must_be_a_mapping_and_the_suffix_a_dns_suffix() -> None:
    with pytest.raises(ServiceConfigError, match=r"services.echo: expected a mapping of service keys"):
        merge(BUILTIN, {"echo": "yes"})
    with pytest.raises(SettingsError, match=r"--osworld-service-host-suffix: 'Not A Suffix' is not a DNS suffix"):
        merge_settings(cli={"service_host_suffix": "Not A Suffix"})
    with pytest.raises(ServiceConfigError, match=r"services.x.reset: .*give http: \{path: ...\} or state_key"):
        merge(BUILTIN, {"x": {"image": "i", "reset": {}}})


def test_defaults_of_the_settings() -> None:
    settings = Settings()
    assert settings.services.host_suffix == "osworld.test" and settings.services.restarts == 1
    assert {"echo", "proxy"} <= set(defined(settings)) and not settings.services.proxy  # built in; proxy: true off


def test_a_task_declares_services_and_proxy_means_the_proxy_service() -> None:
    line = {
        "id": "t",
        "instruction": "x",
        "evaluator": {"func": "infeasible"},
        "services": ["echo", "shop"],
        "proxy": True,
        "kept": {"unknown": 1},
    }
    task = Task.model_validate(line)
    assert task.needed_services == ["echo", "shop", "proxy"]
    assert task.to_json() == line  # kept on a round trip, unknown keys too
    assert "needs_services" in task_markers(task, "os")
    plain = Task.model_validate({"id": "p", "instruction": "x", "evaluator": {"func": "infeasible"}})
    assert plain.needed_services == [] and "services" not in plain.to_json()
    assert "needs_services" not in task_markers(plain, "os")
    with pytest.raises(ValueError, match="'Echo Web' is not a service name"):
        Task.model_validate({**line, "services": ["Echo Web"]})


def test_an_undefined_service_is_a_reason_naming_it() -> None:
    services: dict[str, Service] = dict(BUILTIN)
    assert undefined_reason(["echo"], services) is None
    reason = undefined_reason(["echo", "shop"], services)
    assert reason is not None and "'shop'" in reason and "services:" in reason and "echo" in reason
    assert json.dumps(reason)  # plain text for a skip reason
