"""Merge requests: ``GET|POST /projects/:id/merge_requests``, ``GET|PUT .../merge_requests/:iid``,
``PUT .../merge_requests/:iid/merge``: a real merge commit (or one squashed commit) on the target
branch of the bare repository (405 when not open, 406 on a conflict)."""

from __future__ import annotations

from typing import Any

from .config import now
from .params import (
    Answer,
    ApiError,
    Params,
    flag,
    in_state,
    labels_of,
    matches,
    missing,
    not_found,
    page,
    state_event,
    text,
)
from .state import Forge
from .views import mr_json


def list_mrs(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    project = forge.store.project(ref)
    found = [
        mr_json(forge, project, m, base)
        for m in reversed(forge.store.mrs[project["id"]])
        if in_state(m, params, ("opened", "closed", "merged", "locked"))
        and matches(m, params)
        and params.get("source_branch") in (None, "", m["source_branch"])
        and params.get("target_branch") in (None, "", m["target_branch"])
    ]
    return page(found, params)


def create_mr(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    project = forge.store.project(ref)
    missing(params, "source_branch", "target_branch", "title")
    source, target = str(params["source_branch"]), str(params["target_branch"])
    if source == target:
        raise ApiError(422, {"message": ["You can't use same project/branch for source and target"]})
    repo = forge.store.repo(project)
    for kind, name in (("Source", source), ("Target", target)):
        if forge.git.branch_head(repo, name) is None:
            raise ApiError(400, {"message": [f'{kind} branch "{name}" does not exist']})
    mrs = forge.store.mrs[project["id"]]
    for other in mrs:
        if other["state"] == "opened" and (other["source_branch"], other["target_branch"]) == (source, target):
            message = f"Another open merge request already exists for this source branch: !{other['iid']}"
            raise ApiError(409, {"message": [message]})
    stamp = now()
    mr = {
        "id": forge.store.next_id("mr"),
        "iid": max((m["iid"] for m in mrs), default=0) + 1,
        "title": str(params["title"]),
        "description": text(params, "description") or "",
        "state": "opened",
        "created_at": stamp,
        "updated_at": stamp,
        "merged_at": None,
        "closed_at": None,
        "source_branch": source,
        "target_branch": target,
        "labels": labels_of(params.get("labels")),
        "sha": forge.git.branch_head(repo, source),
        "merge_status": "can_be_merged",
        "has_conflicts": False,
        "merge_commit_sha": None,
        "squash_commit_sha": None,
        "squash": flag(params, "squash"),
        "should_remove_source_branch": None,
        "force_remove_source_branch": flag(params, "remove_source_branch"),
    }
    mrs.append(mr)
    project["last_activity_at"] = stamp
    return 201, mr_json(forge, project, mr, base), {}


def _mr(forge: Forge, project: dict[str, Any], iid: str) -> dict[str, Any]:
    found = next((m for m in forge.store.mrs[project["id"]] if m["iid"] == int(iid)), None)
    if found is None:
        raise not_found("Merge Request")
    return found


def get_mr(forge: Forge, base: str, params: Params, ref: str, iid: str) -> Answer:
    project = forge.store.project(ref)
    return 200, mr_json(forge, project, _mr(forge, project, iid), base), {}


_MR_KEYS = ("title", "description", "target_branch", "labels", "state_event", "remove_source_branch", "squash")


def update_mr(forge: Forge, base: str, params: Params, ref: str, iid: str) -> Answer:
    project = forge.store.project(ref)
    mr = _mr(forge, project, iid)
    if not any(k in params for k in _MR_KEYS):
        raise ApiError(400, {"error": f"{', '.join(_MR_KEYS)} are missing, at least one parameter must be provided"})
    if mr["state"] == "merged":
        return 200, mr_json(forge, project, mr, base), {}  # a merged request keeps what it was merged as
    if "target_branch" in params:
        target = str(params["target_branch"])
        if forge.git.branch_head(forge.store.repo(project), target) is None:
            raise ApiError(400, {"message": [f'Target branch "{target}" does not exist']})
        mr["target_branch"] = target
    if "title" in params:
        mr["title"] = str(params["title"])
    if "description" in params:
        mr["description"] = str(params["description"] or "")
    if "labels" in params:
        mr["labels"] = labels_of(params["labels"])
    if "remove_source_branch" in params:
        mr["force_remove_source_branch"] = flag(params, "remove_source_branch")
    if "squash" in params:
        mr["squash"] = flag(params, "squash")
    stamp = now()
    state_event(mr, params, stamp)
    mr["updated_at"] = project["last_activity_at"] = stamp
    return 200, mr_json(forge, project, mr, base), {}


def merge_mr(forge: Forge, base: str, params: Params, ref: str, iid: str) -> Answer:
    """Merge for real: a merge commit (or one squashed commit) on the target branch of the bare repository."""
    project = forge.store.project(ref)
    mr = _mr(forge, project, iid)
    if mr["state"] != "opened":
        raise ApiError(405, {"message": "405 Method Not Allowed"})
    repo = forge.store.repo(project)
    source, target = forge.git.branch_head(repo, mr["source_branch"]), forge.git.branch_head(repo, mr["target_branch"])
    if source is None or target is None:
        raise ApiError(406, {"message": "Branch cannot be merged"})
    wanted = text(params, "sha")
    if wanted and wanted != source:
        raise ApiError(409, {"message": f"SHA does not match HEAD of source branch: {source}"})
    tree, clean = forge.git.merge_tree(repo, target, source)
    if not clean:
        mr["merge_status"], mr["has_conflicts"] = "cannot_be_merged", True
        raise ApiError(406, {"message": "Branch cannot be merged"})
    full = forge.store.full_path(project)
    squash = flag(params, "squash") if "squash" in params else mr["squash"]
    if squash:
        message = text(params, "squash_commit_message") or mr["title"]
        new = forge.git.commit_tree(repo, tree, [target], message)
        mr["squash_commit_sha"] = new
    else:
        message = text(params, "merge_commit_message") or (
            f"Merge branch '{mr['source_branch']}' into '{mr['target_branch']}'\n\n{mr['title']}\n\n"
            f"See merge request {full}!{mr['iid']}"
        )
        new = forge.git.commit_tree(repo, tree, [target, source], message)
        mr["merge_commit_sha"] = new
    forge.git.run(repo, "update-ref", f"refs/heads/{mr['target_branch']}", new, target)
    remove = flag(params, "should_remove_source_branch") or mr["force_remove_source_branch"]
    if remove and mr["source_branch"] != project["default_branch"]:
        forge.git.run(repo, "update-ref", "-d", f"refs/heads/{mr['source_branch']}")
    mr["should_remove_source_branch"] = remove or None
    stamp = now()
    mr.update(
        state="merged",
        sha=source,
        squash=squash,
        merged_at=stamp,
        updated_at=stamp,
        merge_status="can_be_merged",
        has_conflicts=False,
    )
    project["last_activity_at"] = stamp
    return 200, mr_json(forge, project, mr, base), {}
