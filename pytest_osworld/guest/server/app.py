"""The HTTP routes of OSWorld's guest API (all but /run_python and /run_bash_script).

Answer shapes and status codes follow upstream's guest server where clients rely on them:
``/execute`` answers ``{status, output, error, returncode}``; ``/file`` answers the bytes or a
404 JSON; setup endpoints answer short text. A bad request gets a 4xx JSON naming the problem,
and nothing ever answers with a traceback.
"""

from __future__ import annotations

import base64
import logging
import mimetypes
import os
import platform
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from flask import Flask, Response, jsonify, request, send_file
from werkzeug.exceptions import HTTPException

from . import accessibility, commands, display, files, supervision, wallpaper, windows
from .fields import (
    ApiError,
    bool_field,
    error_response,
    form_field,
    json_object,
    number_field,
    text_field,
)
from .recording import Recorder

EXECUTE_TIMEOUT_ENV = "GUEST_EXECUTE_TIMEOUT_S"
DEFAULT_EXECUTE_TIMEOUT_S = 120.0

log = logging.getLogger("guest_server")

_View = TypeVar("_View", bound=Callable[..., Any])


class _App(Protocol):
    """What this module uses of :class:`flask.Flask`.

    Flask is installed only in the desktop image, so on the host mypy sees it as ``Any`` and its
    decorators would erase the views' types. Flask's decorators register a view and return it as is.
    """

    config: dict[str, Any]

    def errorhandler(self, code_or_exception: type[Exception]) -> Callable[[_View], _View]: ...

    def get(self, rule: str) -> Callable[[_View], _View]: ...

    def post(self, rule: str) -> Callable[[_View], _View]: ...

    def route(self, rule: str, *, methods: list[str]) -> Callable[[_View], _View]: ...


def execute_timeout() -> float:
    raw = os.environ.get(EXECUTE_TIMEOUT_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_EXECUTE_TIMEOUT_S
    return value if value > 0 else DEFAULT_EXECUTE_TIMEOUT_S


def _int_arg(name: str) -> int:
    """A whole-number query argument (``?name=...``)."""
    raw = request.args.get(name)
    if raw is None:
        raise ApiError(400, f"missing query argument {name!r}")
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, f"query argument {name!r} must be a whole number, got {raw[:40]!r}") from None


def create_app() -> Flask:
    app: _App = Flask("guest_server")
    app.config["MAX_CONTENT_LENGTH"] = None  # uploads of large task files are normal
    recorder = Recorder()

    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError) -> tuple[Response, int]:
        return error_response(exc.status, exc.message)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> tuple[Response, int]:
        return error_response(exc.code or 500, f"{exc.name}: {exc.description}")

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> tuple[Response, int]:
        log.exception("unexpected error on %s %s", request.method, request.path)
        return error_response(500, f"{request.path} failed: {type(exc).__name__}: {exc}"[:500])

    # Observation

    @app.get("/screenshot")
    def screenshot() -> Response:
        return Response(display.screenshot_png(), mimetype="image/png")

    @app.get("/screenshot/scaled")
    def screenshot_scaled() -> Response:
        """The screen and, from the same grab, the screen at ``?width=&height=`` (both PNG, base64)."""
        size = (_int_arg("width"), _int_arg("height"))
        full, scaled = display.screenshots_png(size)
        return jsonify({"screenshot": base64.b64encode(full).decode(), "scaled": base64.b64encode(scaled).decode()})

    @app.get("/accessibility")
    def accessibility_tree() -> Response:
        return jsonify({"AT": accessibility.tree_xml()})

    @app.get("/terminal")
    def terminal() -> Response:
        return jsonify({"output": accessibility.terminal_output(), "status": "success"})

    @app.get("/platform")
    def platform_name() -> str:
        return platform.system()

    @app.get("/cursor_position")
    def cursor_position() -> Response:
        x, y = display.pointer_position()
        return jsonify([x, y])

    @app.route("/screen_size", methods=["GET", "POST"])
    def screen_size() -> Response:
        width, height = display.screen_size()
        return jsonify({"width": width, "height": height})

    @app.post("/window_size")
    def window_size() -> Response:
        class_name = form_field(request, "app_class_name")
        size = display.window_size(class_name)
        if size is None:
            raise ApiError(404, f"no window of class {class_name!r}")
        return jsonify({"width": size[0], "height": size[1]})

    @app.post("/desktop_path")
    def desktop_path() -> Response:
        return jsonify({"desktop_path": str(files.desktop_path())})

    @app.post("/wallpaper")
    def wallpaper_file() -> Response:
        path = wallpaper.current()
        if path is None:
            raise ApiError(404, "no wallpaper is set")
        if not path.is_file():
            raise ApiError(404, f"the wallpaper file does not exist: {path}")
        return send_file(path, mimetype=mimetypes.guess_type(path.name)[0] or "image/png")

    @app.post("/list_directory")
    def list_directory() -> Response:
        body = json_object(request)
        return jsonify({"directory_tree": files.directory_tree(text_field(body, "path"))})

    @app.post("/file")
    def get_file() -> Response:
        path = files.existing_file(form_field(request, "file_path"))
        return send_file(path, as_attachment=True, download_name=path.name)

    # Actions and setup

    @app.post("/execute")
    @app.post("/setup/execute")
    def execute() -> Response | tuple[Response, int]:
        body = json_object(request)
        command = commands.parse_command(body)
        # A caller may set its own limit (an agent's action); OSWorld's clients send none.
        timeout = number_field(body, "timeout_seconds", execute_timeout())
        try:
            result = commands.run(command, timeout)
        except commands.CommandTimeout as exc:
            message = f"{exc} ({command.describe()[:200]})"
            return jsonify(
                {
                    "status": "error",
                    "message": message,
                    "output": exc.output,
                    "error": exc.error or message,
                    "returncode": None,
                    "timed_out": True,
                    "timeout_seconds": timeout,
                }
            ), 500
        return jsonify(
            {
                "status": "success",
                "output": result.output,
                "error": result.error,
                "returncode": result.returncode,
            }
        )

    @app.post("/setup/launch")
    def launch() -> str:
        command = commands.parse_command(json_object(request))
        commands.launch(command)
        return f"{command.describe()} launched successfully"

    @app.post("/setup/open_file")
    def open_file() -> str:
        body = json_object(request)
        path = text_field(body, "path")
        window_name = text_field(body, "window_name", required=False)
        timeout = number_field(body, "timeout_seconds", files.OPEN_FILE_TIMEOUT_S)
        files.open_with_default_app(path, window_name, timeout)
        return "File opened and window activated successfully"

    @app.post("/setup/upload")
    def upload() -> str:
        file_path = form_field(request, "file_path")
        if "file_data" not in request.files:
            raise ApiError(400, "multipart file 'file_data' is required")
        size = files.save_upload(file_path, request.files["file_data"].stream)
        return f"File Uploaded: {size} bytes"

    @app.post("/setup/download_file")
    def download_file() -> str:
        body = json_object(request)
        size = files.download(text_field(body, "url"), text_field(body, "path"))
        return f"File downloaded successfully: {size} bytes"

    @app.post("/setup/change_wallpaper")
    def change_wallpaper() -> str:
        body = json_object(request)
        wallpaper.change(files.guest_path(text_field(body, "path")))
        return "Wallpaper changed successfully"

    @app.post("/setup/activate_window")
    def activate_window() -> str:
        return _on_window(windows.activate, "Window activated successfully", "activated")

    @app.post("/setup/close_window")
    def close_window() -> str:
        return _on_window(windows.close, "Window closed successfully.", "closed")

    @app.post("/start_recording")
    def start_recording() -> Response:
        recorder.start()
        return jsonify({"status": "success", "message": "Started recording successfully."})

    @app.post("/end_recording")
    def end_recording() -> Response:
        path = recorder.stop()
        return send_file(path, mimetype="video/mp4", as_attachment=True, download_name=path.name)

    # The project's own, beyond OSWorld's API: which supervised processes restarted (docs/desktop-image.md).

    @app.get("/pytest-osworld/restarts")
    def supervised_restarts() -> Response:
        return jsonify(supervision.report())

    return app


def _on_window(act: Callable[..., bool], done: str, verb: str) -> str:
    """``act`` on the window the request names (``window_name``, ``strict``, ``by_class``).

    As upstream: 200 whether or not a window matched; the text tells which.
    """
    body = json_object(request)
    name = text_field(body, "window_name")
    strict = bool_field(body, "strict")
    by_class = bool_field(body, "by_class")
    if act(name, strict=strict, by_class=by_class):
        return done
    return f"No window matches {name!r}; nothing was {verb}"
