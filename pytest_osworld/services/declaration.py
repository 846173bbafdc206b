"""The service model: a shared container (a website, a forge, a proxy) that tasks declare by name.

A service is one container per run (per environment host), on the run's Docker network, reached
from sandboxes by hostnames ``<name>.<suffix>`` (and its aliases), ready when its probe answers.
Built-in definitions ship with the package (``builtin.py``); the YAML profile's ``services:`` key
adds services of its own or overrides keys of built-in ones, with the same rules as
``sandbox_profiles`` (a built-in entry adjusts, a new entry is a whole service; an unknown key is an
error that names it).

Nothing here imports the settings: ``settings/groups.py`` validates its ``services`` key through
:func:`check_entries` so a mistake is reported with the profile file it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pytest_osworld.errors import OsworldError
from pytest_osworld.sanitize import is_env_name
from pytest_osworld.units import HttpPath

# One DNS label: a service's name is also the first label of its hostname.
_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
DEFAULT_SUFFIX = "osworld.test"  # .test is reserved (RFC 2606): it never names a real site


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Probe(_Model):
    """Ready (and healthy) = ``GET path`` on the container ``port`` answers ``status`` within ``deadline`` s."""

    port: int | None = Field(None, ge=1, le=65535)  # None: the service's first port
    path: HttpPath = "/"
    status: int = Field(200, ge=100, le=599)
    deadline: float = Field(60.0, gt=0)
    # A health check before a task is one quick request, not a wait.
    check_timeout: float = Field(3.0, gt=0)


class HttpReset(_Model):
    """A request that puts the service back to its initial state (run between holders of an exclusive one)."""

    method: Literal["GET", "POST", "PUT", "DELETE", "PATCH"] = "POST"
    path: HttpPath
    port: int | None = Field(None, ge=1, le=65535)
    status: int = Field(200, ge=100, le=599)
    # Sent with the call; ``{token}`` in a value stands for the service's run token (``token_env``).
    headers: dict[str, str] = Field(default_factory=dict)


class Reset(_Model):
    """How one task's use is kept apart from the next: an HTTP call, a command, or a state key per task.

    ``command`` is run in the service's container (``docker exec``, as argv) where ``http`` would be
    called. ``state_key`` names the key the service keeps state by (e.g. ``cookie``): each task gets a
    value of its own (``<run>-<task key>``, in its record), so tasks share the service without a reset.
    """

    http: HttpReset | None = None
    command: list[str] | None = Field(None, min_length=1)
    state_key: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Reset:
        if self.http is None and self.command is None and self.state_key is None:
            raise ValueError("give http: {path: ...} or state_key: NAME (or command: [ARGV], run in the container)")
        if self.http is not None and self.command is not None:
            raise ValueError("give http: or command:, not both (one reset per turn)")
        return self


class Service(_Model):
    """A shared service. Also the schema of a new entry under ``services:`` in the YAML profile."""

    name: str
    # The image, already on the engine (no registry is reached); or build: desktop for the project's
    # desktop image (built when missing), which has python3 for small services of the project's own.
    image: str | None = None
    build: Literal["desktop"] | None = None
    entrypoint: list[str] | str | None = None
    command: list[str] | str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    # Names of variables copied from the pytest process's environment into the container when it starts
    # (absent ones are left out): their values stay out of the definition, so out of every record.
    pass_env: list[str] = Field(default_factory=list)
    ports: list[int] = Field(default_factory=lambda: [80])
    # Hostnames beside <name>.<suffix>: one label gets the suffix (shop -> shop.<suffix>), a dotted one is kept.
    aliases: list[str] = Field(default_factory=list)
    readiness: Probe = Field(default_factory=Probe)
    reset: Reset | None = None
    # Run once in the container (docker exec, argv) after it first answers its probe, e.g. to create a token.
    bootstrap: list[str] | None = Field(None, min_length=1)
    # Held by one task at a time across all workers (first come, first served), reset between holders.
    exclusive: bool = False
    description: str = ""
    # The environment variable that gives the service its run's secret token: one random value per run,
    # the same in every worker (``OSWORLD_<NAME>_TOKEN`` when set). Tasks get it as {SERVICE_TOKEN:name}.
    token_env: str | None = None

    @field_validator("name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if not _LABEL.match(value):
            raise ValueError(
                f"{value!r} is not a valid service name: lower-case letters, digits and '-', as one DNS label"
            )
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, value: Any) -> Any:
        if isinstance(value, dict):  # YAML turns 4 and yes into int and bool; the container sees text
            return {str(k): str(v) for k, v in value.items()}
        return value

    @field_validator("pass_env")
    @classmethod
    def _env_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not is_env_name(name):
                raise ValueError(f"{name!r} is not an environment variable name (letters, digits and '_')")
        return value

    @field_validator("ports")
    @classmethod
    def _ports(cls, value: list[int]) -> list[int]:
        if not value:
            raise ValueError("a service needs at least one port (its probe and its users reach it there)")
        for port in value:
            if not 1 <= port <= 65535:
                raise ValueError(f"{port} is not a port number")
        return list(dict.fromkeys(value))

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        for alias in value:
            if not _HOSTNAME.match(alias):
                raise ValueError(f"{alias!r} is not a hostname (lower-case labels separated by dots)")
        return value

    @model_validator(mode="after")
    def _has_image(self) -> Service:
        if (self.image is None) == (self.build is None):
            raise ValueError("give exactly one of image: REF (on the engine) or build: desktop")
        return self

    @property
    def probe_port(self) -> int:
        return self.readiness.port or self.ports[0]

    def hostnames(self, suffix: str) -> list[str]:
        """What sandboxes resolve to this service: ``<name>.<suffix>`` and its aliases."""
        names = [f"{self.name}.{suffix}"]
        names += [alias if "." in alias else f"{alias}.{suffix}" for alias in self.aliases]
        return list(dict.fromkeys(names))

    def image_ref(self) -> str:
        # guest.build names the desktop image; imported here only, as the settings import this module.
        from pytest_osworld.guest.build import LATEST

        return self.image or LATEST


class _ProbeOverrides(_Model):
    """Keys of a built-in service's probe to change; the others keep their built-in values."""

    port: int | None = Field(None, ge=1, le=65535)
    path: str | None = None
    status: int | None = Field(None, ge=100, le=599)
    deadline: float | None = Field(None, gt=0)
    check_timeout: float | None = Field(None, gt=0)


class _Overrides(_Model):
    """What an entry named like a built-in service may change: every key but the name, all optional."""

    image: str | None = None
    build: Literal["desktop"] | None = None
    entrypoint: list[str] | str | None = None
    command: list[str] | str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: list[str] | None = None
    ports: list[int] | None = None
    aliases: list[str] | None = None
    readiness: _ProbeOverrides | None = None
    reset: Reset | None = None
    bootstrap: list[str] | None = Field(None, min_length=1)
    exclusive: bool | None = None
    description: str | None = None
    token_env: str | None = None

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, value: Any) -> Any:
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else value


class ServiceConfigError(OsworldError, ValueError):
    """A ``services:`` entry is wrong; the message names every bad key and what to write instead."""


_KNOWN = ", ".join(k for k in Service.model_fields if k != "name")


def merge(builtin: Mapping[str, Service], entries: Mapping[str, Any]) -> dict[str, Service]:
    """The built-in services with the profile's ``services:`` entries applied.

    An entry named like a built-in adjusts its keys (``env`` is merged, ``readiness`` keys too; an
    ``image`` replaces ``build``); another entry is a whole service. Raises :class:`ServiceConfigError`
    naming every problem as ``services.<name>.<key>: <what is wrong>``.
    """
    services = dict(builtin)
    problems: list[str] = []
    for name, entry in entries.items():
        where = f"services.{name}"
        if not isinstance(entry, Mapping):
            problems.append(f"{where}: expected a mapping of service keys ({_KNOWN}), got {entry!r}")
            continue
        base = builtin.get(str(name))
        try:
            if base is None:
                services[str(name)] = Service.model_validate({**entry, "name": name})
            else:
                services[str(name)] = _adjust(base, _Overrides.model_validate(entry), entry)
        except ValidationError as exc:
            problems.extend(_located(where, exc, builtin=base is not None))
    if problems:
        raise ServiceConfigError("\n  ".join(problems))
    return services


def _adjust(base: Service, over: _Overrides, given: Mapping[str, Any]) -> Service:
    data = base.model_dump()
    for key in given:
        value = getattr(over, key)
        if key == "env":
            data["env"] = {**base.env, **over.env}
        elif key == "readiness":
            changed = over.readiness.model_dump(exclude_unset=True) if over.readiness else {}
            data["readiness"] = {**base.readiness.model_dump(), **changed}
        elif key == "image" and value is not None:
            data["image"], data["build"] = value, None
        elif key == "build" and value is not None:
            data["image"], data["build"] = None, value
        else:
            data[key] = value
    return Service.model_validate(data)


def _located(where: str, exc: ValidationError, *, builtin: bool) -> list[str]:
    problems = []
    for err in exc.errors(include_url=False):
        loc = [str(part) for part in err["loc"] if part != "name"]
        key = ".".join([where, *loc])
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = f"unknown key (known: {_known_keys(loc)})"
        elif err["type"] == "missing":
            message = "missing"
        elif err["type"] != "value_error":
            message += f" (got {err.get('input')!r})"
        if not builtin and err["type"] == "value_error" and not loc and "image" in message:
            message += " (a service of your own needs its image; a built-in one is adjusted, not redefined)"
        problems.append(f"{key}: {message}")
    return problems


def _known_keys(loc: list[str]) -> str:
    """The keys allowed where an unknown one was found (a service's, its readiness's, its reset's)."""
    nested: dict[tuple[str, ...], type[_Model]] = {
        ("readiness",): Probe,
        ("reset",): Reset,
        ("reset", "http"): HttpReset,
    }
    model = nested.get(tuple(loc[:-1]))
    return ", ".join(model.model_fields) if model is not None else _KNOWN


def check_suffix(value: str) -> str:
    """A hostname suffix (``osworld.test``): what every service's hostname ends with."""
    if not _HOSTNAME.match(value):
        raise ValueError(f"{value!r} is not a DNS suffix: lower-case labels separated by dots, e.g. {DEFAULT_SUFFIX}")
    return value
