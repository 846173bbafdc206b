"""A project's repository through the REST API: branches (``GET|POST .../repository/branches``,
``GET|DELETE .../branches/:branch``), files (``GET .../repository/files/:path`` and ``.../raw``, on
``ref``) and commits (``GET .../repository/commits``, the history of ``ref_name``), read from and
written to the bare repository."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import unquote

from .config import now
from .params import Answer, ApiError, Params, missing, not_found, page, text
from .state import Forge
from .views import branch_json


def list_branches(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    project = forge.store.project(ref)
    search = text(params, "search") or ""
    names = [n for n in forge.git.branch_names(forge.store.repo(project)) if search.lower() in n.lower()]
    return page([branch_json(forge, project, n, base) for n in names], params)


def create_branch(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    project = forge.store.project(ref)
    missing(params, "branch", "ref")
    name, start = str(params["branch"]), str(params["ref"])
    repo = forge.store.repo(project)
    if not forge.git.valid_branch(name):
        raise ApiError(400, {"message": "Branch name is invalid"})
    if forge.git.branch_head(repo, name) is not None:
        raise ApiError(400, {"message": "Branch already exists"})
    sha = forge.git.resolve(repo, start)
    if sha is None:
        raise ApiError(400, {"message": "Invalid reference name: " + start})
    forge.git.run(repo, "update-ref", f"refs/heads/{name}", sha, "")
    project["last_activity_at"] = now()
    return 201, branch_json(forge, project, name, base), {}


def get_branch(forge: Forge, base: str, params: Params, ref: str, name: str) -> Answer:
    return 200, branch_json(forge, forge.store.project(ref), unquote(name), base), {}


def delete_branch(forge: Forge, base: str, params: Params, ref: str, name: str) -> Answer:
    project = forge.store.project(ref)
    name = unquote(name)
    repo = forge.store.repo(project)
    if forge.git.branch_head(repo, name) is None:
        raise not_found("Branch")
    if name == project["default_branch"]:
        raise ApiError(405, {"message": "Cannot remove HEAD branch"})
    forge.git.run(repo, "update-ref", "-d", f"refs/heads/{name}")
    return 204, None, {}


def _file(forge: Forge, project: dict[str, Any], params: Params, path: str) -> tuple[str, str, bytes]:
    """(the ref's commit, the blob's id, its content) of a file; 404 when either is missing."""
    repo = forge.store.repo(project)
    ref = text(params, "ref") or project["default_branch"]
    sha = forge.git.resolve(repo, ref)
    if sha is None:
        raise not_found("Commit")
    path = unquote(path).strip("/")
    if not path or forge.git.run(repo, "cat-file", "-t", f"{sha}:{path}", ok=(0, 128)).strip() != "blob":
        raise not_found("File")
    blob = forge.git.run(repo, "rev-parse", f"{sha}:{path}").strip()
    return sha, blob, forge.git.blob(repo, blob)


def get_file(forge: Forge, base: str, params: Params, ref: str, path: str) -> Answer:
    project = forge.store.project(ref)
    sha, blob, content = _file(forge, project, params, path)
    path = unquote(path).strip("/")
    last = forge.git.run(forge.store.repo(project), "log", "-1", "--format=%H", sha, "--", path).strip()
    body = {
        "file_name": path.rsplit("/", 1)[-1],
        "file_path": path,
        "size": len(content),
        "encoding": "base64",
        "content": base64.b64encode(content).decode(),
        "ref": text(params, "ref") or project["default_branch"],
        "blob_id": blob,
        "commit_id": sha,
        "last_commit_id": last,
    }
    return 200, body, {}


def get_raw_file(forge: Forge, base: str, params: Params, ref: str, path: str) -> Answer:
    _, _, content = _file(forge, forge.store.project(ref), params, path)
    return 200, content, {"Content-Type": "text/plain; charset=utf-8"}


def list_commits(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    project = forge.store.project(ref)
    repo = forge.store.repo(project)
    start = text(params, "ref_name") or project["default_branch"]
    sha = forge.git.resolve(repo, start)
    if sha is None:
        raise not_found("Commit")
    return page(forge.git.commits(repo, sha, walk=True), params)
