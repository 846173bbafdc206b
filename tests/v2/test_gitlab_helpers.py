"""The GitLab helpers of the V2 task API (``desktop_env.controllers.gitlab``), with real python-gitlab,
against the project's forge served by its own server on a loopback port (its tests' fixture)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gitlab
import pytest

from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.v2.api import gitlab as helpers
from pytest_osworld.v2.api.loader import own_api
from pytest_osworld.v2.api.state import RuntimeUnavailable, TaskRuntime, active
from pytest_osworld.v2.upstream.desktop_env.controllers import gitlab as upstream_gitlab
from tests.support.forge import Forge

ALICE = {"username": "alice", "email": "alice@example.com", "name": "Alice Liddell", "password": "wonderland-42"}
UNREACHABLE = "http://127.0.0.1:9"  # nothing listens on the discard port: a call there fails


@pytest.fixture
def forge(forge_server: Forge, monkeypatch: pytest.MonkeyPatch) -> Forge:
    """The forge at its seed, and no GitLab variable of the machine in sight."""
    forge_server.reset()
    monkeypatch.delenv("GITLAB_URL", raising=False)
    monkeypatch.delenv("GITLAB_PRIVATE_TOKEN", raising=False)
    return forge_server


def _held(forge: Forge, name: str = "forge") -> ServiceAccess:
    return ServiceAccess(
        name=name, hostname=f"{name}.osworld.test", ports=(80,), host_urls={80: forge.url}, token=forge.token
    )


@pytest.fixture
def task(forge: Forge, monkeypatch: pytest.MonkeyPatch) -> Iterator[TaskRuntime]:
    """A running task holding the forge; the environment names another GitLab, which must not be used."""
    monkeypatch.setenv("GITLAB_URL", UNREACHABLE)
    monkeypatch.setenv("GITLAB_PRIVATE_TOKEN", "not-this-one")
    with active(TaskRuntime("g1", services={"forge": _held(forge)})) as runtime:
        yield runtime


def _usernames(forge: Forge) -> list[str]:
    return sorted(u["username"] for u in forge.api("GET", "/users").json())


def test_a_task_file_imports_the_helpers_under_upstreams_name(task: TaskRuntime) -> None:
    with own_api():
        module = importlib.import_module("desktop_env.controllers.gitlab")
        from desktop_env.controllers.gitlab import get_gitlab_admin_client
    # The task file gets upstream's module name, which re-exports the project's helpers.
    assert module is upstream_gitlab and get_gitlab_admin_client is helpers.get_gitlab_admin_client


def test_the_admin_client_is_the_tasks_gitlab_else_the_environments(
    forge: Forge, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match=r"^GITLAB_URL and GITLAB_PRIVATE_TOKEN must be set"):
        helpers.get_gitlab_admin_client()
    assert helpers.URL is None and helpers.PRIVATE_TOKEN is None

    monkeypatch.setenv("GITLAB_URL", forge.url)
    with pytest.raises(ValueError, match="GITLAB_PRIVATE_TOKEN must be set"):
        helpers.get_gitlab_admin_client()
    monkeypatch.setenv("GITLAB_PRIVATE_TOKEN", forge.token)
    outside = helpers.get_gitlab_admin_client()
    outside.auth()
    assert outside.user is not None and outside.user.username == "root"
    assert (forge.url, forge.token) == (getattr(helpers, "URL"), getattr(helpers, "PRIVATE_TOKEN"))  # noqa: B009 - read again: mypy keeps the None

    # Within a task: its service, whatever the environment says (here: a GitLab that is not there).
    monkeypatch.setenv("GITLAB_URL", UNREACHABLE)
    for name in ("gitlab", "forge"):
        with active(TaskRuntime("g2", services={name: _held(forge, name)})):
            client = helpers.get_gitlab_admin_client()
            assert client.url == forge.url and forge.url == getattr(helpers, "URL")  # noqa: B009 - read again: mypy keeps the None
            assert [u.username for u in client.users.list()] == ["root"]
    not_held = pytest.raises(RuntimeUnavailable, match=r"task g3: .*needs the shared service 'gitlab'")
    with active(TaskRuntime("g3", services={"website": _held(forge, "website")})), not_held:
        helpers.get_gitlab_admin_client()
    tokenless = dataclasses.replace(_held(forge), token=None)
    with (
        active(TaskRuntime("g4", services={"forge": tokenless})),
        pytest.raises(RuntimeUnavailable, match=r"the service 'forge' has no token \(its definition needs token_env"),
    ):
        helpers.get_gitlab_admin_client()


def test_users_are_created_found_and_deleted(task: TaskRuntime, forge: Forge) -> None:
    user = helpers.create_user_and_get_client(ALICE)
    assert isinstance(user, gitlab.v4.objects.User) and (user.username, user.name) == ("alice", "Alice Liddell")
    assert _usernames(forge) == ["alice", "root"]
    with pytest.raises(ValueError, match=r"^User already exists: alice$"):
        helpers.create_user_and_get_client({**ALICE, "email": "other@example.com"})
    assert helpers.create_user_and_get_client(ALICE, allow_existing=True).id == user.id
    with pytest.raises(ValueError, match="user_config must include a username"):
        helpers.create_user_and_get_client({"email": "x@example.com", "name": "X", "password": "long-enough"})
    with pytest.raises(gitlab.exceptions.GitlabCreateError, match="Email has already been taken"):
        helpers.create_user_and_get_client({**ALICE, "username": "alice2"})  # the forge's own refusal, passed on

    assert helpers.get_user_client("alice").id == user.id
    with pytest.raises(ValueError, match=r"^User not found: nobody$"):
        helpers.get_user_client("nobody")

    with pytest.raises(ValueError, match="username or user_id is required"):
        helpers.delete_user()
    assert helpers.delete_user(username="alice") is True
    assert _usernames(forge) == ["root"]
    assert helpers.delete_user(username="alice") is False
    bob = helpers.create_user_and_get_client({**ALICE, "username": "bob", "email": "bob@example.com"})
    assert helpers.delete_user(user_id=bob.id) is True and _usernames(forge) == ["root"]
    with pytest.raises(gitlab.exceptions.GitlabDeleteError, match="404 User Not Found"):
        helpers.delete_user(user_id=bob.id)


def _source_repo(forge: Forge, folder: Path) -> Path:
    folder.mkdir()
    forge.git("init", "-q", "-b", "main", str(folder))
    (folder / "app.py").write_text("print('imported')\n")
    forge.git("add", "app.py", cwd=folder)
    forge.git("commit", "-q", "-m", "Imported", cwd=folder)
    return folder


def test_a_project_is_imported_into_the_users_namespace(task: TaskRuntime, forge: Forge, tmp_path: Path) -> None:
    user = helpers.create_user_and_get_client(ALICE)
    source = _source_repo(forge, tmp_path / "source").as_uri()
    project = helpers.import_project_from_github(user, source, "imported", poll_interval=0.1)
    assert isinstance(project, gitlab.v4.objects.Project)
    assert (project.path_with_namespace, project.visibility, project.import_status) == (
        "alice/imported",
        "public",
        "finished",
    )
    assert project.files.raw(file_path="app.py", ref="main") == b"print('imported')\n"
    forge.git("clone", "-q", forge.repo_url("alice/imported"), str(tmp_path / "copy"))  # public: no token
    assert (tmp_path / "copy" / "app.py").is_file()

    # Without waiting: the project as created, its import still to come; the forge then finishes it.
    early = helpers.import_project_from_github(user, source, "later", visibility="private", wait_for_import=False)
    assert early.import_status in ("scheduled", "started", "finished")
    client = helpers.get_gitlab_admin_client()
    deadline = time.monotonic() + 60
    while client.projects.get(early.id).import_status != "finished":
        assert time.monotonic() < deadline, "the import did not finish within 60 s"
        time.sleep(0.05)
    assert client.projects.get("alice/later").visibility == "private"

    with pytest.raises(ValueError, match="github_url is required"):
        helpers.import_project_from_github(user, "", "x")
    with pytest.raises(ValueError, match="project_name is required"):
        helpers.import_project_from_github(user, source, "")


def test_a_failed_import_raises_with_gitlabs_error_and_no_token(task: TaskRuntime, forge: Forge) -> None:
    user = helpers.create_user_and_get_client(ALICE)
    # No egress: GitHub is out of reach, as any URL the forge cannot clone.
    host = forge.url.removeprefix("http://")
    for name, url in (
        ("from-github", "https://github.com/octocat/Hello-World.git"),
        ("missing", f"http://oauth2:{forge.token}@{host}/root/nope.git"),
    ):
        with pytest.raises(RuntimeError, match=r"^Import failed: Error importing repository ") as failed:
            helpers.import_project_from_github(user, url, name, poll_interval=0.1)
        assert f"into alice/{name} - " in str(failed.value) and forge.token not in str(failed.value)
    with pytest.raises(RuntimeError, match=r"^Import failed: Import url is blocked"):
        helpers.import_project_from_github(user, "ssh://git@github.com/o/r.git", "by-ssh")


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A git URL whose server takes the connection and never answers: the import never ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        yield f"http://someone:s3cret-pass@127.0.0.1:{listener.getsockname()[1]}/stalled.git"
    finally:
        listener.close()  # the forge's clone then fails and ends


def test_an_import_that_never_ends_is_given_up_naming_the_project(
    task: TaskRuntime, forge: Forge, silent_server: str
) -> None:
    user = helpers.create_user_and_get_client(ALICE)
    started = time.monotonic()
    with pytest.raises(helpers.ImportTimeout) as caught:
        helpers.import_project_from_github(user, silent_server, "stalled", poll_interval=0.2, timeout=1.5)
    waited = time.monotonic() - started
    message = str(caught.value)
    assert "project 'alice/stalled'" in message and "did not finish within 1.5 s" in message
    assert "import_status still 'started'" in message and "s3cret-pass" not in message
    assert 1.5 <= waited < 10, waited
    assert isinstance(caught.value, RuntimeError)  # what upstream's callers catch for a failed import


def test_the_module_names_what_upstreams_does() -> None:
    names: dict[str, Any] = {
        "get_gitlab_admin_client": (),
        "create_user_and_get_client": ("user_config", "allow_existing"),
        "get_user_client": ("username",),
        "delete_user": ("username", "user_id"),
        "import_project_from_github": (
            "user_client",
            "github_url",
            "project_name",
            "visibility",
            "wait_for_import",
            "poll_interval",
            "timeout",
        ),
    }
    for name, parameters in names.items():
        assert tuple(inspect.signature(getattr(helpers, name)).parameters) == parameters, name
    defaults = inspect.signature(helpers.import_project_from_github).parameters
    assert (defaults["visibility"].default, defaults["wait_for_import"].default, defaults["poll_interval"].default) == (
        "public",
        True,
        2,
    )
