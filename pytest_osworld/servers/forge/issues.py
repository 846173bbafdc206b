"""Issues: ``GET|POST /projects/:id/issues``, ``GET|PUT .../issues/:iid`` (``PUT`` takes ``title``,
``description``, ``labels``, ``add_labels``, ``remove_labels``, ``state_event=close|reopen``)."""

from __future__ import annotations

from typing import Any

from .config import now
from .params import Answer, ApiError, Params, in_state, labels_of, matches, missing, not_found, page, state_event, text
from .state import Forge, Store
from .views import issue_json


def new_issue(
    store: Store, project: dict[str, Any], iid: int, title: str, description: str, labels: list[str], stamp: str
) -> dict[str, Any]:
    return {
        "id": store.next_id("issue"),
        "iid": iid,
        "project_id": project["id"],
        "title": title,
        "description": description,
        "state": "opened",
        "created_at": stamp,
        "updated_at": stamp,
        "closed_at": None,
        "closed": False,
        "labels": labels,
        "confidential": False,
    }


def list_issues(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    project = forge.store.project(ref)
    found = [
        issue_json(forge, project, i, base)
        for i in reversed(forge.store.issues[project["id"]])
        if in_state(i, params, ("opened", "closed")) and matches(i, params)
    ]
    return page(found, params)


def create_issue(forge: Forge, base: str, params: Params, ref: str) -> Answer:
    project = forge.store.project(ref)
    missing(params, "title")
    issues = forge.store.issues[project["id"]]
    issue = new_issue(
        forge.store,
        project,
        max((i["iid"] for i in issues), default=0) + 1,
        str(params["title"]),
        text(params, "description") or "",
        labels_of(params.get("labels")),
        now(),
    )
    issues.append(issue)
    project["last_activity_at"] = issue["created_at"]
    return 201, issue_json(forge, project, issue, base), {}


def _issue(forge: Forge, project: dict[str, Any], iid: str) -> dict[str, Any]:
    found = next((i for i in forge.store.issues[project["id"]] if i["iid"] == int(iid)), None)
    if found is None:
        raise not_found("Issue")
    return found


def get_issue(forge: Forge, base: str, params: Params, ref: str, iid: str) -> Answer:
    project = forge.store.project(ref)
    return 200, issue_json(forge, project, _issue(forge, project, iid), base), {}


_ISSUE_KEYS = ("title", "description", "labels", "add_labels", "remove_labels", "state_event")


def update_issue(forge: Forge, base: str, params: Params, ref: str, iid: str) -> Answer:
    project = forge.store.project(ref)
    issue = _issue(forge, project, iid)
    if not any(k in params for k in _ISSUE_KEYS):
        raise ApiError(400, {"error": f"{', '.join(_ISSUE_KEYS)} are missing, at least one parameter must be provided"})
    stamp = now()
    if "title" in params:
        if not str(params["title"]).strip():
            raise ApiError(400, {"message": {"title": ["can't be blank"]}})
        issue["title"] = str(params["title"])
    if "description" in params:
        issue["description"] = str(params["description"] or "")
    if "labels" in params:
        issue["labels"] = labels_of(params["labels"])
    issue["labels"] = sorted(
        (set(issue["labels"]) | set(labels_of(params.get("add_labels")))) - set(labels_of(params.get("remove_labels")))
    )
    state_event(issue, params, stamp)
    issue["closed"] = issue["state"] == "closed"
    issue["updated_at"] = project["last_activity_at"] = stamp
    return 200, issue_json(forge, project, issue, base), {}
