"""The state of the code forge the task holds (``forge``, docs/services.md), read through its GitLab API.

Each reads from the host side, through the forge's published port, with the run's token:

- ``{"type": "forge_branches", "project": "root/demo"}``: the project's branch names, sorted;
- ``{"type": "forge_file", "project": "root/demo", "path": "README.md", "ref": "main"}``: a file's
  text on a branch (or any ref; the default branch without ``ref``), None when the ref or the file
  is missing;
- ``{"type": "forge_merge_requests", "project": "root/demo", "state": "opened"}``: the project's merge
  requests, oldest first, each with ``fields`` (default: title, state, source_branch, target_branch);
- ``{"type": "forge_issues", "project": "root/demo"}``: its issues likewise (default fields: title,
  state, labels).

``project`` is a ``namespace/name`` path or a numeric id; ``service`` names another forge the task
holds. A project that is not there gives None (a score of 0, as upstream's getters give for a missing
file); a forge that does not answer, or answers an error, fails the evaluation (a mask, never a score).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from pytest_osworld.errors import OsworldError
from pytest_osworld.setup.context import TaskContext

from ._registry import getter

TIMEOUT_SECONDS = 15.0
MR_FIELDS = ("title", "state", "source_branch", "target_branch")
ISSUE_FIELDS = ("title", "state", "labels")


class ForgeGetterError(OsworldError):
    """The forge cannot be read: the message says which getter, service and why (never the token)."""


def _project(config: dict[str, Any]) -> str:
    project = config.get("project")
    if not isinstance(project, str | int) or isinstance(project, bool) or str(project) == "":
        raise ForgeGetterError(f'{config["type"]}: give "project": a namespace/name path or a numeric id')
    return quote(str(project), safe="")


def _get(ctx: TaskContext, config: dict[str, Any], path: str, params: dict[str, str] | None = None) -> Any:
    """GET ``/api/v4<path>`` on the forge, every page of a list; None when it answers 404."""
    name = str(config.get("service") or "forge")
    access = ctx.services.get(name)
    if access is None:
        held = ", ".join(sorted(ctx.services)) or "none"
        raise ForgeGetterError(
            f"{config['type']}: the task does not hold the service {name!r} (it holds: {held}); "
            'list it in the task\'s "services"'
        )
    if access.token is None:
        raise ForgeGetterError(f"{config['type']}: the service {name!r} has no token (token_env); it is not a forge")
    url = access.url() + "/api/v4" + path
    query = {**(params or {}), "per_page": "100"}
    found: list[Any] = []
    # trust_env off: the forge is on this machine's loopback, never behind a proxy.
    with httpx.Client(trust_env=False, timeout=TIMEOUT_SECONDS, headers={"PRIVATE-TOKEN": access.token}) as http:
        while True:
            try:
                answer = http.get(url, params=query)
            except httpx.HTTPError as exc:
                raise ForgeGetterError(f"{config['type']}: service {name}: GET {path} got no answer: {exc}") from None
            if answer.status_code == 404:
                return None
            if answer.status_code != 200:
                raise ForgeGetterError(
                    f"{config['type']}: service {name}: GET {path} answered {answer.status_code}: {answer.text[:200]}"
                )
            if not answer.headers.get("content-type", "").startswith("application/json"):
                return answer.text
            body = answer.json()
            if not isinstance(body, list):
                return body
            found.extend(body)
            following = answer.headers.get("x-next-page")
            if not following:
                return found
            query["page"] = following


def _pick(items: Any, config: dict[str, Any], default: tuple[str, ...]) -> list[dict[str, Any]] | None:
    if items is None:
        return None
    fields = config.get("fields") or list(default)
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise ForgeGetterError(f'{config["type"]}: "fields" must be a list of field names')
    ordered = sorted(items, key=lambda item: int(item.get("iid") or 0))
    return [{field: item.get(field) for field in fields} for item in ordered]


@getter("forge_branches")
def get_forge_branches(ctx: TaskContext, config: dict[str, Any]) -> list[str] | None:
    branches = _get(ctx, config, f"/projects/{_project(config)}/repository/branches")
    return None if branches is None else sorted(str(b["name"]) for b in branches)


@getter("forge_file")
def get_forge_file(ctx: TaskContext, config: dict[str, Any]) -> str | None:
    path = config.get("path")
    if not isinstance(path, str) or not path.strip("/"):
        raise ForgeGetterError('forge_file: give "path": the file\'s path in the repository')
    params = {"ref": str(config["ref"])} if config.get("ref") else {}
    encoded = quote(path.strip("/"), safe="")
    content = _get(ctx, config, f"/projects/{_project(config)}/repository/files/{encoded}/raw", params)
    return None if content is None else str(content)


@getter("forge_merge_requests")
def get_forge_merge_requests(ctx: TaskContext, config: dict[str, Any]) -> list[dict[str, Any]] | None:
    params = {"state": str(config.get("state") or "all")}
    items = _get(ctx, config, f"/projects/{_project(config)}/merge_requests", params)
    return _pick(items, config, MR_FIELDS)


@getter("forge_issues")
def get_forge_issues(ctx: TaskContext, config: dict[str, Any]) -> list[dict[str, Any]] | None:
    params = {"state": str(config.get("state") or "all")}
    items = _get(ctx, config, f"/projects/{_project(config)}/issues", params)
    return _pick(items, config, ISSUE_FIELDS)
