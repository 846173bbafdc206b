"""Sandbox providers by name: the built-in ones, the settings' own profiles, and installed distributions'
entry points (the slot a Kubernetes pod provider would take)."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_osworld.sandbox import (
    Owner,
    SandboxConfigError,
    check_pool,
    describe_pool,
    make_provider,
    provider_class,
    sandbox_names,
)
from pytest_osworld.sandbox.providers.container import ContainerProvider
from pytest_osworld.sandbox.providers.desktop import DesktopProvider
from pytest_osworld.sandbox.providers.osworld_vm import OsworldVmProvider
from pytest_osworld.sandbox.registry import GROUP
from pytest_osworld.settings import Settings
from pytest_osworld.vm.provider import VmProvider

PLUGIN_MODULE = "osworld_test_plugin_sandbox"

# A provider of a third party: sandboxes that are records in a file named by POD_EVENTS.
PLUGIN_SOURCE = """
import json
import os

from pytest_osworld.sandbox import Sandbox, SandboxProvider


def record(*event):
    with open(os.environ["POD_EVENTS"], "a") as out:
        out.write(json.dumps(event) + "\\n")


class PodSandbox(Sandbox):
    def __init__(self, name):
        self._name = name
        self.stopped = False

    @property
    def name(self):
        return self._name

    def url(self, guest_port=5000):
        return f"http://{self._name}.pods.example:{guest_port}"

    def alive(self):
        return not self.stopped

    def logs(self, tail=50):
        return ""

    def describe(self):
        return {"profile": "pods", "pod": self._name}

    def stop(self):
        self.stopped = True
        record("stop", self._name)


class PodProvider(SandboxProvider):
    def __init__(self, namespace, owner):
        self.namespace = namespace
        self.owner = owner

    @classmethod
    def from_settings(cls, settings, owner, *, progress=None):
        record("from_settings", owner.run_id)
        return cls(settings.sandbox.profiles.get(settings.sandbox.name, {}).get("namespace", "default"), owner)

    @classmethod
    def check(cls, settings, owner, *, progress=None):
        record("check", owner.run_id)

    @classmethod
    def describe_pool(cls, settings, owner):
        return {"profile": settings.sandbox.name, "namespace": settings.sandbox.profiles[settings.sandbox.name]["namespace"]}

    def start(self, *, task_key, labels=None):
        record("start", task_key)
        return PodSandbox(f"{self.namespace}-pod")

    def sweep(self, run_id, *, pid=None):
        record("sweep", run_id, pid)
        return 0

    def close(self):
        record("close")


VALUE = 42
"""


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A real installed distribution (a dist-info folder on sys.path) declaring sandbox providers."""
    site = tmp_path / "site"
    site.mkdir()
    (site / f"{PLUGIN_MODULE}.py").write_text(PLUGIN_SOURCE)
    dist_info = site / "osworld_test_pods-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: osworld-test-pods\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        f"[{GROUP}]\n"
        f"pods = {PLUGIN_MODULE}:PodProvider\n"
        f"desktop = {PLUGIN_MODULE}:PodProvider\n"
        f"constant = {PLUGIN_MODULE}:VALUE\n"
        "missing = osworld_test_no_such_module:Provider\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("POD_EVENTS", str(tmp_path / "events.jsonl"))
    yield site
    sys.modules.pop(PLUGIN_MODULE, None)


def events(tmp_path: Path) -> list[list[object]]:
    path = tmp_path / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_each_builtin_name_is_its_provider() -> None:
    settings = Settings(sandbox_profiles={"mine": {"image": "example/desktop:1"}, "desktop": {"image": "x"}})
    assert provider_class("desktop", settings) is DesktopProvider  # adjusted by the settings, still built in
    assert provider_class("osworld-vm", settings) is OsworldVmProvider
    assert provider_class("vm", settings) is VmProvider
    assert provider_class("mine", settings) is ContainerProvider
    assert provider_class("ray", settings).__name__ == "RayProvider"  # loaded only when chosen
    assert sandbox_names(settings) == ["desktop", "mine", "osworld-vm", "ray", "vm"]


def test_an_unknown_name_lists_the_known_ones_and_how_to_define_one() -> None:
    settings = Settings(sandbox="nope", sandbox_profiles={"mine": {"image": "example/desktop:1"}})
    for call in (
        lambda: provider_class("nope", settings),
        lambda: make_provider(settings, Owner(run_id="r")),
        lambda: check_pool(settings, Owner(run_id="r")),
        lambda: describe_pool(settings, Owner(run_id="r")),
    ):
        with pytest.raises(SandboxConfigError) as info:
            call()
        assert "'nope' is not defined (known: desktop, mine, osworld-vm, ray, vm)" in str(info.value)
        assert "define it under sandbox_profiles in the YAML profile" in str(info.value)


def test_a_plugin_adds_a_provider_with_its_configuration(plugin_site: Path, tmp_path: Path) -> None:
    plugin = __import__(PLUGIN_MODULE)
    settings = Settings(sandbox="pods", sandbox_profiles={"pods": {"namespace": "ci"}})
    assert provider_class("pods", settings) is plugin.PodProvider
    assert "pods" in sandbox_names(settings) and "constant" in sandbox_names(settings)

    owner = Owner(run_id="pods-run")
    check_pool(settings, owner)
    assert describe_pool(settings, owner) == {"profile": "pods", "namespace": "ci"}
    provider = make_provider(settings, owner)
    assert isinstance(provider, plugin.PodProvider)
    with provider.start(task_key="os/t") as sandbox:
        assert sandbox.api_url == "http://ci-pod.pods.example:5000"  # the namespace of its configuration
    assert events(tmp_path) == [
        ["check", "pods-run"],
        ["from_settings", "pods-run"],
        ["start", "os/t"],
        ["stop", "ci-pod"],
    ]


def test_a_builtin_name_cannot_be_taken_over(plugin_site: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pytest_osworld.sandbox"):
        assert sandbox_names(Settings()).count("desktop") == 1
    assert provider_class("desktop", Settings()) is DesktopProvider
    assert "ignoring sandbox 'desktop' from osworld-test-pods 0.1" in caplog.text


def test_a_broken_plugin_is_named(plugin_site: Path) -> None:
    with pytest.raises(SandboxConfigError, match=r"sandbox 'missing' from osworld-test-pods 0.1 cannot be loaded"):
        provider_class("missing", Settings())
    with pytest.raises(SandboxConfigError, match=r"sandbox 'constant' .* is not a SandboxProvider subclass"):
        provider_class("constant", Settings())


@pytest.mark.docker
def test_the_fixtures_run_a_plugins_sandboxes(
    plugin_site: Path, tmp_path: Path, osworld_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(plugin_site))
    osworld_pytester.makefile(".yaml", profile="sandbox: pods\nsandbox_profiles:\n  pods: {namespace: ci}\n")
    osworld_pytester.makepyfile(
        test_pods=textwrap.dedent(
            """
            def test_one(osworld_sandbox):
                assert osworld_sandbox.api_url == "http://ci-pod.pods.example:5000" and osworld_sandbox.alive()
            """
        )
    )
    result = osworld_pytester.runpytest_subprocess("--osworld-run-id=pods-run", "--osworld-profile=profile.yaml")
    result.assert_outcomes(passed=1)
    recorded = events(tmp_path)
    assert [event[0] for event in recorded] == ["check", "from_settings", "start", "stop", "sweep", "close"]
    assert recorded[4][1] == "pods-run" and isinstance(recorded[4][2], int)  # this process's leftovers, by pid
