"""Every setup step type against real desktop containers."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from PIL import Image

from pytest_osworld.evaluation.getters import get_getter
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.setup.errors import SetupError
from pytest_osworld.setup.steps import HANDLERS, SUPPORTED_STEP_TYPES, run_setup
from pytest_osworld.tasks.model import STEP_TYPES
from tests.setup_and_evaluation.steps import steps
from tests.support.desktop import Desktop, file_server
from tests.support.desktop_fixtures import make_context
from tests.support.polling import wait_for


def windows(ctx: TaskContext) -> list[str]:
    return ctx.guest.execute(["wmctrl", "-l"]).output.splitlines()


def test_every_step_type_has_a_handler() -> None:
    assert set(HANDLERS) == set(STEP_TYPES)
    assert set(STEP_TYPES) - {"googledrive", "login"} == SUPPORTED_STEP_TYPES


@pytest.mark.docker
def test_download_goes_through_the_cache_into_the_guest(shared_desktop: Desktop, tmp_path: Path) -> None:
    www = tmp_path / "www"
    www.mkdir()
    payload = bytes(range(256)) * 4096
    (www / "sheet.bin").write_bytes(payload)
    ctx = make_context(shared_desktop, tmp_path)
    with file_server(www, "127.0.0.1") as server:
        url = server.url("sheet.bin")
        records = run_setup(
            ctx,
            steps(
                {
                    "type": "download",
                    "parameters": {
                        "files": [
                            {"url": url, "path": "/home/user/setup-test/sheet.bin"},
                            {"url": url, "path": "~/setup-test/copy.bin"},
                        ]
                    },
                },
            ),
        )
        assert server.hits == ["/sheet.bin"]  # one download for two uses
    assert records[0].ok and records[0].type == "download"
    assert ctx.guest.file("~/setup-test/sheet.bin") == payload
    assert ctx.guest.file("~/setup-test/copy.bin") == payload
    assert ctx.assets.contains(url)


@pytest.mark.docker
def test_offline_download_miss_is_a_setup_error_naming_the_fix(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path, offline=True)
    with pytest.raises(SetupError) as info:
        run_setup(
            ctx,
            steps(
                {
                    "type": "download",
                    "parameters": {"files": [{"url": "https://example.invalid/x.xlsx", "path": "~/x.xlsx"}]},
                }
            ),
        )
    assert info.value.step_index == 0 and info.value.step_type == "download"
    assert "https://example.invalid/x.xlsx" in str(info.value) and "assets prefetch" in str(info.value)
    assert not info.value.score_zero


@pytest.mark.docker
def test_guest_downloads_from_a_host_server_through_the_bridge(shared_desktop: Desktop, tmp_path: Path) -> None:
    from tests.support.desktop import bridge_gateway

    www = tmp_path / "www"
    www.mkdir()
    (www / "f.txt").write_text("from the host\n")
    gateway = bridge_gateway(shared_desktop)
    guest = shared_desktop.client()
    with file_server(www, gateway) as server:
        guest.download_file(server.url("f.txt"), "~/setup-test/guest-fetched.txt")
    assert guest.file("~/setup-test/guest-fetched.txt") == b"from the host\n"


@pytest.mark.docker
def test_upload_file_step(shared_desktop: Desktop, tmp_path: Path) -> None:
    local = tmp_path / "local.txt"
    local.write_text("uploaded\n")
    ctx = make_context(shared_desktop, tmp_path)
    run_setup(
        ctx,
        steps(
            {
                "type": "upload_file",
                "parameters": {"files": [{"local_path": str(local), "path": "~/setup-test/up.txt"}]},
            }
        ),
    )
    assert ctx.guest.file("~/setup-test/up.txt") == b"uploaded\n"
    with pytest.raises(SetupError, match="does not exist"):
        run_setup(
            ctx,
            steps(
                {
                    "type": "upload_file",
                    "parameters": {"files": [{"local_path": str(tmp_path / "nope"), "path": "~/x"}]},
                }
            ),
        )


@pytest.mark.docker
def test_execute_placeholders_stdout_and_command_alias(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path, screen_width=1280, screen_height=720)
    run_setup(
        ctx,
        steps(
            {
                "type": "execute",
                "parameters": {
                    "command": [
                        "bash",
                        "-c",
                        "echo {SCREEN_WIDTH}x{SCREEN_HEIGHT} {SCREEN_WIDTH_HALF} {SCREEN_HEIGHT_HALF}; echo e >&2",
                    ],
                    "stdout": "dims.txt",
                    "stderr": "err.txt",
                },
            },
            {
                "type": "command",
                "parameters": {
                    "command": "echo {CLIENT_PASSWORD} | sudo -S -k true && echo root-ok",
                    "shell": True,
                    "stdout": "sudo.txt",
                },
            },
        ),
    )
    assert (ctx.cache_dir / "dims.txt").read_text() == "1280x720 640 360\n"
    assert (ctx.cache_dir / "err.txt").read_text() == "e\n"
    assert (ctx.cache_dir / "sudo.txt").read_text().strip().endswith("root-ok")
    # cache_file reads what the step saved
    assert (
        Path(get_getter("cache_file")(ctx, {"type": "cache_file", "path": "dims.txt"})).read_text()
        == "1280x720 640 360\n"
    )


@pytest.mark.docker
def test_execute_until_polls_as_upstream(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    counter = f"/tmp/until-{time.monotonic_ns()}"
    script = f"n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; echo run-$n"
    records = run_setup(
        ctx, steps({"type": "execute", "parameters": {"command": ["bash", "-c", script], "until": {"stdout": "run-3"}}})
    )
    assert "after 3 runs" in records[0].note
    assert ctx.guest.file(counter) == b"3\n"
    records = run_setup(
        ctx, steps({"type": "execute", "parameters": {"command": ["bash", "-c", "exit 7"], "until": {"returncode": 7}}})
    )
    assert records[0].note == "exit 7"


@pytest.mark.docker
def test_execute_until_never_met_is_bounded(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path, until_timeout=2.0)
    started = time.monotonic()
    with pytest.raises(SetupError, match="'until'") as info:
        run_setup(
            ctx, steps({"type": "execute", "parameters": {"command": ["echo", "no"], "until": {"stdout": "yes"}}})
        )
    assert time.monotonic() - started < 20
    assert "until_timeout" in str(info.value)


@pytest.mark.docker
def test_failing_steps_mask_or_score_zero_and_never_show_the_password(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path, client_password="s3cret-pw")
    plain = {"command": ["bash", "-c", "echo '{CLIENT_PASSWORD}' >&2; exit 4"]}
    # Upstream ignores an execute step's exit status ...
    assert run_setup(ctx, steps({"type": "execute", "parameters": plain}))[0].ok
    # ... unless the step says otherwise.
    with pytest.raises(SetupError) as masked:
        run_setup(
            ctx,
            steps(
                {"type": "sleep", "parameters": {"seconds": 0}},
                {"type": "execute", "parameters": plain, "on_nonzero": "mask"},
            ),
            phase="postconfig",
        )
    assert (masked.value.step_index, masked.value.phase, masked.value.score_zero) == (1, "postconfig", False)
    assert "status 4" in str(masked.value)
    assert "s3cret-pw" not in str(masked.value) and "***" in str(masked.value)
    with pytest.raises(SetupError) as zero:
        run_setup(ctx, steps({"type": "execute", "parameters": plain, "on_nonzero": "score_zero"}))
    assert zero.value.score_zero
    assert all("s3cret-pw" not in record.note for record in ctx.steps)
    # A step the guest refuses fails the same way, and carries the guest's reason.
    with pytest.raises(SetupError, match="no such program") as refused:
        run_setup(
            ctx, steps({"type": "launch", "parameters": {"command": ["no-such-app-x"]}, "on_nonzero": "score_zero"})
        )
    assert refused.value.score_zero and refused.value.step_type == "launch"


@pytest.mark.docker
def test_sleep_step(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    started = time.monotonic()
    run_setup(ctx, steps({"type": "sleep", "parameters": {"seconds": 0.5}}))
    assert time.monotonic() - started >= 0.5


@pytest.mark.docker
def test_launch_activate_and_close_windows(fresh_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    run_setup(
        ctx,
        steps(
            {"type": "launch", "parameters": {"command": ["xmessage", "-title", "alpha-win", "alpha"]}},
            {"type": "launch", "parameters": {"command": "xmessage -title beta-win beta", "shell": True}},
        ),
    )
    wait_for(lambda: sum("-win" in w for w in windows(ctx)) == 2, "two windows", timeout=30.0)

    def active() -> str:
        return ctx.guest.execute(["xdotool", "getactivewindow", "getwindowname"]).output.strip()

    run_setup(ctx, steps({"type": "activate_window", "parameters": {"window_name": "alpha-win"}}))
    wait_for(lambda: active() == "alpha-win", "alpha active", timeout=30.0)
    run_setup(ctx, steps({"type": "activate_window", "parameters": {"window_name": "beta-win", "strict": True}}))
    wait_for(lambda: active() == "beta-win", "beta active", timeout=30.0)
    records = run_setup(ctx, steps({"type": "activate_window", "parameters": {"window_name": "gamma-win"}}))
    assert records[0].ok  # no such window: ignored, as upstream's guest does
    run_setup(ctx, steps({"type": "close_window", "parameters": {"window_name": "alpha-win"}}))
    wait_for(lambda: not any("alpha-win" in w for w in windows(ctx)), "alpha closed", timeout=30.0)
    assert any("beta-win" in w for w in windows(ctx))
    run_setup(ctx, steps({"type": "close_window", "parameters": {"window_name": "Xmessage", "by_class": True}}))
    wait_for(lambda: not any("-win" in w for w in windows(ctx)), "all closed", timeout=30.0)


@pytest.mark.docker
def test_open_waits_for_the_window(fresh_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    ctx.guest.upload("~/Documents/notes-open.txt", b"opened by the open step\n")
    run_setup(ctx, steps({"type": "open", "parameters": {"path": "~/Documents/notes-open.txt"}}))
    assert any("notes-open" in w for w in windows(ctx))  # present when the step returns
    with pytest.raises(SetupError, match="cannot open"):
        run_setup(ctx, steps({"type": "open", "parameters": {"path": "~/Documents/absent.txt"}}))


@pytest.mark.docker
def test_change_wallpaper_then_vm_wallpaper(fresh_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(buffer, format="PNG")
    ctx.guest.upload("~/Pictures/red.png", buffer.getvalue())
    run_setup(ctx, steps({"type": "change_wallpaper", "parameters": {"path": "~/Pictures/red.png"}}))
    local = get_getter("vm_wallpaper")(ctx, {"type": "vm_wallpaper", "dest": "wall.png"})
    assert Path(local).read_bytes() == buffer.getvalue()
    with pytest.raises(SetupError):
        run_setup(ctx, steps({"type": "change_wallpaper", "parameters": {"path": "~/Pictures/none.png"}}))


@pytest.mark.docker
def test_execute_with_verification(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    marker = f"/tmp/verified-{time.monotonic_ns()}"
    records = run_setup(
        ctx,
        steps(
            {
                "type": "execute_with_verification",
                "parameters": {
                    "command": ["bash", "-c", f"(sleep 1; touch {marker}) >/dev/null 2>&1 &"],
                    "verification": {"command_success": f"test -f {marker}"},
                    "max_wait_time": 20,
                    "check_interval": 0.2,
                },
            }
        ),
    )
    assert "verified" in records[0].note
    with pytest.raises(SetupError, match="did not pass"):
        run_setup(
            ctx,
            steps(
                {
                    "type": "execute_with_verification",
                    "parameters": {
                        "command": ["true"],
                        "verification": {"window_exists": "no-such-window"},
                        "max_wait_time": 1,
                        "check_interval": 0.2,
                    },
                }
            ),
        )


@pytest.mark.docker
def test_credential_steps_refuse(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    with pytest.raises(SetupError, match="Google credentials"):
        run_setup(ctx, steps({"type": "googledrive", "parameters": {"settings_file": "x"}}))
