"""What every REST resource of the forge uses: GitLab's error answers, the request's parameters,
pages of a list, and the filters of issues and merge requests."""

from __future__ import annotations

from typing import Any

Params = dict[str, Any]
Answer = tuple[int, Any, dict[str, str]]  # status, body (JSON, or bytes as they are), headers


class ApiError(Exception):
    """An answer other than success: its status and GitLab's JSON body."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


def not_found(what: str) -> ApiError:
    return ApiError(404, {"message": f"404 {what} Not Found"})


def flag(params: Params, name: str) -> bool:
    value = params.get(name)
    return value is True or str(value).lower() in ("true", "1", "yes")


def text(params: Params, name: str) -> str | None:
    value = params.get(name)
    return None if value is None else str(value)


def missing(params: Params, *names: str) -> None:
    absent = [n for n in names if params.get(n) in (None, "")]
    if absent:
        raise ApiError(400, {"error": ", ".join(f"{n} is missing" for n in absent)})


def labels_of(value: Any) -> list[str]:
    items = value if isinstance(value, list) else str(value or "").split(",")
    return sorted({str(item).strip() for item in items if str(item).strip()})


def page(items: list[Any], params: Params) -> Answer:
    """One page of ``items``, with GitLab's pagination headers."""
    try:
        number = max(1, int(params.get("page") or 1))
        size = min(100, max(1, int(params.get("per_page") or 20)))
    except ValueError:
        raise ApiError(400, {"error": "page is invalid, per_page is invalid"}) from None
    pages = max(1, -(-len(items) // size))
    headers = {
        "X-Page": str(number),
        "X-Per-Page": str(size),
        "X-Total": str(len(items)),
        "X-Total-Pages": str(pages),
        "X-Next-Page": str(number + 1) if number < pages else "",
        "X-Prev-Page": str(number - 1) if number > 1 else "",
    }
    return 200, items[(number - 1) * size : number * size], headers


def in_state(item: dict[str, Any], params: Params, states: tuple[str, ...]) -> bool:
    state = text(params, "state") or "all"
    if state not in (*states, "all"):
        raise ApiError(400, {"error": "state does not have a valid value"})
    return state == "all" or item["state"] == state


def matches(item: dict[str, Any], params: Params) -> bool:
    search = (text(params, "search") or "").lower()
    if search and search not in item["title"].lower() and search not in (item.get("description") or "").lower():
        return False
    wanted = labels_of(params.get("labels"))
    return all(label in item["labels"] for label in wanted)


def state_event(item: dict[str, Any], params: Params, stamp: str) -> None:
    """``state_event=close|reopen`` of an issue or a merge request."""
    event = text(params, "state_event")
    if event is None:
        return
    if event not in ("close", "reopen"):
        raise ApiError(400, {"error": "state_event does not have a valid value"})
    if event == "close" and item["state"] == "opened":
        item["state"], item["closed_at"] = "closed", stamp
    elif event == "reopen" and item["state"] == "closed":
        item["state"], item["closed_at"] = "opened", None
