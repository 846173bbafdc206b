"""The state protocol of OSWorld-V2's mock websites, as the ``website`` service speaks it.

``GET|PUT|PATCH|DELETE /api/state?cookie=ID`` (or the cookie ``user_id=ID``) answers ``{"user_id":
ID, "state": {"data": {...}, "meta": {...}}}``. PUT replaces the state, PATCH merges into it (objects
key by key, ``null`` removes a key, anything else replaces), DELETE puts it back to the initial one.
A PUT or PATCH body with ``data`` or ``meta`` at its top is a state, any other object is its
``data``. A write moves ``meta.revision`` on unless it sets one.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from .base import HttpError

State = dict[str, Any]


def merged(target: Any, patch: Any) -> Any:
    """``patch`` merged into ``target``: objects key by key (``null`` removes a key), the rest replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


def as_state(body: Any) -> State:
    """A PUT or PATCH body as a state: ``{"data"?, "meta"?}`` as it is, any other object as ``data``."""
    if not isinstance(body, dict):
        raise HttpError(400, 'the body must be a JSON object: {"data": {...}, "meta": {...}} or the data itself')
    if "data" in body or "meta" in body:
        if not isinstance(body.get("data", {}), dict) or not isinstance(body.get("meta", {}), dict):
            raise HttpError(400, "data and meta must be JSON objects")
        return {key: body[key] for key in ("data", "meta") if key in body}
    return {"data": body}


def bump(state: State) -> None:
    """Move the state's ``meta.revision`` on by one (a state without one gets 1)."""
    meta = state.get("meta")
    if not isinstance(meta, dict):
        meta = state["meta"] = {}
    revision = meta.get("revision")
    meta["revision"] = revision + 1 if isinstance(revision, int) else 1


class States:
    """Every visitor's state, made on first use from ``initial_data``; ``site`` names the site in ``meta``.

    Hold ``lock`` while reading or changing a visitor's state in place (``of``); the protocol's own
    calls (``read``, ``reset``, ``write``) take it themselves and answer a copy.
    """

    def __init__(self, site: str, initial_data: Callable[[], dict[str, Any]]) -> None:
        self.site = site
        self.initial_data = initial_data
        self.lock = threading.Lock()
        self._states: dict[str, State] = {}

    def initial(self) -> State:
        return {"data": self.initial_data(), "meta": {"site": self.site, "revision": 0}}

    def of(self, user: str) -> State:
        """The visitor's state, made on first use; call with ``lock`` held."""
        if user not in self._states:
            self._states[user] = self.initial()
        return self._states[user]

    def read(self, user: str) -> State:
        with self.lock:
            return copy.deepcopy(self.of(user))

    def reset(self, user: str) -> State:
        with self.lock:
            self._states[user] = self.initial()
            return copy.deepcopy(self._states[user])

    def write(self, user: str, method: str, body: Any) -> State:
        """PUT (replace) or PATCH (merge) the visitor's state with ``body``; the new state."""
        given = as_state(body)
        with self.lock:
            old = self.of(user)
            if method == "PUT":
                new = {"data": given.get("data", {}), "meta": given.get("meta", {"site": self.site})}
            else:
                new = merged(old, given)
            if "revision" not in given.get("meta", {}):  # a write moves the revision on unless it sets one
                new["meta"] = {**new.get("meta", {}), "revision": old.get("meta", {}).get("revision", 0)}
                bump(new)
            self._states[user] = new
            return copy.deepcopy(new)

    def answer(self, method: str, user: str, read_json: Callable[[], Any]) -> dict[str, Any]:
        """The protocol's answer to ``method`` on ``/api/state`` for ``user`` (``read_json``: the body)."""
        if method == "GET":
            return {"user_id": user, "state": self.read(user)}
        if method == "DELETE":
            return {"user_id": user, "state": self.reset(user)}
        if method not in ("PUT", "PATCH"):
            raise HttpError(405, "use GET, PUT, PATCH or DELETE on /api/state")
        return {"user_id": user, "state": self.write(user, method, read_json())}
