"""The mock websites of OSWorld-V2 over the run's shared services, with upstream's helper signatures.

A site name maps to the held service of that name, else to the ``website`` service (the run's mock
site). What differs from upstream, and why:

- ``build_website_url(path)`` is that service's base URL as the sandbox reaches it. Upstream probes
  ``https://<site>.<suffix>`` and falls back to http; the services here speak plain http on the run's
  network, so there is nothing to probe.
- ``HOST_SUFFIX`` (and ``WEBSITE_HOST_SUFFIX``), read at import, is the suffix of the ``website``
  service's hostname. A task that holds no website service gets :class:`RuntimeUnavailable` where
  upstream raises ``ValueError`` for an unset ``WEBSITE_HOST_SUFFIX``: a run without the service is a
  fault of the run, not a score.
- ``resolve_website_url`` maps an official ``*.web.hku.icu`` URL (upstream's team-hosted sites) to
  this run's site: the scheme, host and port become the service's, the path, query and fragment stay.
- The state protocol (``GET|PUT /api/state``) is spoken from this process through the service's
  published port, while every URL a task sees or hands to the guest is the guest-side one. Upstream
  GETs ``/api/state`` so the site issues a fresh cookie; here the cookie is the task's own state key
  of the service, so no two tasks share a state, and the GET only checks that the site answers.
  Two sites of one call served by one service would therefore share that cookie: that is refused.
- A URL naming a host that is none of the task's website services is not spoken to (upstream would
  reach any host): the run cannot vouch for it, and the guest-side names do not resolve here.
- A state given as an http(s) URL is fetched from this process; a local path (or ``file://``) is read
  from the host, a relative path from the working folder, as upstream.

The cookie file (``<cache_dir>/<cookie_save_name>``) is upstream's: ``{"entries": [{cookie,
cookie_dict, user_id_cookie, source_url, state_endpoint, final_url}, ...]}``, its URLs guest-side.
The state getters (``desktop_env.evaluators.getters``) read it back.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urljoin, urlsplit, urlunsplit

import httpx

from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.v2.api.state import WEBSITE_SERVICE, RuntimeUnavailable, TaskRuntime, current

OFFICIAL_HOST_SUFFIX = "web.hku.icu"
COOKIE_FILE = "state_cookie.json"
COOKIE_NAME = "user_id"
STATE_PATH = "/api/state"
TIMEOUT_S = 30.0

# A site's name as it goes in front of the host suffix (``mailhub``, ``studio.streamview``).
_SITE_NAME = re.compile(r"^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$")

logger = logging.getLogger(__name__)

StatePayload = str | dict[str, Any]


def _suffix(access: ServiceAccess) -> str:
    head, _, tail = access.hostname.partition(".")
    return tail or head


def __getattr__(name: str) -> Any:
    # Read at import by task files: the suffix of the task's website service.
    if name in ("HOST_SUFFIX", "WEBSITE_HOST_SUFFIX"):
        return _suffix(current(name).website(None, name))
    raise AttributeError(name)


def build_website_url(path: str) -> str:
    """The base URL (scheme and host) of the site named ``path``, as the sandbox's browser reaches it."""
    runtime = current("build_website_url")
    if not isinstance(path, str) or not _SITE_NAME.match(path):
        raise ValueError(f"build_website_url takes a site's name, such as 'mailhub', not {path!r}")
    return runtime.website(path, f"build_website_url({path!r})").guest_url()


def is_official_host(hostname: str) -> bool:
    return hostname == OFFICIAL_HOST_SUFFIX or hostname.endswith("." + OFFICIAL_HOST_SUFFIX)


def resolve_website_url(target: str) -> str:
    """A site's name as its base URL; an official ``*.web.hku.icu`` URL as the same page of this run's
    site; any other http(s) URL unchanged."""
    parts = urlsplit(target)
    if parts.scheme in ("http", "https") and parts.netloc:
        hostname = (parts.hostname or "").lower()
        if not is_official_host(hostname):
            return target
        prefix = hostname[: -len(OFFICIAL_HOST_SUFFIX)].rstrip(".")
        if prefix:
            base = build_website_url(prefix)
        else:
            base = current("resolve_website_url").website(None, f"resolve_website_url({target!r})").guest_url()
        site = urlsplit(base)
        return urlunsplit(parts._replace(scheme=site.scheme, netloc=site.netloc))
    return build_website_url(target)


def _port_of(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def site_of(runtime: TaskRuntime, url: str, what: str) -> ServiceAccess:
    """The held service a guest-side URL names (by its host and port)."""
    hostname = (urlsplit(url).hostname or "").lower()
    port = _port_of(url)
    for access in runtime.services.values():
        if access.hostname.lower() == hostname and port in access.ports:
            return access
    held = ", ".join(sorted(a.guest_url() for a in runtime.services.values())) or "none"
    raise RuntimeUnavailable(
        f"task {runtime.task_id}: {what}: {url} is none of the task's services "
        f"(it holds: {held}); give a site's name, or the URL of a held site"
    )


def to_host_url(runtime: TaskRuntime, url: str, what: str) -> str:
    """A guest-side URL of a held service as this process reaches it (through its published port)."""
    access = site_of(runtime, url, what)
    parts = urlsplit(url)
    base = urlsplit(access.url(_port_of(url)))
    return urlunsplit(parts._replace(scheme=base.scheme, netloc=base.netloc))


def _cookie(access: ServiceAccess, task_id: str) -> str:
    return access.state_key or f"osworld-{task_id}"


def _local_file(source: str) -> str | None:
    """The local file ``source`` names (a ``file://`` URI or an existing plain path), as upstream reads it."""
    if not source:
        return None
    if source.startswith("file://"):
        path = unquote(urlsplit(source).path)
        return path if os.path.exists(path) else None
    # os.path.exists, not Path.exists: a long JSON text is no path, and must not raise here.
    if "://" not in source and os.path.exists(source):
        return source
    return None


def _load_state(raw: StatePayload) -> Any:
    """A state as its JSON value: a dict as it is; a string as a local file, an http(s) URL or JSON text."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise ValueError(
            f"a state is a dict, or a string (JSON text, a local file's path or an http(s) URL), not {type(raw).__name__}"
        )
    text = raw.strip()
    local = _local_file(text)
    if local is not None:
        text = Path(local).read_text(encoding="utf-8")
    elif text.startswith(("http://", "https://")):
        # Fetched from this process with the environment's proxy settings, as upstream's requests does.
        with httpx.Client(timeout=TIMEOUT_S, follow_redirects=True) as http:
            answer = http.get(text)
            answer.raise_for_status()
        text = answer.content.decode("utf-8")
    return json.loads(text)


def _with_cookie(url: str, cookie: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"prepare_stateful_website_urls works on http(s) URLs only, not {url!r}")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query["cookie"] = cookie
    return urlunsplit(parts._replace(query=urlencode(query)))


def _put_state(runtime: TaskRuntime, access: ServiceAccess, target: str, payload: Any) -> dict[str, Any]:
    """Put ``payload`` under the task's cookie of the site at ``target`` (guest-side); its cookie entry."""
    cookie = _cookie(access, runtime.task_id)
    parts = urlsplit(target)
    endpoint = urljoin(f"{parts.scheme}://{parts.netloc}", STATE_PATH)
    host_endpoint = to_host_url(runtime, endpoint, "prepare_stateful_website_urls")
    header = f"{COOKIE_NAME}={cookie}"
    # Loopback published ports: no proxy of the environment may stand between.
    with httpx.Client(timeout=TIMEOUT_S, trust_env=False) as http:
        http.get(host_endpoint, params={"cookie": cookie}).raise_for_status()
        http.put(
            host_endpoint,
            params={"cookie": cookie},
            json=payload,
            headers={"Content-Type": "application/json", "Cookie": header},
        ).raise_for_status()
    return {
        "cookie": header,
        "cookie_dict": {COOKIE_NAME: cookie},
        "user_id_cookie": cookie,
        "source_url": target,
        "state_endpoint": endpoint,
        "final_url": _with_cookie(target, cookie),
    }


def prepare_stateful_website_urls(
    app: str | list[str] | None,
    state: StatePayload | list[StatePayload],
    additional_urls: list[str] | str | None = None,
    cache_dir: str | None = None,
    cookie_save_name: str = COOKIE_FILE,
    *,
    url: str | list[str] | None = None,
) -> list[str]:
    """Put each site's state under the task's cookie and return the URLs to open: each site's URL with
    ``?cookie=``, then ``additional_urls`` (resolved, no cookie). ``app`` and ``state`` are one each,
    or lists of one length. With ``cache_dir`` the cookies are saved to ``<cache_dir>/<cookie_save_name>``.
    ``url`` is upstream's deprecated name of ``app``."""
    if app is None:
        if url is None:
            raise ValueError("prepare_stateful_website_urls needs the site: give app")
        logger.warning("prepare_stateful_website_urls: url= is deprecated, give app= instead")
        app = url
    elif url is not None:
        raise ValueError("prepare_stateful_website_urls takes app or its deprecated name url, not both")
    if isinstance(app, list) != isinstance(state, list):
        raise ValueError("to open several sites, give app and state as lists of the same length")
    apps: list[str] = app if isinstance(app, list) else [app]
    states: list[StatePayload] = state if isinstance(state, list) else [state]
    if len(apps) != len(states):
        raise ValueError(f"app and state differ in length ({len(apps)} sites, {len(states)} states)")

    runtime = current("prepare_stateful_website_urls")
    targets = [resolve_website_url(a) for a in apps]
    services = [site_of(runtime, t, "prepare_stateful_website_urls") for t in targets]
    # One service keeps one state per task (its cookie): a second site on it would overwrite the first.
    seen: dict[str, str] = {}
    for site, access in zip(apps, services, strict=True):
        if access.name in seen:
            raise RuntimeUnavailable(
                f"task {runtime.task_id}: prepare_stateful_website_urls: the sites {seen[access.name]!r} and "
                f"{site!r} are both served here by the service {access.name!r}, and would share one state; "
                "define a service named after each site (docs/services.md)"
            )
        seen[access.name] = site
    # Every state is read before any is put, so a bad one leaves no site half prepared.
    payloads = [_load_state(raw) for raw in states]

    entries = [
        _put_state(runtime, access, target, payload)
        for target, access, payload in zip(targets, services, payloads, strict=True)
    ]
    urls = [entry["final_url"] for entry in entries]
    if additional_urls:
        extra = [additional_urls] if isinstance(additional_urls, str) else list(additional_urls)
        urls.extend(resolve_website_url(u) for u in extra)

    if cache_dir:
        cookie_path = os.path.join(cache_dir, cookie_save_name)
        try:
            os.makedirs(os.path.dirname(cookie_path), exist_ok=True)
            with open(cookie_path, "w", encoding="utf-8") as fh:
                json.dump({"entries": entries}, fh, indent=2, ensure_ascii=False)
        except OSError as exc:
            # As upstream: the URLs still work; the state getters then name the missing file.
            logger.warning("could not save the website cookies to %s: %s", cookie_path, exc)
    return urls


__all__ = [
    "COOKIE_FILE",
    "OFFICIAL_HOST_SUFFIX",
    "WEBSITE_SERVICE",
    "build_website_url",
    "prepare_stateful_website_urls",
    "resolve_website_url",
]
