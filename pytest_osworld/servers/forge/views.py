"""GitLab's JSON of the forge's users, namespaces, projects, branches, issues and merge requests,
with GitLab's field names; every caller is root, an administrator, so everything is shown."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

from .params import not_found
from .state import Forge


def user_basic(forge: Forge, base: str, user: dict[str, Any] | None = None) -> dict[str, Any]:
    """GitLab's short user object (root's unless ``user`` is given)."""
    user = user or forge.store.root()
    return {
        "id": user["id"],
        "username": user["username"],
        "name": user["name"],
        "state": user["state"],
        "locked": False,
        "avatar_url": None,
        "web_url": f"{base}/{user['username']}",
    }


_USER_DETAILS = (
    "bio",
    "location",
    "public_email",
    "website_url",
    "organization",
    "job_title",
    "email",
    "is_admin",
    "projects_limit",
    "can_create_group",
    "external",
    "private_profile",
)


def user_json(forge: Forge, user: dict[str, Any], base: str) -> dict[str, Any]:
    """A user as an administrator sees them (every caller is root)."""
    return {
        **user_basic(forge, base, user),
        "created_at": user["created_at"],
        **{key: user[key] for key in _USER_DETAILS},
        "bot": False,
        "can_create_project": True,
        "two_factor_enabled": False,
        "identities": [],
        "namespace_id": user["id"],
        "last_sign_in_at": None,
        "current_sign_in_at": None,
        "confirmed_at": user["created_at"],
    }


def namespace_json(user: dict[str, Any], base: str) -> dict[str, Any]:
    return {
        "id": user["id"],
        "name": user["name"],
        "path": user["username"],
        "kind": "user",
        "full_path": user["username"],
        "parent_id": None,
        "avatar_url": None,
        "web_url": f"{base}/{user['username']}",
    }


def safe_url(url: str) -> str:
    """``url`` without the user name and password it may carry."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(not a URL)"
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def project_json(forge: Forge, project: dict[str, Any], base: str) -> dict[str, Any]:
    full = forge.store.full_path(project)
    owner = forge.store.owner(project)
    web = f"{base}/{full}"
    host = urlsplit(base).hostname or "localhost"
    repo = forge.store.repo(project)
    return {
        "id": project["id"],
        "description": project["description"],
        "name": project["name"],
        "name_with_namespace": f"{owner['name']} / {project['name']}",
        "path": project["path"],
        "path_with_namespace": full,
        "created_at": project["created_at"],
        "last_activity_at": project["last_activity_at"],
        "default_branch": project["default_branch"],
        "tag_list": [],
        "topics": [],
        "ssh_url_to_repo": f"git@{host}:{full}.git",
        "http_url_to_repo": f"{web}.git",
        "web_url": web,
        "readme_url": f"{web}/-/blob/{project['default_branch']}/README.md",
        "avatar_url": None,
        "forks_count": 0,
        "star_count": 0,
        "visibility": project["visibility"],
        "namespace": namespace_json(owner, base),
        "owner": user_basic(forge, base, owner),
        "empty_repo": not forge.git.branch_names(repo),
        "archived": False,
        "issues_enabled": True,
        "merge_requests_enabled": True,
        "open_issues_count": sum(1 for i in forge.store.issues[project["id"]] if i["state"] == "opened"),
        "creator_id": project["creator_id"],
        "import_url": safe_url(project["import_url"]) if project["import_url"] else None,
        "import_type": "git" if project["import_url"] else None,
        "import_status": project["import_status"],
        "import_error": project["import_error"],
    }


def branch_json(forge: Forge, project: dict[str, Any], name: str, base: str) -> dict[str, Any]:
    repo = forge.store.repo(project)
    sha = forge.git.branch_head(repo, name)
    if sha is None:
        raise not_found("Branch")
    default = project["default_branch"]
    default_sha = forge.git.branch_head(repo, default)
    merged = (
        name != default
        and default_sha is not None
        and forge.git.ok(repo, "merge-base", "--is-ancestor", sha, default_sha)
    )
    web = f"{base}/{forge.store.full_path(project)}"
    commit = {**forge.git.commits(repo, sha)[0], "web_url": f"{web}/-/commit/{sha}"}
    return {
        "name": name,
        "merged": merged,
        "protected": name == default,
        "default": name == default,
        "developers_can_push": False,
        "developers_can_merge": False,
        "can_push": True,
        "web_url": f"{web}/-/tree/{quote(name)}",
        "commit": commit,
    }


def issue_json(forge: Forge, project: dict[str, Any], issue: dict[str, Any], base: str) -> dict[str, Any]:
    full = forge.store.full_path(project)
    body = {k: v for k, v in issue.items() if k != "closed"}
    return {
        **body,
        "closed_by": user_basic(forge, base) if issue["state"] == "closed" else None,
        "milestone": None,
        "assignees": [],
        "author": user_basic(forge, base),
        "assignee": None,
        "type": "ISSUE",
        "issue_type": "issue",
        "user_notes_count": 0,
        "upvotes": 0,
        "downvotes": 0,
        "due_date": None,
        "web_url": f"{base}/{full}/-/issues/{issue['iid']}",
        "references": {"short": f"#{issue['iid']}", "relative": f"#{issue['iid']}", "full": f"{full}#{issue['iid']}"},
    }


def mr_json(forge: Forge, project: dict[str, Any], mr: dict[str, Any], base: str) -> dict[str, Any]:
    full = forge.store.full_path(project)
    repo = forge.store.repo(project)
    sha = mr["sha"] if mr["state"] == "merged" else forge.git.branch_head(repo, mr["source_branch"]) or mr["sha"]
    status, conflicts, detailed = mr["merge_status"], mr["has_conflicts"], "not_open"
    if mr["state"] == "opened":
        target = forge.git.branch_head(repo, mr["target_branch"])
        clean = sha is not None and target is not None and forge.git.merge_tree(repo, target, sha)[1]
        status, conflicts = ("can_be_merged" if clean else "cannot_be_merged"), not clean
        detailed = "mergeable" if clean else "broken_status"
    merged_by = user_basic(forge, base) if mr["state"] == "merged" else None
    return {
        "id": mr["id"],
        "iid": mr["iid"],
        "project_id": project["id"],
        "title": mr["title"],
        "description": mr["description"],
        "state": mr["state"],
        "created_at": mr["created_at"],
        "updated_at": mr["updated_at"],
        "merged_by": merged_by,
        "merge_user": merged_by,
        "merged_at": mr["merged_at"],
        "closed_by": user_basic(forge, base) if mr["state"] == "closed" else None,
        "closed_at": mr["closed_at"],
        "target_branch": mr["target_branch"],
        "source_branch": mr["source_branch"],
        "user_notes_count": 0,
        "upvotes": 0,
        "downvotes": 0,
        "author": user_basic(forge, base),
        "assignees": [],
        "assignee": None,
        "reviewers": [],
        "source_project_id": project["id"],
        "target_project_id": project["id"],
        "labels": mr["labels"],
        "draft": False,
        "work_in_progress": False,
        "milestone": None,
        "merge_when_pipeline_succeeds": False,
        "merge_status": status,
        "detailed_merge_status": detailed,
        "has_conflicts": conflicts,
        "sha": sha,
        "merge_commit_sha": mr["merge_commit_sha"],
        "squash_commit_sha": mr["squash_commit_sha"],
        "squash": mr["squash"],
        "should_remove_source_branch": mr["should_remove_source_branch"],
        "force_remove_source_branch": mr["force_remove_source_branch"],
        "web_url": f"{base}/{full}/-/merge_requests/{mr['iid']}",
        "references": {"short": f"!{mr['iid']}", "relative": f"!{mr['iid']}", "full": f"{full}!{mr['iid']}"},
    }
