"""Users: ``GET /user`` (the token's: root), ``GET|POST /users``, ``GET|DELETE /users/:id``,
``GET /users/:id/projects``. Each user owns the namespace of their username, whose id is theirs.
Passwords are checked, never kept: the forge has no sign-in."""

from __future__ import annotations

import re
from typing import Any

from .config import ROOT
from .params import Answer, ApiError, Params, flag, missing, page, text
from .state import Forge
from .views import project_json, user_json


def get_user(forge: Forge, base: str, params: Params) -> Answer:
    """The token's user: root."""
    return 200, user_json(forge, forge.store.root(), base), {}


def list_users(forge: Forge, base: str, params: Params) -> Answer:
    username = (text(params, "username") or "").lower()
    search = (text(params, "search") or "").lower()
    found = [
        u
        for u in sorted(forge.store.users.values(), key=lambda u: u["id"], reverse=True)
        if (not username or u["username"].lower() == username)
        and (not search or any(search in str(u[key]).lower() for key in ("username", "name", "email")))
        and (not flag(params, "active") or u["state"] == "active")
        and (not flag(params, "admins") or u["is_admin"])
    ]
    return page([user_json(forge, u, base) for u in found], params)


def get_user_by_id(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    return 200, user_json(forge, forge.store.user(ref), base), {}


_USERNAME = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*$")
_RESERVED = ("api", "health")  # the forge's own top-level paths
_USER_TEXT = ("bio", "location", "public_email", "website_url", "organization", "job_title")
_USER_FLAGS = ("can_create_group", "external", "private_profile")


def create_user(forge: Forge, base: str, params: Params) -> Answer:
    """A new user (every caller is root, an administrator); GitLab's checks, in its order."""
    missing(params, "email", "name", "username")
    password = text(params, "password")
    if not password and not flag(params, "reset_password") and not flag(params, "force_random_password"):
        raise ApiError(
            400,
            {
                "error": "password, reset_password, force_random_password are missing, at least one parameter must be provided"
            },
        )
    email, name, username = str(params["email"]).strip(), str(params["name"]), str(params["username"])
    # GitLab tries to save first and explains a failure by these two conflicts before anything else.
    if any(u["email"].lower() == email.lower() for u in forge.store.users.values()):
        raise ApiError(409, {"message": "Email has already been taken"})
    if forge.store.user_named(username) is not None:
        raise ApiError(409, {"message": "Username has already been taken"})
    invalid: dict[str, list[str]] = {}
    if not _USERNAME.match(username) or username.endswith((".", ".git", ".atom")):
        invalid["username"] = [
            "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.', '.git' or '.atom'."
        ]
    elif username.lower() in _RESERVED:
        invalid["username"] = [f"{username} is a reserved name"]
    if not re.fullmatch(r"[^@\s]+@[^@\s]+", email):
        invalid["email"] = ["is invalid"]
    if password and len(password) < 8:
        invalid["password"] = ["is too short (minimum is 8 characters)"]
    limit = text(params, "projects_limit")
    if limit is not None and not limit.isdigit():
        invalid["projects_limit"] = ["is not a number"]
    if invalid:
        raise ApiError(400, {"message": invalid})
    extra: dict[str, Any] = {key: str(params[key]) for key in _USER_TEXT if params.get(key) is not None}
    extra.update({key: flag(params, key) for key in _USER_FLAGS if key in params})
    if limit is not None:
        extra["projects_limit"] = int(limit)
    user = forge.store.add_user(username=username, name=name, email=email, is_admin=flag(params, "admin"), **extra)
    return 201, user_json(forge, user, base), {}


def delete_user(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    user = forge.store.user(ref)
    if user["id"] == ROOT["id"]:
        raise ApiError(403, {"message": "403 Forbidden"})  # root holds the token: the forge needs it
    forge.store.delete_user(user)
    return 204, None, {}


def list_user_projects(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    owner = forge.store.user(ref)
    found = [
        p
        for p in sorted(forge.store.projects.values(), key=lambda p: p["id"], reverse=True)
        if p["owner_id"] == owner["id"]
    ]
    return page([project_json(forge, p, base) for p in found], params)
