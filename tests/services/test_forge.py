"""The code forge: its server on this machine's python (real git over HTTP on loopback, its GitLab API),
its run token, the pool running it in a container, and the bundled forge tasks in real runs."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import multiprocessing
import re
import stat
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import docker
import gitlab
import httpx
import pytest

from pytest_osworld.evaluation.getters import get_getter
from pytest_osworld.evaluation.getters.forge import ForgeGetterError
from pytest_osworld.locks import lock_dir
from pytest_osworld.sandbox import Owner, parse_hosts
from pytest_osworld.sanitize import sanitize
from pytest_osworld.services import BUILTIN, merge
from pytest_osworld.services.access import PlaceholderError, ServiceAccess, fill
from pytest_osworld.services.naming import run_token
from pytest_osworld.services.pool import ServiceError, ServicePool, remove_services
from tests.episode.runs import run_tasks
from tests.support.bundled_runs import task_keys
from tests.support.forge import Forge
from tests.support.paths import REPO
from tests.support.services import run_leftovers, services_context
from tests.support.shared_runs import SharedRun

FORGE_TASKS = REPO / "tasks" / "forge.jsonl"


@pytest.fixture
def forge(forge_server: Forge) -> Forge:
    forge_server.reset()
    return forge_server


def test_health_needs_no_token_and_everything_else_does(forge: Forge) -> None:
    assert httpx.get(f"{forge.url}/health", trust_env=False).json() == {"status": "ok"}
    for token in (None, "wrong-token"):
        answer = forge.api("GET", "/user", token=token)
        assert (answer.status_code, answer.json()) == (401, {"message": "401 Unauthorized"})
    assert httpx.post(f"{forge.url}/api/reset", trust_env=False).status_code == 401
    user = forge.api("GET", "/user").json()
    assert (user["id"], user["username"], user["name"]) == (1, "root", "Administrator")
    bearer = httpx.get(f"{forge.url}/api/v4/user", headers={"Authorization": f"Bearer {forge.token}"}, trust_env=False)
    assert bearer.status_code == 200 and bearer.json()["username"] == "root"
    assert forge.api("GET", "/nothing").status_code == 404


def test_clone_fetch_and_push_over_http_with_real_git(forge: Forge, tmp_path: Path) -> None:
    work = tmp_path / "demo"
    forge.git("clone", "-q", forge.repo_url("root/demo"), str(work))  # public: no credentials
    assert sorted(p.name for p in work.iterdir() if p.name != ".git") == ["README.md", "hello.py"]
    assert forge.git("log", "--format=%s", cwd=work).stdout.split("\n")[:2] == ["Add hello.py", "Initial commit"]
    assert "origin/add-greeting" in forge.git("branch", "-r", cwd=work).stdout

    forge.git("switch", "-q", "-c", "fix-typo", cwd=work)
    readme = work / "README.md"
    readme.write_text(readme.read_text().replace("recieve", "receive"))
    forge.git("commit", "-q", "-am", "Fix a typo", cwd=work)
    head = forge.git("rev-parse", "HEAD", cwd=work).stdout.strip()

    anonymous = forge.git("push", "-q", "origin", "fix-typo", cwd=work, check=False)
    assert anonymous.returncode != 0 and "could not read Username" in anonymous.stderr
    wrong = forge.git("push", "-q", forge.repo_url("root/demo", token="wrong-token"), "fix-typo", cwd=work, check=False)
    assert wrong.returncode != 0 and "Authentication failed" in wrong.stderr
    assert forge.api("GET", "/projects/1/repository/branches/fix-typo").status_code == 404

    forge.git("push", "-q", forge.repo_url("root/demo", token=forge.token), "fix-typo", cwd=work)
    branch = forge.api("GET", "/projects/1/repository/branches/fix-typo").json()
    assert branch["commit"]["id"] == head and branch["commit"]["title"] == "Fix a typo" and not branch["merged"]
    raw = forge.api("GET", "/projects/1/repository/files/README.md/raw", params={"ref": "fix-typo"})
    assert raw.status_code == 200 and "to receive a greeting" in raw.text

    # A branch made through the API is fetched by git.
    created = forge.api("POST", "/projects/1/repository/branches", params={"branch": "from-api", "ref": "main"})
    assert created.status_code == 201
    forge.git("fetch", "-q", "origin", cwd=work)
    assert "origin/from-api" in forge.git("branch", "-r", cwd=work).stdout

    # A private project: no clone without the token, one with it; an unknown one is not found.
    denied = forge.git("clone", "-q", forge.repo_url("root/notes"), str(tmp_path / "n1"), check=False)
    assert denied.returncode != 0
    forge.git("clone", "-q", forge.repo_url("root/notes", token=forge.token), str(tmp_path / "n2"))
    assert (tmp_path / "n2" / "README.md").read_text().startswith("# notes")
    unknown = forge.git("clone", "-q", forge.repo_url("root/nope", token=forge.token), str(tmp_path / "x"), check=False)
    assert unknown.returncode != 0 and "not found" in unknown.stderr


def test_projects(forge: Forge, tmp_path: Path) -> None:
    listed = forge.api("GET", "/projects")
    assert listed.headers["X-Total"] == "2"
    assert [p["path_with_namespace"] for p in listed.json()] == ["root/notes", "root/demo"]  # newest first
    demo = forge.api("GET", "/projects/1").json()
    assert forge.api("GET", "/projects/root%2Fdemo").json() == demo
    assert demo["default_branch"] == "main" and demo["visibility"] == "public" and demo["open_issues_count"] == 1
    assert demo["http_url_to_repo"] == f"{forge.url}/root/demo.git" and demo["namespace"]["full_path"] == "root"
    assert demo["empty_repo"] is False and demo["name_with_namespace"] == "Administrator / demo"
    for missing in ("/projects/99", "/projects/root%2Fnope"):
        answer = forge.api("GET", missing)
        assert (answer.status_code, answer.json()) == (404, {"message": "404 Project Not Found"})

    made = forge.api("POST", "/projects", json={"name": "Tools", "initialize_with_readme": True})
    assert made.status_code == 201, made.text
    tools = made.json()
    assert (tools["path"], tools["visibility"], tools["default_branch"], tools["empty_repo"]) == (
        "tools",
        "private",
        "main",
        False,
    )
    readme = forge.api("GET", f"/projects/{tools['id']}/repository/files/README.md/raw")
    assert readme.text.startswith("# Tools")
    again = forge.api("POST", "/projects", json={"name": "Tools"})
    assert again.status_code == 400 and again.json()["message"]["name"] == ["has already been taken"]
    assert forge.api("POST", "/projects", json={}).status_code == 400
    assert forge.api("POST", "/projects", json={"name": "x", "namespace_id": 7}).status_code == 404

    # An empty project takes its default branch from its first push, as GitLab's does.
    empty = forge.api("POST", "/projects", data={"path": "empty", "default_branch": "trunk"}).json()  # a form
    assert empty["empty_repo"] is True and empty["default_branch"] == "trunk"
    work = tmp_path / "empty"
    work.mkdir()
    forge.git("init", "-q", "-b", "main", str(work))
    (work / "a.txt").write_text("a\n")
    forge.git("add", "a.txt", cwd=work)
    forge.git("commit", "-q", "-m", "First", cwd=work)
    forge.git("push", "-q", forge.repo_url("root/empty", token=forge.token), "main", cwd=work)
    assert forge.api("GET", "/projects/root%2Fempty").json()["default_branch"] == "main"


def test_branches_files_and_commits(forge: Forge) -> None:
    branches = forge.api("GET", "/projects/root%2Fdemo/repository/branches").json()
    assert [b["name"] for b in branches] == ["add-greeting", "main"]
    main = branches[1]
    assert main["default"] and main["protected"] and main["commit"]["title"] == "Add hello.py"

    made = forge.api("POST", "/projects/1/repository/branches", params={"branch": "topic", "ref": "main"})
    assert made.status_code == 201 and made.json()["commit"]["id"] == main["commit"]["id"]
    assert made.json()["merged"] is True  # it points into main
    cases = [
        ({"branch": "topic", "ref": "main"}, {"message": "Branch already exists"}),
        ({"branch": "other", "ref": "nope"}, {"message": "Invalid reference name: nope"}),
        ({"branch": "bad..name", "ref": "main"}, {"message": "Branch name is invalid"}),
        ({}, {"error": "branch is missing, ref is missing"}),
    ]
    for params, body in cases:
        answer = forge.api("POST", "/projects/1/repository/branches", json=params)
        assert (answer.status_code, answer.json()) == (400, body), params
    nested = forge.api("POST", "/projects/1/repository/branches", data={"branch": "feature/x", "ref": "add-greeting"})
    assert nested.status_code == 201
    assert forge.api("GET", "/projects/1/repository/branches/feature%2Fx").json()["name"] == "feature/x"

    assert forge.api("DELETE", "/projects/1/repository/branches/topic").status_code == 204
    gone = forge.api("GET", "/projects/1/repository/branches/topic")
    assert (gone.status_code, gone.json()) == (404, {"message": "404 Branch Not Found"})
    assert forge.api("DELETE", "/projects/1/repository/branches/main").status_code == 405

    file = forge.api("GET", "/projects/1/repository/files/hello.py", params={"ref": "add-greeting"}).json()
    assert file["file_path"] == "hello.py" and file["encoding"] == "base64"
    assert "sys.argv" in base64.b64decode(file["content"]).decode()
    assert file["last_commit_id"] == file["commit_id"]  # the branch's own commit changed it
    assert forge.api("GET", "/projects/1/repository/files/nope.txt/raw").status_code == 404
    history = forge.api("GET", "/projects/1/repository/commits", params={"ref_name": "add-greeting"}).json()
    assert [c["title"] for c in history] == ["Greet by name from the command line", "Add hello.py", "Initial commit"]
    assert history[0]["parent_ids"] == [history[1]["id"]]


def test_issues(forge: Forge) -> None:
    (seeded,) = forge.api("GET", "/projects/1/issues").json()
    assert (seeded["iid"], seeded["title"], seeded["state"], seeded["labels"]) == (
        1,
        "Typo in the README",
        "opened",
        ["documentation"],
    )
    assert seeded["author"]["username"] == "root" and seeded["references"]["full"] == "root/demo#1"
    missing = forge.api("POST", "/projects/1/issues", json={})
    assert (missing.status_code, missing.json()) == (400, {"error": "title is missing"})
    made = forge.api("POST", "/projects/1/issues", json={"title": "Add a licence", "labels": "legal,docs"})
    assert made.status_code == 201 and made.json()["iid"] == 2 and made.json()["labels"] == ["docs", "legal"]

    closed = forge.api("PUT", "/projects/1/issues/2", json={"state_event": "close"}).json()
    assert closed["state"] == "closed" and closed["closed_at"] and closed["closed_by"]["username"] == "root"
    assert [i["iid"] for i in forge.api("GET", "/projects/1/issues", params={"state": "opened"}).json()] == [1]
    assert [i["iid"] for i in forge.api("GET", "/projects/1/issues", params={"state": "closed"}).json()] == [2]
    reopened = forge.api("PUT", "/projects/1/issues/2", data={"state_event": "reopen", "title": "Add a license"})
    assert reopened.json()["state"] == "opened" and reopened.json()["title"] == "Add a license"
    assert forge.api("PUT", "/projects/1/issues/2", json={"state_event": "explode"}).status_code == 400
    assert forge.api("PUT", "/projects/1/issues/2", json={}).status_code == 400
    assert forge.api("GET", "/projects/1/issues/99").json() == {"message": "404 Issue Not Found"}
    page = forge.api("GET", "/projects/1/issues", params={"per_page": 1, "page": 2})
    assert [i["iid"] for i in page.json()] == [1] and page.headers["X-Total-Pages"] == "2"


def _branch_with(forge: Forge, work: Path, name: str, readme: str) -> None:
    forge.git("switch", "-q", "-c", name, "origin/main", cwd=work)
    (work / "README.md").write_text(readme)
    forge.git("commit", "-q", "-am", f"README for {name}", cwd=work)
    forge.git("push", "-q", "origin", name, cwd=work)


def test_a_merge_request_merges_for_real(forge: Forge, tmp_path: Path) -> None:
    missing = forge.api("POST", "/projects/1/merge_requests", json={})
    assert missing.json() == {"error": "source_branch is missing, target_branch is missing, title is missing"}
    body = {"source_branch": "add-greeting", "target_branch": "main", "title": "Greet by name"}
    made = forge.api("POST", "/projects/1/merge_requests", json=body)
    assert made.status_code == 201, made.text
    mr = made.json()
    greeting = forge.api("GET", "/projects/1/repository/branches/add-greeting").json()["commit"]["id"]
    old_main = forge.api("GET", "/projects/1/repository/branches/main").json()["commit"]["id"]
    assert (mr["iid"], mr["state"], mr["merge_status"], mr["sha"]) == (1, "opened", "can_be_merged", greeting)
    assert forge.api("POST", "/projects/1/merge_requests", json=body).status_code == 409
    nowhere = forge.api("POST", "/projects/1/merge_requests", json={**body, "source_branch": "nope"})
    assert nowhere.status_code == 400 and nowhere.json() == {"message": ['Source branch "nope" does not exist']}

    merged = forge.api("PUT", "/projects/1/merge_requests/1/merge")
    assert merged.status_code == 200, merged.text
    result = merged.json()
    assert result["state"] == "merged" and result["merged_by"]["username"] == "root" and result["merged_at"]
    assert forge.api("PUT", "/projects/1/merge_requests/1/merge").status_code == 405  # already merged
    assert [m["iid"] for m in forge.api("GET", "/projects/1/merge_requests", params={"state": "merged"}).json()] == [1]

    # The repository has a real merge commit: two parents, the source's change on main.
    work = tmp_path / "demo"
    forge.git("clone", "-q", forge.repo_url("root/demo", token=forge.token), str(work))
    assert forge.git("rev-parse", "origin/main", cwd=work).stdout.strip() == result["merge_commit_sha"]
    parents = forge.git("log", "-1", "--format=%P", "origin/main", cwd=work).stdout.split()
    assert parents == [old_main, greeting]
    assert "sys.argv" in forge.git("show", "origin/main:hello.py", cwd=work).stdout
    assert "See merge request root/demo!1" in forge.git("log", "-1", "--format=%B", "origin/main", cwd=work).stdout

    # Two changes of the same line: the first merges, the second conflicts and leaves main alone.
    _branch_with(forge, work, "left", "# demo, left\n")
    _branch_with(forge, work, "right", "# demo, right\n")
    for source in ("left", "right"):
        made = forge.api("POST", "/projects/1/merge_requests", json={**body, "source_branch": source, "title": source})
        assert made.status_code == 201
    assert forge.api("PUT", "/projects/1/merge_requests/2/merge").status_code == 200
    after_left = forge.api("GET", "/projects/1/repository/branches/main").json()["commit"]["id"]
    right = forge.api("GET", "/projects/1/merge_requests/3").json()
    assert right["merge_status"] == "cannot_be_merged" and right["has_conflicts"] is True
    conflict = forge.api("PUT", "/projects/1/merge_requests/3/merge")
    assert (conflict.status_code, conflict.json()) == (406, {"message": "Branch cannot be merged"})
    assert forge.api("GET", "/projects/1/repository/branches/main").json()["commit"]["id"] == after_left
    closed = forge.api("PUT", "/projects/1/merge_requests/3", json={"state_event": "close"}).json()
    assert closed["state"] == "closed"
    assert forge.api("GET", "/projects/1/merge_requests/9").json() == {"message": "404 Merge Request Not Found"}


# --- users, their namespaces, imports ------------------------------------------------------------------

ALICE = {"username": "alice", "email": "alice@example.com", "name": "Alice Liddell", "password": "wonderland-42"}


def test_users(forge: Forge) -> None:
    (root,) = forge.api("GET", "/users").json()
    assert (root["id"], root["username"], root["is_admin"], root["namespace_id"]) == (1, "root", True, 1)
    assert forge.api("GET", "/users/1").json() == root

    made = forge.api("POST", "/users", json=ALICE)
    assert made.status_code == 201, made.text
    alice = made.json()
    assert (alice["username"], alice["name"], alice["email"], alice["state"]) == (
        "alice",
        "Alice Liddell",
        "alice@example.com",
        "active",
    )
    assert alice["is_admin"] is False and alice["web_url"] == f"{forge.url}/alice" and "password" not in alice
    assert forge.api("GET", f"/users/{alice['id']}").json() == alice
    assert [u["username"] for u in forge.api("GET", "/users").json()] == ["alice", "root"]  # newest first
    assert forge.api("GET", "/users", params={"username": "ALICE"}).json() == [alice]  # exact, any case
    assert forge.api("GET", "/users", params={"username": "ali"}).json() == []
    assert [u["id"] for u in forge.api("GET", "/users", params={"search": "liddell"}).json()] == [alice["id"]]
    for missing in ("/users/99", "/users/nope"):
        answer = forge.api("GET", missing)
        assert (answer.status_code, answer.json()) == (404, {"message": "404 User Not Found"})

    # GitLab's refusals: a taken email, then a taken username (409), before any other check.
    cases = [
        ({**ALICE, "username": "alice2"}, 409, {"message": "Email has already been taken"}),
        (
            {**ALICE, "username": "Alice", "email": "a2@example.com"},
            409,
            {"message": "Username has already been taken"},
        ),
        ({}, 400, {"error": "email is missing, name is missing, username is missing"}),
        (
            {"username": "bob", "email": "bob@example.com", "name": "Bob"},
            400,
            {
                "error": "password, reset_password, force_random_password are missing, at least one parameter must be provided"
            },
        ),
        (
            {"username": "bob", "email": "bob@example.com", "name": "Bob", "password": "short"},
            400,
            {"message": {"password": ["is too short (minimum is 8 characters)"]}},
        ),
        ({"username": "bob", "email": "no-at-sign", "name": "Bob", "password": "long-enough"}, 400, None),
        ({"username": "-bob", "email": "bob@example.com", "name": "Bob", "password": "long-enough"}, 400, None),
        ({"username": "api", "email": "bob@example.com", "name": "Bob", "password": "long-enough"}, 400, None),
    ]
    for body, status, expected in cases:
        answer = forge.api("POST", "/users", json=body)
        assert answer.status_code == status, (body, answer.text)
        if expected is not None:
            assert answer.json() == expected, body
    assert (
        forge.api("POST", "/users", json={**ALICE, "username": "x", "email": "x@e.org"}, token="wrong").status_code
        == 401
    )
    bob = forge.api("POST", "/users", data={**ALICE, "username": "bob", "email": "bob@example.com", "admin": "true"})
    assert bob.status_code == 201 and bob.json()["is_admin"] is True  # a form, as GitLab takes too

    # Deleting: 204, then gone; root holds the token and stays.
    assert forge.api("DELETE", f"/users/{bob.json()['id']}").status_code == 204
    assert forge.api("GET", f"/users/{bob.json()['id']}").status_code == 404
    assert forge.api("DELETE", f"/users/{bob.json()['id']}").json() == {"message": "404 User Not Found"}
    assert forge.api("DELETE", "/users/1").status_code == 403
    assert [u["username"] for u in forge.api("GET", "/users").json()] == ["alice", "root"]


def test_projects_in_a_users_namespace(forge: Forge, tmp_path: Path) -> None:
    alice = forge.api("POST", "/users", json=ALICE).json()
    made = forge.api("POST", f"/projects/user/{alice['id']}", json={"name": "demo", "visibility": "public"})
    assert made.status_code == 201, made.text
    demo = made.json()  # the same name as root's demo: names are unique per namespace
    assert (demo["path_with_namespace"], demo["name_with_namespace"]) == ("alice/demo", "Alice Liddell / demo")
    assert demo["namespace"] == {
        "id": alice["id"],
        "name": "Alice Liddell",
        "path": "alice",
        "kind": "user",
        "full_path": "alice",
        "parent_id": None,
        "avatar_url": None,
        "web_url": f"{forge.url}/alice",
    }
    assert demo["owner"]["username"] == "alice" and demo["creator_id"] == alice["id"]
    assert (demo["import_status"], demo["import_error"], demo["import_url"]) == ("none", None, None)
    assert demo["http_url_to_repo"] == f"{forge.url}/alice/demo.git" and demo["empty_repo"] is True
    assert forge.api("GET", "/projects/alice%2Fdemo").json()["id"] == demo["id"]
    assert forge.api("GET", "/projects/root%2Fdemo").json()["id"] == 1
    again = forge.api("POST", f"/projects/user/{alice['id']}", json={"name": "demo"})
    assert again.status_code == 400 and again.json()["message"]["name"] == ["has already been taken"]
    nameless = forge.api("POST", f"/projects/user/{alice['id']}", json={"path": "x"})
    assert (nameless.status_code, nameless.json()) == (400, {"error": "name is missing"})
    nobody = forge.api("POST", "/projects/user/99", json={"name": "x"})
    assert (nobody.status_code, nobody.json()) == (404, {"message": "404 User Not Found"})
    by_root = forge.api("POST", "/projects", json={"name": "tools", "namespace_id": alice["id"]}).json()
    assert by_root["path_with_namespace"] == "alice/tools" and by_root["creator_id"] == 1
    by_path = forge.api("POST", "/projects", json={"name": "more", "namespace_id": "alice"}).json()
    assert by_path["path_with_namespace"] == "alice/more"
    listed = forge.api("GET", f"/users/{alice['id']}/projects")
    assert [p["path"] for p in listed.json()] == ["more", "tools", "demo"] and listed.headers["X-Total"] == "3"
    assert forge.api("GET", "/projects").headers["X-Total"] == "5"

    # Git over HTTP in her namespace; issues and merge requests name her project.
    work = tmp_path / "mine"
    work.mkdir()
    forge.git("init", "-q", "-b", "main", str(work))
    (work / "a.txt").write_text("a\n")
    forge.git("add", "a.txt", cwd=work)
    forge.git("commit", "-q", "-m", "First", cwd=work)
    forge.git("push", "-q", forge.repo_url("alice/demo", token=forge.token), "main", cwd=work)
    forge.git("clone", "-q", forge.repo_url("alice/demo"), str(tmp_path / "copy"))  # public
    assert (tmp_path / "copy" / "a.txt").read_text() == "a\n"
    issue = forge.api("POST", "/projects/alice%2Fdemo/issues", json={"title": "hers"}).json()
    assert issue["references"]["full"] == "alice/demo#1" and issue["web_url"].endswith("/alice/demo/-/issues/1")

    # Deleting her takes her projects and repositories with her; root's are untouched.
    assert forge.api("DELETE", f"/users/{alice['id']}").status_code == 204
    assert forge.api("GET", "/projects/alice%2Fdemo").status_code == 404
    assert forge.api("GET", f"/projects/{demo['id']}").status_code == 404
    assert not (forge.data / "repos" / "alice").exists()
    gone = forge.git("clone", "-q", forge.repo_url("alice/demo", token=forge.token), str(tmp_path / "x"), check=False)
    assert gone.returncode != 0
    assert forge.api("GET", "/projects").headers["X-Total"] == "2"


def test_lists_carry_links_as_gitlab(forge: Forge) -> None:
    first = forge.api("GET", "/projects", params={"per_page": 1, "search": "o"})
    links = first.headers["Link"]
    assert f'<{forge.url}/api/v4/projects?search=o&page=2&per_page=1>; rel="next"' in links
    assert 'rel="first"' in links and 'page=2&per_page=1>; rel="last"' in links and 'rel="prev"' not in links
    following = httpx.get(
        links.split(">")[0].lstrip("<"), headers={"PRIVATE-TOKEN": forge.token}, trust_env=False, timeout=30
    )
    assert [p["path"] for p in following.json()] == ["demo"] and 'rel="prev"' in following.headers["Link"]
    assert "Link" not in forge.api("GET", "/projects/1").headers


def _imported(url: str, token: str, project_id: int) -> dict[str, Any]:
    """The project once its import finished or failed (the forge at ``url`` clones in the background)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = httpx.get(
            f"{url}/api/v4/projects/{project_id}", headers={"PRIVATE-TOKEN": token}, trust_env=False, timeout=30
        )
        project: dict[str, Any] = answer.json()
        if project["import_status"] in ("finished", "failed"):
            return project
        assert project["import_status"] in ("scheduled", "started"), project
        time.sleep(0.05)
    pytest.fail(f"the import of project {project_id} did not end within 60 s")


def test_imports_clone_what_the_forge_reaches_and_fail_on_the_rest(forge: Forge, tmp_path: Path) -> None:
    alice = forge.api("POST", "/users", json=ALICE).json()

    def import_(name: str, url: str) -> httpx.Response:
        return forge.api("POST", f"/projects/user/{alice['id']}", json={"name": name, "import_url": url})

    # A local repository (file://): every branch and tag, its default branch.
    source = tmp_path / "source"
    source.mkdir()
    forge.git("init", "-q", "-b", "trunk", str(source))
    (source / "notes.txt").write_text("imported\n")
    forge.git("add", "notes.txt", cwd=source)
    forge.git("commit", "-q", "-m", "Imported commit", cwd=source)
    forge.git("branch", "side", cwd=source)
    forge.git("tag", "v1", cwd=source)
    made = import_("local", source.as_uri())
    assert made.status_code == 201 and made.json()["import_status"] in ("scheduled", "started", "finished")
    local = _imported(forge.url, forge.token, made.json()["id"])
    assert (local["import_status"], local["import_error"], local["import_type"]) == ("finished", None, "git")
    assert (local["default_branch"], local["empty_repo"], local["import_url"]) == ("trunk", False, source.as_uri())
    branches = forge.api("GET", f"/projects/{local['id']}/repository/branches").json()
    assert [b["name"] for b in branches] == ["side", "trunk"]
    raw = forge.api("GET", f"/projects/{local['id']}/repository/files/notes.txt/raw")
    assert raw.text == "imported\n"
    forge.git("clone", "-q", forge.repo_url("alice/local", token=forge.token), str(tmp_path / "copy"))
    assert forge.git("tag", cwd=tmp_path / "copy").stdout.split() == ["v1"]

    # The forge itself over HTTP, a private project with the token in the URL: kept out of what it shows.
    host = forge.url.removeprefix("http://")
    made = import_("notes", f"http://oauth2:{forge.token}@{host}/root/notes.git")
    notes = _imported(forge.url, forge.token, made.json()["id"])
    assert notes["import_status"] == "finished" and notes["import_url"] == f"http://{host}/root/notes.git"
    assert forge.token not in made.text + json.dumps(notes)
    config = (forge.data / "repos" / "alice" / "notes.git" / "config").read_text()
    assert forge.token not in config and "remote" not in config
    readme = forge.api("GET", "/projects/alice%2Fnotes/repository/files/README.md/raw")
    assert readme.text.startswith("# notes")

    # What it cannot clone fails with GitLab's import_error; credentials never show.
    failures = {
        "refused": "http://127.0.0.1:9/nothing.git",
        "unknown": f"http://oauth2:{forge.token}@{host}/root/nope.git",
        "denied": f"http://oauth2:not-the-token@{host}/root/notes.git",
    }
    for name, url in failures.items():
        made = import_(name, url)
        assert made.status_code == 201
        failed = _imported(forge.url, forge.token, made.json()["id"])
        assert failed["import_status"] == "failed", (name, failed)
        error = failed["import_error"]
        assert error.startswith(f"Error importing repository {url.split('://')[0]}://"), error
        assert f" into alice/{name} - " in error and forge.token not in error and "not-the-token" not in error
        assert failed["empty_repo"] is True
    for name, url in {
        "ssh": "ssh://git@github.com/o/r.git",
        "ext": "ext::sh -c 'touch x'",
        "path": "/srv/r.git",
    }.items():
        made = import_(name, url)
        assert made.status_code == 201
        blocked = made.json()  # refused at once: nothing is ever run
        assert blocked["import_status"] == "failed" and blocked["import_error"].startswith("Import url is blocked")

    # No import: "none"; a reset forgets the user, her projects and imports.
    plain = forge.api("POST", "/projects", json={"name": "plain"}).json()
    assert plain["import_status"] == "none"
    forge.reset()
    assert [u["username"] for u in forge.api("GET", "/users").json()] == ["root"]
    assert not (forge.data / "repos" / "alice").exists()


def test_python_gitlab_speaks_to_the_forge(forge: Forge) -> None:
    """The calls upstream's GitLab helpers make, through python-gitlab itself."""
    gl = gitlab.Gitlab(url=forge.url, private_token=forge.token, timeout=30)
    gl.auth()
    assert gl.user is not None and gl.user.username == "root"
    user = gl.users.create(ALICE)
    assert (user.username, user.email) == ("alice", "alice@example.com")
    with pytest.raises(gitlab.exceptions.GitlabCreateError) as taken:
        gl.users.create({**ALICE, "email": "other@example.com"})
    assert taken.value.response_code == 409 and "Username has already been taken" in str(taken.value)
    (found,) = gl.users.list(username="alice")
    assert found.id == user.id and gl.users.get(user.id).name == "Alice Liddell"
    made = user.projects.create({"name": "mine", "visibility": "public"})
    project = gl.projects.get(made.id)
    assert project.path_with_namespace == "alice/mine" and project.import_status == "none"
    assert [p.path for p in user.projects.list()] == ["mine"]
    for number in range(25):  # past python-gitlab's first page of 20
        gl.users.create({"username": f"u{number}", "email": f"u{number}@e.org", "name": "U", "password": "p" * 8})
    assert len(gl.users.list(get_all=True)) == 27
    gl.users.delete(user.id)
    assert gl.users.list(username="alice") == []
    with pytest.raises(gitlab.exceptions.GitlabGetError):
        gl.projects.get(made.id)


def _snapshot(forge: Forge) -> dict[str, Any]:
    """Everything the API shows: projects, each one's branches with their commits, issues, merge requests."""
    found: dict[str, Any] = {"users": [(u["id"], u["username"]) for u in forge.api("GET", "/users").json()]}
    for project in forge.api("GET", "/projects").json():
        pid = project["id"]
        found[project["path_with_namespace"]] = {
            "project": {k: project[k] for k in ("id", "default_branch", "visibility", "description")},
            "branches": {
                b["name"]: b["commit"]["id"] for b in forge.api("GET", f"/projects/{pid}/repository/branches").json()
            },
            "issues": [(i["iid"], i["title"], i["state"]) for i in forge.api("GET", f"/projects/{pid}/issues").json()],
            "mrs": [(m["iid"], m["state"]) for m in forge.api("GET", f"/projects/{pid}/merge_requests").json()],
        }
    return found


def test_reset_restores_the_seed(forge: Forge, tmp_path: Path) -> None:
    before = _snapshot(forge)
    assert set(before) == {"users", "root/demo", "root/notes"} and before["users"] == [(1, "root")]
    forge.api("POST", "/projects", json={"name": "scratch"})
    alice = forge.api("POST", "/users", json=ALICE).json()
    forge.api("POST", f"/projects/user/{alice['id']}", json={"name": "hers"})
    forge.api("PUT", "/projects/1/issues/1", json={"state_event": "close"})
    forge.api("POST", "/projects/1/issues", json={"title": "more"})
    body = {"source_branch": "add-greeting", "target_branch": "main", "title": "t"}
    assert forge.api("POST", "/projects/1/merge_requests", json=body).status_code == 201
    assert forge.api("PUT", "/projects/1/merge_requests/1/merge").status_code == 200
    work = tmp_path / "demo"
    forge.git("clone", "-q", forge.repo_url("root/demo", token=forge.token), str(work))
    _branch_with(forge, work, "pushed", "changed\n")
    assert _snapshot(forge) != before

    forge.reset()
    assert _snapshot(forge) == before  # seed commits have fixed dates: the same ids after every reset
    refs = forge.git("ls-remote", "--heads", forge.repo_url("root/demo"), cwd=tmp_path).stdout
    assert sorted(line.split("refs/heads/")[1] for line in refs.splitlines()) == ["add-greeting", "main"]


def test_the_getters_read_the_forge_with_the_token(forge: Forge, tmp_path: Path) -> None:
    held = ServiceAccess(
        name="forge", hostname="forge.osworld.test", ports=(80,), host_urls={80: forge.url}, token=forge.token
    )
    ctx = services_context(tmp_path, {"forge": held})

    def get(kind: str, **config: Any) -> Any:
        return get_getter(kind)(ctx, {"type": kind, **config})

    assert get("forge_branches", project="root/demo") == ["add-greeting", "main"]
    assert get("forge_branches", project=1) == ["add-greeting", "main"]
    assert get("forge_branches", project="root/nope") is None  # a score of 0, not a crash
    assert "to recieve a greeting" in get("forge_file", project="root/demo", path="README.md")
    assert "sys.argv" in get("forge_file", project="root/demo", path="/hello.py", ref="add-greeting")
    assert get("forge_file", project="root/demo", path="README.md", ref="nope") is None
    assert get("forge_file", project="root/demo", path="nope.md") is None
    assert get("forge_merge_requests", project="root/demo") == []
    for title in ("first", "second"):
        body = {"source_branch": "add-greeting", "target_branch": "main", "title": title}
        assert forge.api("POST", "/projects/1/merge_requests", json=body).status_code == 201
        forge.api("PUT", "/projects/1/merge_requests/1", json={"state_event": "close"})
    assert get("forge_merge_requests", project="root/demo") == [  # oldest first
        {"title": "first", "state": "closed", "source_branch": "add-greeting", "target_branch": "main"},
        {"title": "second", "state": "opened", "source_branch": "add-greeting", "target_branch": "main"},
    ]
    opened = get("forge_merge_requests", project="root/demo", state="opened", fields=["iid", "title"])
    assert opened == [{"iid": 2, "title": "second"}]
    for number in range(2, 103):  # past one page of 100
        forge.api("POST", "/projects/1/issues", json={"title": f"issue {number}"})
    issues = get("forge_issues", project="root/demo")
    assert len(issues) == 102 and issues[0] == {
        "title": "Typo in the README",
        "state": "opened",
        "labels": ["documentation"],
    }
    assert issues[-1]["title"] == "issue 102"

    with pytest.raises(ForgeGetterError, match=r"the task does not hold the service 'forge' \(it holds: none\)"):
        get_getter("forge_branches")(services_context(tmp_path, {}), {"type": "forge_branches", "project": "root/demo"})
    with pytest.raises(ForgeGetterError, match=r'give "project"'):
        get("forge_branches")
    wrong = dataclasses.replace(held, token="wrong-token")
    with pytest.raises(ForgeGetterError, match=r"answered 401") as caught:
        get_getter("forge_branches")(
            services_context(tmp_path, {"forge": wrong}), {"type": "forge_branches", "project": 1}
        )
    assert "wrong-token" not in str(caught.value)


# --- the run token, its placeholder, the definition ------------------------------------------------------


def _token_in(folder: str) -> str:
    return run_token(Path(folder), "forge")


def test_the_run_token_is_random_one_per_run_and_the_same_in_every_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OSWORLD_FORGE_TOKEN", raising=False)
    run_a, run_b = tmp_path / "a", tmp_path / "b"
    run_a.mkdir()
    run_b.mkdir()
    with multiprocessing.get_context("spawn").Pool(4) as pool:  # processes racing for the first token
        tokens = set(pool.map(_token_in, [str(run_a)] * 8))
    assert len(tokens) == 1
    (token,) = tokens
    assert re.fullmatch(r"[0-9a-f]{40}", token) and run_token(run_a, "forge") == token
    assert run_token(run_b, "forge") != token  # another run, another token
    assert stat.S_IMODE((run_a / "token-forge").stat().st_mode) == 0o600
    assert sorted(p.name for p in run_a.iterdir()) == ["token-forge"]  # no draft left behind
    monkeypatch.setenv("OSWORLD_FORGE_TOKEN", "given-by-the-environment")
    assert run_token(run_b, "forge") == "given-by-the-environment"


def test_the_token_placeholder_fills_only_a_service_with_a_token() -> None:
    forge = ServiceAccess(name="forge", hostname="forge.osworld.test", ports=(80,), token="s3cret-value")
    echo = ServiceAccess(name="echo", hostname="echo.osworld.test", ports=(8000,))
    line = "http://oauth2:{SERVICE_TOKEN:forge}@{SERVICE_HOST:forge} {SERVICE_URL:forge}"
    assert fill(line, {"forge": forge}) == "http://oauth2:s3cret-value@forge.osworld.test http://forge.osworld.test"
    assert "s3cret-value" not in repr(forge)
    with pytest.raises(PlaceholderError, match=r"the service 'echo' has no token \(its definition needs token_env"):
        fill("{SERVICE_TOKEN:echo}", {"echo": echo}, where="task t1")


def test_the_forge_definition() -> None:
    forge = BUILTIN["forge"]
    assert forge.build == "desktop" and forge.exclusive and forge.ports == [80] and forge.token_env == "FORGE_TOKEN"
    assert forge.reset is not None and forge.reset.http is not None
    assert (forge.reset.http.method, forge.reset.http.path) == ("POST", "/api/reset")
    assert forge.reset.http.headers == {"PRIVATE-TOKEN": "{token}"}
    assert forge.readiness.path == "/health"
    adjusted = merge(BUILTIN, {"forge": {"exclusive": False, "token_env": "OTHER"}})["forge"]
    assert not adjusted.exclusive and adjusted.token_env == "OTHER" and adjusted.reset == forge.reset


# --- the pool: the forge in a container ---------------------------------------------------------------


def _pool(run_id: str) -> ServicePool:
    return ServicePool(BUILTIN, host=parse_hosts([])[0], owner=Owner(run_id=run_id), suffix="osworld.test")


@pytest.mark.docker
def test_the_pool_gives_the_forge_the_runs_token_and_resets_it_with_it_between_holders(
    engine: docker.DockerClient, desktop_image: str, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OSWORLD_FORGE_TOKEN", raising=False)
    first, second = _pool(run_id), _pool(run_id)  # two workers of one run
    try:
        with first.for_task(["forge"], "os/a") as held:
            access = held.access["forge"]
            token = access.token
            assert token is not None and token == run_token(lock_dir(run_id), "forge")
            assert sanitize(f"pushed with {token}.") == "pushed with ***."  # remembered by this process
            headers = {"PRIVATE-TOKEN": token}
            made = httpx.post(
                f"{access.url()}/api/v4/projects/1/repository/branches",
                params={"branch": "left-by-a", "ref": "main"},
                headers=headers,
                trust_env=False,
            )
            assert made.status_code == 201
            # An import inside the container: git there clones the forge itself over HTTP.
            api = f"{access.url()}/api/v4"
            alice = httpx.post(f"{api}/users", json=ALICE, headers=headers, trust_env=False).json()
            body = {"name": "copy", "import_url": f"http://oauth2:{token}@127.0.0.1/root/demo.git"}
            copy = httpx.post(f"{api}/projects/user/{alice['id']}", json=body, headers=headers, trust_env=False)
            assert copy.status_code == 201, copy.text
            imported = _imported(access.url(), token, copy.json()["id"])
            assert imported["import_status"] == "finished", imported["import_error"]
            copied = httpx.get(f"{api}/projects/alice%2Fcopy/repository/branches", headers=headers, trust_env=False)
            assert [b["name"] for b in copied.json()] == ["add-greeting", "left-by-a", "main"]
            record = held.records["forge"]
            assert record.exclusive and record.held_at
        container = engine.containers.get(record.id)
        assert f"FORGE_TOKEN={token}" in container.attrs["Config"]["Env"]
        assert token not in container.logs().decode()
        # The next holder (another process) finds the seed again: the reset carried the run's token.
        with second.for_task(["forge"], "os/b") as held:
            other = held.access["forge"]
            assert other.token == token and held.records["forge"].id == record.id
            names = httpx.get(
                f"{other.url()}/api/v4/projects/1/repository/branches", headers=headers, trust_env=False
            ).json()
            assert [b["name"] for b in names] == ["add-greeting", "main"]
            users = httpx.get(f"{other.url()}/api/v4/users", headers=headers, trust_env=False).json()
            assert [u["username"] for u in users] == ["root"]
    finally:
        first.close()
        second.close()
        remove_services(parse_hosts([]), run_id)
    assert run_leftovers(engine, run_id) == ([], [])


@pytest.mark.docker
def test_a_reset_without_the_token_is_refused_and_masks(
    engine: docker.DockerClient, desktop_image: str, run_id: str
) -> None:
    """Without the header the forge answers 401: the reset fails loudly, naming the call, never the token."""
    services = merge(BUILTIN, {"forge": {"reset": {"http": {"method": "POST", "path": "/api/reset"}}}})
    pool = ServicePool(services, host=parse_hosts([])[0], owner=Owner(run_id=run_id), suffix="osworld.test")
    try:
        refused = pytest.raises(ServiceError, match=r"its reset POST /api/reset answered 401, not 200")
        with refused, pool.for_task(["forge"], "os/a"):
            pass
    finally:
        pool.close()
        remove_services(parse_hosts([]), run_id)


# --- the bundled tasks in real runs ----------------------------------------------------------------------

# Each pytest process of the run writes the token it was given (the test's only way to learn it).
_TOKEN_SPY = """
import os
from pathlib import Path
from pytest_osworld.locks import lock_dir

def pytest_runtest_teardown(item):
    token = lock_dir({run_id!r}) / "token-forge"
    if token.exists():
        Path({out!r}, f"token-{{os.getpid()}}.txt").write_text(token.read_text())
"""


def _interval(record: dict[str, Any]) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(record["started_at"]), datetime.fromisoformat(record["finished_at"])


@pytest.mark.docker
def test_the_forge_tasks_pass_with_the_oracle_on_two_workers_and_never_show_the_token(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OSWORLD_FORGE_TOKEN", raising=False)
    path = osworld_pytester.path
    spied = path / "tokens"
    spied.mkdir()
    osworld_pytester.makeconftest(_TOKEN_SPY.format(run_id=run_id, out=str(spied)))
    tasks = path / "forge.jsonl"
    tasks.write_text(FORGE_TASKS.read_text())
    outputs = ("--html=report.html", "--self-contained-html", "--alluredir=allure", "--junitxml=junit.xml")
    run = run_tasks(
        osworld_pytester, tasks, "-p", "xdist", "-n", "2", "--osworld-agent", "oracle", *outputs, run_id=run_id
    )
    run.result.assert_outcomes(passed=2)
    records = run.records()
    assert set(records) == {"os/forge-push-typo-fix", "os/forge-open-merge-request"}
    assert all(r["score"] == 1.0 for r in records.values())
    uses = [r["services"]["forge"] for r in records.values()]
    assert len({u["id"] for u in uses}) == 1 and all(u["exclusive"] and u["held_at"] for u in uses)
    # Held by one task at a time: each episode ran inside its own turn.
    turns = sorted((datetime.fromisoformat(r["services"]["forge"]["held_at"]), *_interval(r)) for r in records.values())
    assert all(held <= start for held, start, _ in turns)
    for (_, _, first_end), (second_held, _, _) in itertools.pairwise(turns):
        assert first_end <= second_held, turns

    tokens = {p.read_text().strip() for p in spied.iterdir()}
    assert len(tokens) == 1, tokens  # one token for the whole run, in every process that held the forge
    (token,) = tokens
    assert len(token) >= 20
    written = [f for folder in (run.run_dir, path / "allure") for f in folder.rglob("*") if f.is_file()]
    written += [path / "report.html", path / "junit.xml"]
    assert len(written) > 10
    leaks = [str(p) for p in written if token.encode() in p.read_bytes()]
    assert leaks == []
    assert token not in run.result.stdout.str() + run.result.stderr.str()
    # The oracle's filled solution held the token: its trajectory keeps the action, not the token.
    traj = (run.run_dir / "os" / "forge-open-merge-request" / "traj.jsonl").read_text()
    assert "add_header('PRIVATE-TOKEN', '***')" in traj and "http://forge.osworld.test/api/v4" in traj
    assert run_leftovers(engine, run_id) == ([], [])


@pytest.mark.docker
def test_the_forge_tasks_score_zero_with_the_null_agent(bundled_null: SharedRun, engine: docker.DockerClient) -> None:
    keys = task_keys(FORGE_TASKS)
    records = {key: record for key, record in bundled_null.records().items() if key in keys}
    assert {k: (r["score"], r["termination"]) for k, r in records.items()} == {
        "os/forge-push-typo-fix": (0.0, "done"),
        "os/forge-open-merge-request": (0.0, "done"),
    }
    assert run_leftovers(engine, bundled_null.run_id) == ([], [])


def test_the_bundled_forge_tasks_are_well_formed() -> None:
    """Unique forge- ids, the forge listed, a solution each, and the token only through its placeholder."""
    tasks = [json.loads(line) for line in FORGE_TASKS.read_text().splitlines()]
    assert len({t["id"] for t in tasks}) == len(tasks) == 2
    for task in tasks:
        assert task["id"].startswith("forge-") and task["services"] == ["forge"] and task["solution"]
        assert task["domain"] in ("os", "multi_apps")
        assert "{SERVICE_TOKEN:forge}" in json.dumps(task["config"])
        assert "SERVICE_TOKEN" not in task["instruction"]  # the agent reads it from a file, never the prompt
