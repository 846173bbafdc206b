"""The forge's REST API v4: which handler answers which method and path. Each handler is called as
``handler(forge, base, params, *groups)`` with the forge's lock held, and returns an ``Answer``."""

from __future__ import annotations

import re
from collections.abc import Callable

from . import issues, merge_requests, projects, repository, users
from .params import Answer

Route = tuple[str, re.Pattern[str], Callable[..., Answer]]

_P = r"/api/v4/projects/([^/]+)"
_ROUTES: list[tuple[str, str, Callable[..., Answer]]] = [
    ("GET", r"/api/v4/user", users.get_user),
    ("GET", r"/api/v4/users", users.list_users),
    ("POST", r"/api/v4/users", users.create_user),
    ("GET", r"/api/v4/users/([^/]+)", users.get_user_by_id),
    ("DELETE", r"/api/v4/users/([^/]+)", users.delete_user),
    ("GET", r"/api/v4/users/([^/]+)/projects", users.list_user_projects),
    ("POST", r"/api/v4/projects/user/([^/]+)", projects.create_user_project),
    ("GET", r"/api/v4/projects", projects.list_projects),
    ("POST", r"/api/v4/projects", projects.create_project),
    ("GET", _P, projects.get_project),
    ("GET", _P + r"/repository/branches", repository.list_branches),
    ("POST", _P + r"/repository/branches", repository.create_branch),
    ("GET", _P + r"/repository/branches/([^/]+)", repository.get_branch),
    ("DELETE", _P + r"/repository/branches/([^/]+)", repository.delete_branch),
    ("GET", _P + r"/repository/files/([^/]+)", repository.get_file),
    ("GET", _P + r"/repository/files/([^/]+)/raw", repository.get_raw_file),
    ("GET", _P + r"/repository/commits", repository.list_commits),
    ("GET", _P + r"/issues", issues.list_issues),
    ("POST", _P + r"/issues", issues.create_issue),
    ("GET", _P + r"/issues/(\d+)", issues.get_issue),
    ("PUT", _P + r"/issues/(\d+)", issues.update_issue),
    ("GET", _P + r"/merge_requests", merge_requests.list_mrs),
    ("POST", _P + r"/merge_requests", merge_requests.create_mr),
    ("GET", _P + r"/merge_requests/(\d+)", merge_requests.get_mr),
    ("PUT", _P + r"/merge_requests/(\d+)", merge_requests.update_mr),
    ("PUT", _P + r"/merge_requests/(\d+)/merge", merge_requests.merge_mr),
]
ROUTES: list[Route] = [(method, re.compile(pattern + "$"), handler) for method, pattern, handler in _ROUTES]


def find(method: str, path: str) -> tuple[Callable[..., Answer], tuple[str, ...]] | None:
    """The handler of ``method`` on ``path`` and the path's groups, or None."""
    for wanted, pattern, handler in ROUTES:
        found = pattern.match(path)
        if found and wanted == method:
            return handler, found.groups()
    return None
