"""Settings survive a trip through their own dumps: a process hands its settings to another (a Ray node's
agent, a run's owner started as a subprocess) as JSON, nested as ``model_dump`` gives them, or flat."""

from __future__ import annotations

from pytest_osworld.settings import Settings


def _settings() -> Settings:
    # "model", "sandbox" and "services" are flat names and groups at once; a service may be named "proxy",
    # as the services group's proxy switch is.
    return Settings(
        model="scripted",
        model_url="http://127.0.0.1:9/v1",
        sandbox="ray",
        ray_address="auto",
        warm_pool=1,
        max_steps=3,
        services={"proxy": {"image": "example/proxy:1", "ports": [8080]}},
        gate="paired",
    )


def test_the_nested_dump_validates_back() -> None:
    settings = _settings()
    assert Settings.model_validate_json(settings.model_dump_json()) == settings
    assert Settings.model_validate(settings.model_dump()) == settings


def test_the_flat_dump_validates_back() -> None:
    settings = _settings()
    again = Settings.model_validate(settings.flat(mode="json"))
    assert again == settings
    assert (again.model.name, again.sandbox.name, list(again.services.declared)) == ("scripted", "ray", ["proxy"])
