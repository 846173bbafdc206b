"""The GitLab helpers of OSWorld-V2's task API, with python-gitlab, over the GitLab a task holds.

Which GitLab: while a V2 task is loaded or runs, the ``gitlab`` service it holds (else the ``forge``),
reached from this process through its published port, with the service's token (its ``token_env``);
a task that holds neither gets a :class:`RuntimeUnavailable` naming the service. Outside a task, as
upstream: ``GITLAB_URL`` and ``GITLAB_PRIVATE_TOKEN`` from the environment (a ``.env`` file is not read).

- ``get_gitlab_admin_client()``: a ``gitlab.Gitlab`` with the token (an administrator's);
- ``create_user_and_get_client(user_config, *, allow_existing=False)``: ``gl.users.create(user_config)``;
  a user of that username already there is an error, or with ``allow_existing`` the user returned;
- ``get_user_client(username)``: the user (an error when there is none);
- ``delete_user(*, username=None, user_id=None)``: True once deleted, False when no user has the username;
- ``import_project_from_github(user_client, github_url, project_name, *, visibility="public",
  wait_for_import=True, poll_interval=2, timeout=IMPORT_WAIT_S)``: a project of that user imported from
  the URL (``import_url``); it reads the project every ``poll_interval`` seconds until its
  ``import_status`` is ``finished`` (the project returned) or ``failed`` (``RuntimeError`` with GitLab's
  ``import_error``), and gives up after ``timeout`` seconds (:class:`ImportTimeout`, naming the project).

``URL`` and ``PRIVATE_TOKEN``, upstream's module constants, are read when asked for (None when unset).
Tokens never appear in an error message.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import gitlab
import requests
from gitlab.v4.objects import Project, User, UserProject

from pytest_osworld.v2.api.state import RuntimeUnavailable, current

URL_ENV = "GITLAB_URL"
TOKEN_ENV = "GITLAB_PRIVATE_TOKEN"
TIMEOUT_S = 60.0  # one API call; python-gitlab would otherwise wait forever
IMPORT_WAIT_S = 900.0  # upstream polls without end; a GitLab import of a small repository takes seconds


class ImportTimeout(RuntimeError):
    """An import that neither finished nor failed in time (a RuntimeError, as upstream's failed import)."""


def _from_task(what: str) -> tuple[str, str] | None:
    """The URL and token of the task's GitLab service; None outside a task."""
    try:
        runtime = current(what)
    except RuntimeUnavailable:
        return None
    access = runtime.gitlab(what)
    if access.token is None:
        raise RuntimeUnavailable(
            f"task {runtime.task_id}: {what}: the service {access.name!r} has no token "
            "(its definition needs token_env: NAME)"
        )
    return access.url(), access.token


def _from_environment() -> tuple[str, str] | None:
    url, token = os.environ.get(URL_ENV), os.environ.get(TOKEN_ENV)
    return (url, token) if url and token else None


def __getattr__(name: str) -> Any:
    # Upstream's module constants, read when asked for: a task's service is known only once it loads.
    if name in ("URL", "PRIVATE_TOKEN"):
        found = _from_task(name) or _from_environment()
        return None if found is None else found[0 if name == "URL" else 1]
    raise AttributeError(name)


def get_gitlab_admin_client() -> gitlab.Gitlab:
    """A python-gitlab client of the task's GitLab (else of ``GITLAB_URL``) with its administrator token."""
    held = _from_task("get_gitlab_admin_client")
    if held is not None:
        session = requests.Session()
        session.trust_env = False  # the service's published port is on this machine: never via a proxy
        url, token = held
        return gitlab.Gitlab(url=url, private_token=token, timeout=TIMEOUT_S, session=session)
    found = _from_environment()
    if found is None:
        raise ValueError(f"{URL_ENV} and {TOKEN_ENV} must be set before using GitLab tasks")
    url, token = found
    return gitlab.Gitlab(url=url, private_token=token, timeout=TIMEOUT_S)


def _user_named(gl: gitlab.Gitlab, username: str) -> User | None:
    found = gl.users.list(username=username)
    return found[0] if found else None


def create_user_and_get_client(user_config: Mapping[str, Any], *, allow_existing: bool = False) -> User:
    """A new user made from ``user_config`` (GitLab's fields: username, email, name, password, ...)."""
    username = user_config.get("username")
    if not username:
        raise ValueError("user_config must include a username")
    gl = get_gitlab_admin_client()
    existing = _user_named(gl, str(username))
    if existing is not None:
        if allow_existing:
            return existing
        raise ValueError(f"User already exists: {username}")
    return gl.users.create(dict(user_config))


def get_user_client(username: str) -> User:
    """The user of that username; the object's managers (``projects``, ...) act as the administrator."""
    user = _user_named(get_gitlab_admin_client(), username)
    if user is None:
        raise ValueError(f"User not found: {username}")
    return user


def delete_user(*, username: str | None = None, user_id: int | None = None) -> bool:
    """Delete a user by id, or by username (False when no user has it)."""
    if user_id is None and not username:
        raise ValueError("username or user_id is required")
    gl = get_gitlab_admin_client()
    if user_id is None:
        existing = _user_named(gl, str(username))
        if existing is None:
            return False
        user_id = existing.id
    gl.users.delete(user_id)
    return True


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if "@" in parts.netloc else url


def import_project_from_github(
    user_client: User,
    github_url: str,
    project_name: str,
    *,
    visibility: str = "public",
    wait_for_import: bool = True,
    poll_interval: float = 2,
    timeout: float = IMPORT_WAIT_S,
) -> Project | UserProject:
    """A project ``project_name`` in the user's namespace, imported from ``github_url`` (any git URL the
    GitLab can clone); with ``wait_for_import``, once its import finished."""
    if not github_url:
        raise ValueError("github_url is required")
    if not project_name:
        raise ValueError("project_name is required")
    gl = get_gitlab_admin_client()
    created = user_client.projects.create({"name": project_name, "import_url": github_url, "visibility": visibility})
    if not wait_for_import:
        return created
    deadline = time.monotonic() + timeout
    while True:
        project = gl.projects.get(created.id)
        status = project.import_status
        if status == "finished":
            return project
        if status == "failed":
            raise RuntimeError(f"Import failed: {project.import_error}")
        left = deadline - time.monotonic()
        if left <= 0:
            raise ImportTimeout(
                f"the GitLab import of project {project.path_with_namespace!r} (id {project.id}) from "
                f"{_without_credentials(github_url)} did not finish within {timeout:g} s "
                f"(import_status still {status!r})"
            )
        time.sleep(min(max(poll_interval, 0.0), left))


__all__ = [
    "ImportTimeout",
    "create_user_and_get_client",
    "delete_user",
    "get_gitlab_admin_client",
    "get_user_client",
    "import_project_from_github",
]
