"""The ``website`` service's HTTP side: who the visitor is (the cookie ``user_id``, or ``?cookie=ID``,
which also sets the cookie so later clicks keep it; a visitor with neither gets an anonymous id), and
which part answers: ``/health``, the state protocol (``/api/state``), the JSON API (``/api/...``) or
the pages."""

from __future__ import annotations

import json
import secrets
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from ..base import Handler, HttpError
from ..state import States
from . import api, views
from .pages import BACK, error_html, layout

COOKIE = "user_id"


class WebsiteHandler(Handler[States]):
    server_version = "CornerMarket/1"
    log_name = "website"

    # The visitor of this request, and whether the answer must set the cookie.
    user: str = ""
    set_cookie: bool = False

    def _identify(self, *, assign: bool) -> str | None:
        query = parse_qs(urlsplit(self.path).query)
        if query.get("cookie"):
            self.user, self.set_cookie = query["cookie"][0], True
            return self.user
        for part in (self.headers.get("Cookie") or "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == COOKIE and value:
                self.user, self.set_cookie = unquote(value.strip('"')), False
                return self.user
        if not assign:
            return None
        self.user, self.set_cookie = f"anon-{secrets.token_hex(8)}", True
        return self.user

    def _site_headers(self, location: str | None = None) -> dict[str, str]:
        headers = {"Cache-Control": "no-store"}
        if location is not None:
            headers["Location"] = location
        if self.set_cookie and self.user:
            # Quoted so any id fits a cookie; read back unquoted.
            headers["Set-Cookie"] = f"{COOKIE}={quote(self.user, safe='')}; Path=/; SameSite=Lax"
        return headers

    def answer_json(self, status: int, body: Any) -> None:
        self.send_json(status, body, self._site_headers())

    def answer_page(self, status: int, page: str) -> None:
        self.send(status, page.encode(), "text/html; charset=utf-8", self._site_headers())

    def redirect(self, location: str) -> None:
        self.send(303, b"", "text/plain", self._site_headers(location))

    def json_body(self) -> Any:
        raw = self.read_body()
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            raise HttpError(400, "the body is not JSON") from None

    def form(self) -> dict[str, str]:
        fields = parse_qs((self.read_body() or b"").decode("utf-8", "replace"), keep_blank_values=True)
        return {key: values[0] for key, values in fields.items()}

    def _route(self, method: str) -> None:
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/") or "/"
        if path == "/health" and method == "GET":
            return self.answer_json(200, {"status": "ok"})
        if path == "/api/state":
            user = self._identify(assign=False)
            if user is None:
                raise HttpError(400, "name the visitor: /api/state?cookie=ID or the cookie user_id=ID")
            self.set_cookie = False  # the control plane never changes a browser's visitor
            return self.answer_json(200, self.app.answer(method, user, self.json_body))
        user = self._identify(assign=True) or ""
        if path.startswith("/api/"):
            return self.answer_json(*api.answer(self.app, user, method, path.removeprefix("/api"), self.json_body))
        if method == "GET":
            query = {key: values[0] for key, values in parse_qs(parts.query).items()}
            return self.answer_page(200, views.page(self.app, user, path, query))
        if method != "POST":
            raise HttpError(405, f"{method} is not allowed on {path}")
        done = views.submit(self.app, user, path, self.form())
        if isinstance(done, str):
            return self.redirect(done)
        return self.answer_page(*done)

    def dispatch(self, method: str) -> None:
        api_call = urlsplit(self.path).path.startswith("/api/")
        self.user, self.set_cookie = "", False
        try:
            self._route(method)
        except HttpError as exc:
            if api_call:
                self.answer_json(exc.status, {"error": exc.message})
            else:
                with self.app.lock:
                    data = api.data_of(self.app.of(self.user)) if self.user else {}
                    page = layout("Sorry", error_html(exc.message) + BACK, data)
                self.answer_page(exc.status, page)
        except Exception as exc:  # noqa: BLE001 - a state put in by hand may be odd: answer, never drop the connection
            self.log_message("error: %r", exc)
            self.answer_json(500, {"error": f"{type(exc).__name__}: {exc}"})

    def do_GET(self) -> None:
        self.dispatch("GET")

    def do_POST(self) -> None:
        self.dispatch("POST")

    def do_PUT(self) -> None:
        self.dispatch("PUT")

    def do_PATCH(self) -> None:
        self.dispatch("PATCH")

    def do_DELETE(self) -> None:
        self.dispatch("DELETE")
