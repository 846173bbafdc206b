"""The state of a shared service the task holds (docs/services.md), read from the host side.

``{"type": "service_state", "service": "website", "path": "/api/state", "key": "data.orders"}``
GETs ``path`` on the service's published port (``port``: another of its ports) with the task's own
state key as ``?cookie=`` (``cookie`` gives another), the state protocol of OSWorld-V2's mock
websites. An answer ``{"user_id": ..., "state": {...}}`` gives its ``state``, any other JSON answer
is taken whole; ``key`` picks a value out of it by a dotted path (a number indexes a list), ``None``
where the path is missing, as upstream's getters give for a missing value. A service the task does
not hold, or one that answers an error or no JSON, fails the evaluation (a mask, never a score).
"""

from __future__ import annotations

from typing import Any

import httpx

from pytest_osworld.errors import OsworldError
from pytest_osworld.setup.context import TaskContext

from ._registry import getter

TIMEOUT_SECONDS = 10.0
_MISSING = object()


class ServiceStateError(OsworldError):
    """The getter cannot read the service's state: the message says which service and why."""


def pick(value: Any, key: str) -> Any:
    """``value``'s member at the dotted ``key`` (``data.orders.0.id``); None where any step is missing."""
    for part in key.split("."):
        if isinstance(value, dict):
            value = value.get(part, _MISSING)
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            value = _MISSING
        if value is _MISSING:
            return None
    return value


@getter("service_state")
def get_service_state(ctx: TaskContext, config: dict[str, Any]) -> Any:
    name = config.get("service")
    if not isinstance(name, str) or not name:
        raise ServiceStateError('give "service": the name of a service the task lists in its "services"')
    access = ctx.services.get(name)
    if access is None:
        held = ", ".join(sorted(ctx.services)) or "none"
        raise ServiceStateError(
            f'the task does not hold the service {name!r} (it holds: {held}); list it in the task\'s "services"'
        )
    path = str(config.get("path") or "/api/state")
    if not path.startswith("/"):
        raise ServiceStateError(f'"path" must start with /, got {path!r}')
    port = config.get("port")
    url = access.url(int(port) if port is not None else None) + path
    cookie = config.get("cookie") or access.state_key
    params = {"cookie": str(cookie)} if cookie else {}
    try:
        # trust_env off: the service is on this machine's loopback, never behind a proxy.
        response = httpx.get(url, params=params, timeout=TIMEOUT_SECONDS, trust_env=False)
    except httpx.HTTPError as exc:
        raise ServiceStateError(f"service {name}: GET {path} got no answer: {exc}") from None
    if response.status_code != 200:
        raise ServiceStateError(f"service {name}: GET {path} answered {response.status_code}: {response.text[:200]}")
    try:
        body = response.json()
    except ValueError:
        raise ServiceStateError(f"service {name}: GET {path} answered no JSON: {response.text[:200]}") from None
    if isinstance(body, dict) and "user_id" in body and "state" in body:
        body = body["state"]
    key = config.get("key")
    return body if key in (None, "") else pick(body, str(key))
