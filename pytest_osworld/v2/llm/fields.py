"""The checks of one LLM endpoint setting's value, shared by the judge's configuration (``settings.py``)
and the simulated user's (``user_sim.py``).

Each check takes the value, where it came from (``source``: an environment variable's name such as
``OSWORLD_EVAL_MODEL_TEMPERATURE``, a spec's field such as ``task 024: user_simulator.max_tokens``, an option
such as ``options.max_tokens``) and the error to raise (``error``: each caller's own); the error names the
source and what is expected. Where the two callers word an error differently, the wording is a parameter.
Which source a value is taken from, and an absent value, are the caller's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_osworld.errors import OsworldError
from pytest_osworld.models.base import ModelApi
from pytest_osworld.models.secrets import EndpointUrl, Secret
from pytest_osworld.sanitize import is_env_name

# Upstream's provider names and the client each one uses here.
PROVIDERS: dict[str, ModelApi] = {
    "openai": "openai",
    "openai_compatible": "openai",
    "anthropic": "anthropic",
    "claude": "anthropic",
}
NOT_HERE = ("bedrock", "gemini", "google")  # upstream's, without a client in this project

Error = type[OsworldError]


def whole(value: Any, source: str, *, error: Error, minimum: int = 1) -> int:
    """A whole number of ``minimum`` or more (an int, a whole float or its text; never a bool)."""
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        number = int(value)
    except (TypeError, ValueError):
        raise error(f"{source}: expected a whole number of {minimum} or more, got {value!r}") from None
    if number < minimum:
        raise error(f"{source}: expected a whole number of {minimum} or more, got {value!r}")
    return number


def number(value: Any, source: str, *, error: Error, minimum: float = 0.0) -> float:
    """A number of ``minimum`` or more (an int, a float or its text; never a bool, never NaN)."""
    try:
        if isinstance(value, bool):
            raise ValueError
        found = float(value)
    except (TypeError, ValueError):
        raise error(f"{source}: expected a number of {minimum:g} or more, got {value!r}") from None
    if not found >= minimum:  # NaN too
        raise error(f"{source}: expected a number of {minimum:g} or more, got {value!r}")
    return found


def choice(value: Any, source: str, allowed: tuple[str, ...], *, error: Error) -> str:
    """One of ``allowed``, in any case and with spaces around it; returned as allowed spells it."""
    text = str(value).strip().lower()
    if text not in allowed:
        raise error(f"{source}: expected one of {', '.join(allowed)}, got {value!r}")
    return text


def provider(
    value: Any,
    source: str,
    *,
    error: Error,
    not_here: str = "the provider {!r} is not supported here",
    unknown: str = "the provider {!r} is unknown",
) -> tuple[str, ModelApi]:
    """One of upstream's providers that has a client here, and that client's API.

    ``not_here`` and ``unknown``: how the error words a provider upstream has but this project has not, and
    one nobody has (``{!r}``: the provider); the judge's errors word them their own way.
    """
    name = str(value).strip().lower()
    if name in PROVIDERS:
        return name, PROVIDERS[name]
    known = f"(supported: {', '.join(PROVIDERS)})"
    if name in NOT_HERE:
        raise error(
            f"{source}: {not_here.format(name)} {known}; "
            "serve the model behind an OpenAI-compatible endpoint and use openai_compatible"
        )
    raise error(f"{source}: {unknown.format(name)} {known}")


def url(value: Any, source: str, *, error: Error, what: str | None = None) -> EndpointUrl:
    """A base URL a client can use (``what``: what the error calls it, e.g. ``the judge URL``)."""
    try:
        return EndpointUrl.parse(str(value))
    except ValueError as exc:
        raise error(f"{source}: {what + ' is ' if what else ''}not usable: {exc}") from None


def env_name(value: str, source: str, *, error: Error) -> str:
    """The NAME of an environment variable (the key is read from it, never written in a setting)."""
    if not is_env_name(value):
        # Most likely the key itself was given instead of a variable's name: never repeat it.
        raise error(f"{source} must be the NAME of an environment variable (e.g. OPENAI_API_KEY), not the key itself")
    return value


def key(name: str, source: str, environ: Mapping[str, str], *, error: Error, whose: str) -> Secret:
    """The API key held by the variable ``name`` (named at ``source``), which must be set.

    ``whose``: whose key the fix asks to export (``the judge's``, ``the simulated user's``).
    """
    value = environ.get(name, "").strip()
    if not value:
        raise error(f"{source}: the environment variable {name} is not set or empty; export {whose} API key in it")
    return Secret(value)
