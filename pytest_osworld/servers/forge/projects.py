"""Projects: ``GET|POST /projects``, ``GET /projects/:id``, ``POST /projects/user/:user_id`` (a
project in that user's namespace, as an administrator makes one for them). A project lives in its
owner's namespace; with ``import_url`` its repository is imported in the background (``imports``)."""

from __future__ import annotations

import re
from typing import Any

from .imports import start_import
from .params import Answer, ApiError, Params, flag, missing, not_found, page, text
from .state import Forge
from .views import project_json

_PATH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def list_projects(forge: Forge, base: str, params: Params) -> Answer:
    search = (text(params, "search") or "").lower()
    visibility = text(params, "visibility")
    found = [
        p
        for p in sorted(forge.store.projects.values(), key=lambda p: p["id"], reverse=True)
        if (not search or search in p["name"].lower() or search in p["path"].lower())
        and (visibility is None or p["visibility"] == visibility)
    ]
    return page([project_json(forge, p, base) for p in found], params)


def _namespace(forge: Forge, params: Params) -> dict[str, Any]:
    """The owner of ``namespace_id`` (a user's namespace: its id is the user's, its path the username)."""
    ref = text(params, "namespace_id")
    if ref in (None, ""):
        return forge.store.root()
    found = forge.store.users.get(int(ref)) if ref.isdigit() else forge.store.user_named(ref)
    if found is None:
        raise not_found("Namespace")
    return found


def create_project(forge: Forge, base: str, params: Params) -> Answer:
    return new_project(forge, base, params, _namespace(forge, params), forge.store.root())


def create_user_project(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    owner = forge.store.user(ref)
    missing(params, "name")
    return new_project(forge, base, params, owner, owner)


def new_project(forge: Forge, base: str, params: Params, owner: dict[str, Any], creator: dict[str, Any]) -> Answer:
    name, path = text(params, "name"), text(params, "path")
    if not name and not path:
        raise ApiError(400, {"error": "name, path are missing, at least one parameter must be provided"})
    path = path or re.sub(r"[^a-z0-9_.-]+", "-", (name or "").lower()).strip("-.")
    name = name or path
    if not _PATH.match(path) or path.endswith((".git", ".atom")):
        message = (
            "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'"
        )
        raise ApiError(400, {"message": {"path": [message]}})
    visibility = text(params, "visibility") or "private"
    if visibility not in ("private", "internal", "public"):
        raise ApiError(400, {"error": "visibility does not have a valid value"})
    taken: dict[str, list[str]] = {}
    for project in forge.store.projects.values():
        if project["owner_id"] != owner["id"]:
            continue
        if project["name"].lower() == name.lower():
            taken["name"] = ["has already been taken"]
        if project["path"].lower() == path.lower():
            taken["path"] = ["has already been taken"]
    if taken:
        raise ApiError(400, {"message": taken})
    default_branch = text(params, "default_branch") or "main"
    if not forge.git.valid_branch(default_branch):
        raise ApiError(400, {"error": "default_branch is invalid"})
    project = forge.store.create_project(
        owner,
        name,
        path,
        creator_id=creator["id"],
        description=text(params, "description"),
        visibility=visibility,
        default_branch=default_branch,
    )
    import_url = text(params, "import_url")
    if import_url:
        start_import(forge, project, import_url)
    elif flag(params, "initialize_with_readme"):
        repo = forge.store.repo(project)
        readme = f"# {name}\n\n{project['description']}\n".rstrip("\n") + "\n"
        sha = forge.git.write_commit(repo, {"README.md": readme}, "Initial commit", [])
        forge.git.run(repo, "update-ref", f"refs/heads/{default_branch}", sha)
    return 201, project_json(forge, project, base), {}


def get_project(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    return 200, project_json(forge, forge.store.project(ref), base), {}
