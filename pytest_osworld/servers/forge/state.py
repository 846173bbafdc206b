"""The forge's state: ``Forge``, the one object made at start and handed to every request (its
settings, its git, its lock, and the ``Store`` of users, projects, issues and merge requests, which a
reset replaces whole)."""

from __future__ import annotations

import os
import shutil
import threading
from typing import Any
from urllib.parse import unquote

from .config import ROOT, Config, now
from .git import Git
from .params import not_found


class Store:
    """Users, projects, issues and merge requests; each project's repository lives under ``repos``."""

    def __init__(self, repos: str, git: Git) -> None:
        self.repos = repos
        self.git = git
        self.users: dict[int, dict[str, Any]] = {}
        self.projects: dict[int, dict[str, Any]] = {}
        self.issues: dict[int, list[dict[str, Any]]] = {}
        self.mrs: dict[int, list[dict[str, Any]]] = {}
        self.ids = {"user": 0, "project": 0, "issue": 0, "mr": 0}

    def next_id(self, kind: str) -> int:
        self.ids[kind] += 1
        return self.ids[kind]

    def root(self) -> dict[str, Any]:
        return self.users[ROOT["id"]]

    def user(self, ref: str | int) -> dict[str, Any]:
        found = self.users.get(int(ref)) if str(ref).isdigit() else None
        if found is None:
            raise not_found("User")
        return found

    def user_named(self, username: str) -> dict[str, Any] | None:
        return next((u for u in self.users.values() if u["username"].lower() == username.lower()), None)

    def owner(self, project: dict[str, Any]) -> dict[str, Any]:
        return self.users[project["owner_id"]]

    def full_path(self, project: dict[str, Any]) -> str:
        return f"{self.owner(project)['username']}/{project['path']}"

    def repo(self, project: dict[str, Any]) -> str:
        return os.path.join(self.repos, self.owner(project)["username"], project["path"] + ".git")

    def by_path(self, full_path: str) -> dict[str, Any] | None:
        namespace, _, path = full_path.strip("/").partition("/")
        owner = self.user_named(namespace)
        if owner is None:
            return None
        return next(
            (p for p in self.projects.values() if p["owner_id"] == owner["id"] and p["path"].lower() == path.lower()),
            None,
        )

    def project(self, ref: str) -> dict[str, Any]:
        found = self.projects.get(int(ref)) if ref.isdigit() else self.by_path(unquote(ref))
        if found is None:
            raise not_found("Project")
        return found

    def add_user(self, **fields: Any) -> dict[str, Any]:
        user: dict[str, Any] = {
            "id": self.next_id("user"),
            "state": "active",
            "created_at": fields.pop("created_at", None) or now(),
            "is_admin": False,
            "bio": "",
            "location": "",
            "public_email": None,
            "website_url": "",
            "organization": "",
            "job_title": "",
            "projects_limit": 100000,
            "can_create_group": True,
            "external": False,
            "private_profile": False,
            **fields,
        }
        self.users[user["id"]] = user
        return user

    def create_project(self, owner: dict[str, Any], name: str, path: str, **options: Any) -> dict[str, Any]:
        stamp = options.get("created_at") or now()
        project: dict[str, Any] = {
            "id": self.next_id("project"),
            "owner_id": owner["id"],
            "creator_id": options.get("creator_id") or owner["id"],
            "name": name,
            "path": path,
            "description": options.get("description") or "",
            "visibility": options.get("visibility") or "private",
            "default_branch": options.get("default_branch") or "main",
            "created_at": stamp,
            "last_activity_at": stamp,
            "import_url": None,
            "import_status": "none",
            "import_error": None,
        }
        repo = self.repo(project)
        os.makedirs(os.path.dirname(repo), exist_ok=True)
        self.git.init_bare(repo, project["default_branch"])
        self.projects[project["id"]] = project
        self.issues[project["id"]] = []
        self.mrs[project["id"]] = []
        return project

    def delete_user(self, user: dict[str, Any]) -> None:
        """The user, their projects (issues, merge requests) and their namespace's repositories."""
        for pid in [pid for pid, p in self.projects.items() if p["owner_id"] == user["id"]]:
            del self.projects[pid], self.issues[pid], self.mrs[pid]
        del self.users[user["id"]]
        shutil.rmtree(os.path.join(self.repos, user["username"]), ignore_errors=True)


class Forge:
    """The running forge. ``lock`` guards the store and the repositories' refs; ``store`` is replaced
    whole by a reset (an import under way finds it gone and stops)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.git = Git(config.data)
        self.lock = threading.RLock()
        self.store = Store(config.repos, self.git)
