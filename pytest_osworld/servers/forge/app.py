"""The forge's HTTP side: ``GET /health`` (no token), ``POST /api/reset`` and the REST API under
``/api/v4`` (with the token), git's smart protocol under ``/<namespace>/<project>.git``; GitLab's
pagination ``Link`` header on lists."""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

from ..base import Handler
from . import git_http, routes
from .auth import api_token, token_ok
from .params import ApiError, Params
from .seed import seed
from .state import Forge


class ForgeHandler(Handler[Forge]):
    protocol_version = "HTTP/1.1"  # keep-alive for git's several requests, and 100-continue
    log_name = "forge"

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else b"" if status == 204 else json.dumps(body).encode()
        given = dict(headers or {})
        content_type = given.pop("Content-Type", "application/json")
        self.send(status, data, content_type, given)

    def _base(self) -> str:
        return "http://" + (self.headers.get("Host") or "localhost")

    def _params(self, body: bytes) -> Params:
        query = urlsplit(self.path).query
        params: Params = {k.removesuffix("[]"): v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
        kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if not body:
            return params
        if kind == "application/json":
            try:
                data = json.loads(body)
            except ValueError:
                raise ApiError(400, {"error": "the request body is not valid JSON"}) from None
            if not isinstance(data, dict):
                raise ApiError(400, {"error": "the request body must be a JSON object"})
            return {**params, **data}
        if kind in ("application/x-www-form-urlencoded", ""):
            form = parse_qs(body.decode(errors="replace"), keep_blank_values=True)
            return {**params, **{k.removesuffix("[]"): v[-1] for k, v in form.items()}}
        raise ApiError(415, {"error": f"unsupported content type {kind}: send JSON or a form"})

    def _handle(self) -> None:
        body = self.read_body() or b""
        parts = urlsplit(self.path)
        try:
            if parts.path == "/health" and self.command == "GET":
                return self._send(200, {"status": "ok"})
            if parts.path.startswith("/api/"):
                return self._api(parts.path, body)
            found = git_http.GIT_PATH.match(parts.path)
            if found and self.command in ("GET", "POST"):
                client = self.client_address[0]
                reply = git_http.serve(self.app, found, self.command, parts.query, self.headers, client, body)
                return self._send(*reply)
            raise ApiError(404, {"error": "404 Not Found"})
        except ApiError as exc:
            self._send(exc.status, exc.body)
        except Exception as exc:  # noqa: BLE001 - one failed request must not stop the forge
            sys.stderr.write(f"forge: {self.command} {parts.path} failed: {exc}\n")
            self.close_connection = True
            self._send(500, {"message": "500 Internal Server Error"})

    do_GET = do_POST = do_PUT = do_DELETE = _handle

    def _api(self, path: str, body: bytes) -> None:
        if not token_ok(self.app.config.token, api_token(self.headers)):
            raise ApiError(401, {"message": "401 Unauthorized"})
        if path == "/api/reset" and self.command == "POST":
            seed(self.app)
            return self._send(200, {"reset": True})
        params = self._params(body)
        route = routes.find(self.command, path)
        if route is None:
            raise ApiError(404, {"error": "404 Not Found"})
        handler, groups = route
        with self.app.lock:
            status, answer, headers = handler(self.app, self._base(), params, *groups)
        return self._send(status, answer, self._links(headers))

    def _links(self, headers: dict[str, str]) -> dict[str, str]:
        """A page's ``Link`` header, as GitLab's (python-gitlab follows its ``next``)."""
        if "X-Total-Pages" not in headers:
            return headers
        parts = urlsplit(self.path)
        kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ("page", "per_page")]

        def at(number: str) -> str:
            query = urlencode([*kept, ("page", number), ("per_page", headers["X-Per-Page"])])
            return f"{self._base()}{parts.path}?{query}"

        wanted = [
            ("prev", headers["X-Prev-Page"]),
            ("next", headers["X-Next-Page"]),
            ("first", "1"),
            ("last", headers["X-Total-Pages"]),
        ]
        links = [f'<{at(number)}>; rel="{rel}"' for rel, number in wanted if number]
        return {**headers, "Link": ", ".join(links)}
