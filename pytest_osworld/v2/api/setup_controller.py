"""``SetupController``: what a task's ``setup()`` drives, over the project's v1 setup steps.

Each method builds one v1 step and runs it with :func:`pytest_osworld.setup.steps.run_setup`, so a
V2 task's setup is recorded, redacted and masked exactly as a v1 task's ``config``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from pydantic import TypeAdapter, ValidationError

from pytest_osworld.sandbox.base import API_PORT, DEVTOOLS_PORT, VLC_PORT
from pytest_osworld.setup.context import StepRecord, TaskContext
from pytest_osworld.setup.errors import SetupError
from pytest_osworld.setup.placeholders import redact, substitute
from pytest_osworld.setup.steps import run_setup
from pytest_osworld.tasks.model import SetupStep
from pytest_osworld.v2.api.website import (
    COOKIE_FILE,
    StatePayload,
    prepare_stateful_website_urls,
)

_STEP: TypeAdapter[Any] = TypeAdapter(SetupStep)
_PHASE = "setup()"


def _port(url: str) -> int:
    return urlsplit(url).port or 80


def _host(url: str) -> str:
    return urlsplit(url).hostname or "127.0.0.1"


# Step types of V2's setup controller that v1's steps do not have -> the method that runs them.
_OWN_STEPS = {"chrome_open_tabs_with_state": "_chrome_open_tabs_with_state_setup", "proxy": "_proxy_setup"}


class SetupController:
    """Upstream's setup controller for one task's sandbox (``vm_ip``/ports as this process reaches them)."""

    def __init__(self, context: TaskContext) -> None:
        self.context = context
        api = context.url(API_PORT)
        self.vm_ip = _host(api)
        self.server_port = _port(api)
        self.chromium_port = _port(context.url(DEVTOOLS_PORT))
        self.vlc_port = _port(context.url(VLC_PORT))
        self.cache_dir = str(context.cache_dir)
        self.client_password = context.settings.sandbox.client_password
        self.screen_width = context.settings.sandbox.screen_width
        self.screen_height = context.settings.sandbox.screen_height
        self.http_server = f"http://{self.vm_ip}:{self.server_port}"

    # --- v1 steps

    def _run(self, step_type: str, parameters: Mapping[str, Any]) -> None:
        self._run_step({"type": step_type, "parameters": dict(parameters)})

    def _run_step(self, raw: Mapping[str, Any]) -> None:
        step_type = str(raw.get("type"))
        try:
            step = _STEP.validate_python(dict(raw))
        except ValidationError as exc:
            raise SetupError(
                len(self.context.steps), step_type, f"bad parameters: {exc.errors()[0]['msg']}", phase=_PHASE
            ) from None
        run_setup(self.context, [step], phase=_PHASE)

    def setup(self, config: Sequence[Mapping[str, Any]], use_proxy: bool = False) -> bool:
        """Run v1 setup steps (``{"type", "parameters"}``), as upstream's ``setup(config, use_proxy)``.

        A step keeps its other keys: ``on_nonzero`` (a project extension) works as in a v1 task."""
        for raw in config:
            parameters = raw.get("parameters") or {}
            own = _OWN_STEPS.get(str(raw.get("type")))
            if own is not None:  # V2's step types beyond v1's, dispatched as upstream does to _<type>_setup
                getattr(self, own)(**parameters)
                continue
            self._run_step({**raw, "parameters": parameters})
        return True

    def download(self, files: Sequence[Mapping[str, Any]]) -> None:
        self._run("download", {"files": list(files)})

    def launch(self, command: str | list[str], shell: bool = False) -> None:
        self._run("launch", {"command": command, "shell": shell})

    def execute(
        self,
        command: str | list[str],
        stdout: str = "",
        stderr: str = "",
        shell: bool = False,
        until: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        check: bool = False,
    ) -> dict[str, Any]:
        """Run a command in the guest (placeholders filled); ``{status, output, error, returncode}``.

        ``check``: a non-zero exit raises (a setup failure). ``timeout`` is the guest's own limit (120 s)."""
        filled: str | list[str] = (
            substitute(command, self.context.settings)
            if isinstance(command, str)
            else substitute(list(command), self.context.settings)
        )
        started = time.monotonic()
        deadline = started + float(timeout or 120.0)
        while True:
            result = self.context.guest.execute(filled, shell=shell)
            answer = {
                "status": result.status,
                "output": result.output,
                "error": result.error,
                "returncode": result.returncode,
            }
            if not until or _until_met(until, answer) or time.monotonic() >= deadline:
                break
            time.sleep(0.3)
        if stdout:
            self.context.cache_path(stdout).write_text(result.output)
        if stderr:
            self.context.cache_path(stderr).write_text(result.error)
        ok = result.returncode == 0 or not check
        index = len(self.context.steps)
        # Recorded as a setup step is (no command text: it may hold the password).
        self.context.steps.append(
            StepRecord(_PHASE, index, "execute", time.monotonic() - started, ok, f"exit {result.returncode}")
        )
        if not ok:
            shown = command if isinstance(command, str) else " ".join(command)
            shown = redact(shown, self.context.settings.sandbox.client_password)
            raise SetupError(index, "execute", f"{shown[:200]!r} exited {result.returncode}", phase=_PHASE)
        return answer

    def _open_setup(self, path: str) -> None:
        self._run("open", {"path": path})

    def _sleep_setup(self, seconds: float) -> None:
        self._run("sleep", {"seconds": seconds})

    def _launch_setup(self, command: str | list[str], shell: bool = False) -> None:
        self.launch(command, shell)

    def _execute_setup(
        self,
        command: str | list[str],
        stdout: str = "",
        stderr: str = "",
        shell: bool = False,
        until: Mapping[str, Any] | None = None,
    ) -> None:
        params: dict[str, Any] = {"command": command, "shell": shell}
        if stdout:
            params["stdout"] = stdout
        if stderr:
            params["stderr"] = stderr
        if until:
            params["until"] = dict(until)
        self._run("execute", params)

    def _download_setup(self, files: Sequence[Mapping[str, Any]]) -> None:
        self.download(files)

    def _chrome_open_tabs_setup(self, urls_to_open: Sequence[str]) -> None:
        self._run("chrome_open_tabs", {"urls_to_open": list(urls_to_open)})

    def _chrome_open_tabs_with_state_setup(
        self,
        url: str | list[str],
        state: StatePayload | list[StatePayload],
        additional_urls: list[str] | str | None = None,
        cookie_save_name: str = COOKIE_FILE,
    ) -> None:
        """Put each site's state under the task's cookie (``prepare_stateful_website_urls``, the cookies
        saved in the cache folder) and open the sites, then ``additional_urls``, in Chrome.

        The state is recorded as a setup step (``website_state``) before the tabs' own step."""
        started = time.monotonic()
        index = len(self.context.steps)
        try:
            urls = prepare_stateful_website_urls(
                app=url,
                state=state,
                additional_urls=additional_urls,
                cache_dir=self.cache_dir,
                cookie_save_name=cookie_save_name,
            )
        except Exception as exc:
            # The error itself reaches the task (and the record) as it is; the step only says it failed.
            self.context.steps.append(
                StepRecord(_PHASE, index, "website_state", time.monotonic() - started, False, type(exc).__name__)
            )
            raise
        sites = len(url) if isinstance(url, list) else 1
        self.context.steps.append(
            StepRecord(
                _PHASE, index, "website_state", time.monotonic() - started, True, f"{sites} site(s), {cookie_save_name}"
            )
        )
        self._chrome_open_tabs_setup(urls)

    def _proxy_setup(self, client_password: str = "") -> bool:
        """Whether Chrome goes through a proxy: True when the task holds the run's ``proxy`` service
        (the Chrome that setup launches is then already pointed at it), False for direct networking,
        as upstream when no proxy is configured. ``client_password`` is upstream's (it installs a proxy
        in the guest with sudo); nothing is installed here, so it is unused."""
        proxy = self.context.services.get("proxy")
        note = (
            f"through the proxy service ({proxy.guest_url()})" if proxy is not None else "no proxy: direct networking"
        )
        self.context.steps.append(StepRecord(_PHASE, len(self.context.steps), "proxy", 0.0, True, note))
        return proxy is not None

    def _chrome_close_tabs_setup(self, urls_to_close: Sequence[str]) -> None:
        self._run("chrome_close_tabs", {"urls_to_close": list(urls_to_close)})

    def _activate_window_setup(self, window_name: str, strict: bool = False, by_class: bool = False) -> None:
        self._run("activate_window", {"window_name": window_name, "strict": strict, "by_class": by_class})

    def _close_window_setup(self, window_name: str, strict: bool = False, by_class: bool = False) -> None:
        self._run("close_window", {"window_name": window_name, "strict": strict, "by_class": by_class})

    def _upload_file_setup(self, files: Sequence[Mapping[str, Any]]) -> None:
        self._run("upload_file", {"files": list(files)})

    def _update_browse_history_setup(self, history: Sequence[Mapping[str, Any]]) -> None:
        self._run("update_browse_history", {"history": list(history)})

    def _execute_with_verification_setup(
        self,
        command: str | list[str],
        verification: Mapping[str, Any] | None = None,
        max_wait_time: float = 10,
        check_interval: float = 1,
        shell: bool = False,
    ) -> None:
        params: dict[str, Any] = {
            "command": command,
            "shell": shell,
            "max_wait_time": max_wait_time,
            "check_interval": check_interval,
        }
        if verification is not None:
            params["verification"] = dict(verification)
        self._run("execute_with_verification", params)


def _until_met(until: Mapping[str, Any], answer: Mapping[str, Any]) -> bool:
    """Upstream's ``until``: stop once the output holds ``stdout`` / the error ``stderr`` / the exit ``returncode``."""
    if "returncode" in until and answer["returncode"] == until["returncode"]:
        return True
    if "stdout" in until and str(until["stdout"]) in str(answer["output"]):
        return True
    return "stderr" in until and str(until["stderr"]) in str(answer["error"])
