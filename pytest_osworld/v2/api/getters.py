"""Getters by upstream's names (``get_vm_file(env, config)``): the project's v1 getters over the task's
context, plus the mock websites' state getters, which take upstream's config keys and read the cookie
file ``prepare_stateful_website_urls`` wrote; they reach the site through its service's published port
(``desktop_env.controllers.website``)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from pytest_osworld.evaluation.getters import GETTERS
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.v2.api.state import current
from pytest_osworld.v2.api.website import (
    COOKIE_FILE,
    STATE_PATH,
    is_official_host,
    resolve_website_url,
    to_host_url,
)

Getter = Callable[[Any, Mapping[str, Any]], Any]

logger = logging.getLogger(__name__)


def _context(env: Any) -> TaskContext:
    context = getattr(env, "context", None)
    if not isinstance(context, TaskContext):
        raise TypeError("a getter takes the task's env (the one evaluate(env) receives)")
    return context


def _v1(name: str) -> Getter:
    fn = GETTERS[name]

    def call(env: Any, config: Mapping[str, Any]) -> Any:
        return fn(_context(env), dict(config))

    call.__name__ = f"get_{name}"
    return call


def _resolve_config_url(url: str | None) -> str | None:
    # Only an official site URL is rewritten (to this run's site); any other stays as the task gave it.
    if not url or not is_official_host((urlsplit(url).hostname or "").lower()):
        return url
    return resolve_website_url(url)


def _netloc(url: Any) -> str:
    return urlsplit(url).netloc.lower() if isinstance(url, str) else ""


def _base_url(saved: Mapping[str, Any], given: str | None) -> str | None:
    """The site's URL: the config's, else the one entry's (several entries need the config's)."""
    if given:
        return given
    entries = saved.get("entries")
    if isinstance(entries, list) and entries:
        found = [e for e in entries if isinstance(e, dict)]
        if len(found) == 1:
            entry = found[0]
            return entry.get("source_url") or entry.get("final_url") or entry.get("state_endpoint")
        if len(found) > 1:
            return None
    # A cookie file of one site written without entries (an older shape).
    return saved.get("source_url") or saved.get("final_url")


def _entry(saved: Mapping[str, Any], base_url: str) -> Mapping[str, Any] | None:
    entries = saved.get("entries")
    if not isinstance(entries, list) or not entries:
        return saved
    wanted = _netloc(base_url)
    if not wanted:
        return None
    for entry in entries:
        if isinstance(entry, dict) and any(
            _netloc(entry.get(key)) == wanted for key in ("source_url", "final_url", "state_endpoint")
        ):
            return entry
    return None


@dataclass(frozen=True)
class _SavedSite:
    """One site's cookie, read back from the cookie file ``prepare_stateful_website_urls`` wrote."""

    cache_dir: str
    origin: str  # scheme://host[:port], guest-side
    entry: Mapping[str, Any]
    cookie_header: str


def _saved_site(env: Any, config: Mapping[str, Any], what: str) -> _SavedSite:
    cache_dir = str(env.cache_dir)
    cookie_path = os.path.join(cache_dir, str(config.get("cookie_save_name", COOKIE_FILE)))
    if not os.path.exists(cookie_path):
        raise RuntimeError(
            f"{what}: there is no cookie file {cookie_path} (prepare_stateful_website_urls writes it when given cache_dir)"
        )
    try:
        with open(cookie_path, encoding="utf-8") as fh:
            saved = json.load(fh)
        if not isinstance(saved, dict):
            raise TypeError(f"a cookie file holds a JSON object, not {type(saved).__name__}")
    except (OSError, ValueError, TypeError) as exc:
        raise RuntimeError(f"{what}: the cookie file {cookie_path} could not be read") from exc
    base_url = _base_url(saved, _resolve_config_url(config.get("url")))
    if not base_url:
        raise RuntimeError(f"{what}: no site URL: give the config's url (the cookie file names no site, or several)")
    parts = urlsplit(base_url)
    if not parts.scheme or not parts.netloc:
        raise RuntimeError(f"{what}: {base_url!r} is not a URL with a scheme and a host")
    entry = _entry(saved, base_url)
    if not entry:
        raise RuntimeError(f"{what}: the cookie file holds no cookie for {base_url}")
    cookie_header = entry.get("cookie")
    if not cookie_header:
        user_id = entry.get("user_id_cookie")
        if not user_id:
            raise RuntimeError(f"{what}: the cookie file's entry for {base_url} has neither a cookie nor a user_id")
        cookie_header = f"user_id={user_id}"
    return _SavedSite(cache_dir, f"{parts.scheme}://{parts.netloc}", entry, str(cookie_header))


def get_state_with_cookie(env: Any, config: Mapping[str, Any]) -> Any:
    """The site's current state under the cookie saved by ``prepare_stateful_website_urls``.

    Config (upstream's keys): ``url`` (the site; needed when the cookie file holds several),
    ``cookie_save_name`` (``state_cookie.json``), ``return_type`` (``"file"``: the state saved to
    ``<cache_dir>/<state_save_name>`` (``state_fetched.json``) and its path returned; ``"json"``: the
    state itself), ``delete_after_fetch`` (with ``"file"``: reset the site's state afterwards).
    The state is the answer's ``state`` (``{data, meta}``), not its ``{user_id, state}`` envelope.
    ``parameters`` and ``get_content`` are accepted and unused, as upstream."""
    what = "get_state_with_cookie"
    site = _saved_site(env, config, what)
    runtime = current(what)
    endpoint = str(site.entry.get("state_endpoint") or urljoin(site.origin, STATE_PATH))
    host_endpoint = to_host_url(runtime, endpoint, what)
    headers = {"Content-Type": "application/json", "Cookie": site.cookie_header}
    # Loopback published ports: no proxy of the environment may stand between.
    with httpx.Client(timeout=30.0, trust_env=False) as http:
        try:
            answer = http.get(host_endpoint, headers=headers)
            answer.raise_for_status()
        except httpx.HTTPError as exc:
            raise RuntimeError(f"{what}: the site's state could not be fetched from {endpoint}") from exc
        try:
            body = answer.json()
        except ValueError:
            raise RuntimeError(f"{what}: the site's state at {endpoint} is not JSON") from None
        state = body.get("state", body) if isinstance(body, dict) else body
        if config.get("return_type", "file") == "json":
            return state
        state_path = os.path.join(site.cache_dir, str(config.get("state_save_name", "state_fetched.json")))
        try:
            with open(state_path, "w", encoding="utf-8") as fh:
                if isinstance(state, dict | list):
                    json.dump(state, fh, indent=2)
                else:
                    fh.write(str(state))
        except OSError as exc:
            raise RuntimeError(f"{what}: the state could not be saved to {state_path}") from exc
        if config.get("delete_after_fetch", False):
            try:
                http.delete(host_endpoint, headers=headers).raise_for_status()
            except httpx.HTTPError as exc:
                # As upstream: the state is already saved; a failed clean-up is only logged.
                logger.warning("%s: the site's state at %s was not deleted: %s", what, endpoint, exc)
    return state_path


def get_state_file_with_cookie(env: Any, config: Mapping[str, Any]) -> str | None:
    """A file of the site (``file_path``, e.g. ``/api/files/x.pdf``) downloaded with the saved cookie
    into the cache folder (as ``save_name``, default the path's last part); its path, or None when the
    site answers 404. Config also takes ``url`` and ``cookie_save_name``, as ``get_state_with_cookie``."""
    what = "get_state_file_with_cookie"
    file_path = config.get("file_path")
    if not file_path:
        raise ValueError(f"{what}: the config gives no file_path")
    site = _saved_site(env, config, what)
    file_url = urljoin(site.origin, str(file_path))
    host_url = to_host_url(current(what), file_url, what)
    try:
        with httpx.Client(timeout=60.0, trust_env=False) as http:
            answer = http.get(host_url, headers={"Cookie": site.cookie_header})
        if answer.status_code == 404:
            return None
        answer.raise_for_status()
    except httpx.HTTPError as exc:
        raise RuntimeError(f"{what}: the file could not be fetched from {file_url}") from exc
    save_name = str(config.get("save_name") or os.path.basename(str(file_path)) or "downloaded_file")
    local_path = os.path.join(site.cache_dir, save_name)
    try:
        with open(local_path, "wb") as fh:
            fh.write(answer.content)
    except OSError as exc:
        raise RuntimeError(f"{what}: the file could not be saved to {local_path}") from exc
    return local_path


def __getattr__(name: str) -> Getter:
    if name.startswith("get_") and name[4:] in GETTERS:
        return _v1(name[4:])
    raise AttributeError(f"no getter {name!r} (known: get_ + {', '.join(sorted(GETTERS))})")
