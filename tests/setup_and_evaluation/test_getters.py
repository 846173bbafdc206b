"""Getters against real desktop containers, with upstream's output shapes."""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.evaluation.getters import GETTERS, get_getter, getter_unavailable_reason
from pytest_osworld.setup.context import TaskContext
from tests.support.desktop import Desktop
from tests.support.desktop_fixtures import make_context
from tests.support.polling import wait_for

TEST_SMALL_GETTERS = {
    "vm_file",
    "cloud_file",
    "rule",
    "vm_command_line",
    "vscode_config",
    "default_search_engine",
    "cookie_data",
    "shortcuts_on_desktop",
    "active_tab_info",
    "find_unpacked_extension_path",
    "content_from_vm_file",
    "info_from_website",
    "cache_file",
    "accessibility_tree",
    "vlc_playing_info",
}


def call(ctx: TaskContext, type_: str, **config: Any) -> Any:
    return get_getter(type_)(ctx, {"type": type_, **config})


def test_registry_covers_test_small_and_the_listed_getters() -> None:
    listed = {
        "vm_file",
        "cloud_file",
        "cache_file",
        "content_from_vm_file",
        "rule",
        "rule_relativeTime",
        "vm_command_line",
        "vm_terminal_output",
        "vm_command_error",
        "list_directory",
        "vm_screen_size",
        "vm_window_size",
        "vm_wallpaper",
        "accessibility_tree",
        "active_tab_info",
        "open_tabs_info",
        "bookmarks",
        "history",
        "active_tab_url_parse",
        "active_url_from_accessTree",
        "default_search_engine",
    }
    assert listed | TEST_SMALL_GETTERS <= set(GETTERS)
    assert all(getter_unavailable_reason(name) is None for name in GETTERS)


@pytest.mark.docker
def test_vm_file_forms(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    ctx.guest.upload("~/getter-test/a.txt", b"A")
    ctx.guest.upload("~/getter-test/b.txt", b"B")
    single = call(ctx, "vm_file", path="~/getter-test/a.txt", dest="a.txt")
    assert Path(single).read_bytes() == b"A" and Path(single).parent == ctx.cache_dir
    assert call(ctx, "vm_file", path="~/getter-test/none.txt", dest="none.txt") is None
    many = call(
        ctx,
        "vm_file",
        multi=True,
        path=["~/getter-test/a.txt", "~/getter-test/none.txt", "~/getter-test/b.txt"],
        dest=["m-a.txt", "m-none.txt", "m-b.txt"],
        gives=[0, 1, 2],
    )
    assert [Path(p).read_bytes() if p else None for p in many] == [b"A", None, b"B"]
    picked = call(
        ctx,
        "vm_file",
        multi=True,
        path=["~/getter-test/a.txt", "~/getter-test/b.txt"],
        dest=["p-a.txt", "p-b.txt"],
        gives=[1],
    )
    assert Path(picked).read_bytes() == b"B"  # one given file: the path itself, not a list
    stamped = call(ctx, "vm_file", path="~/getter-test/a.txt", dest="s.txt", time_suffix=True, time_format="%Y")
    assert Path(stamped).name == f"s_{datetime.now():%Y}.txt"


@pytest.mark.docker
def test_cloud_file_forms_read_the_asset_cache(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path, offline=True)
    ctx.assets.put_bytes("https://files.example.invalid/e1.txt", b"one")
    ctx.assets.put_bytes("https://files.example.invalid/e2.txt", b"two")
    single = call(ctx, "cloud_file", path="https://files.example.invalid/e1.txt", dest="e1.txt")
    assert Path(single).read_bytes() == b"one"
    both = call(
        ctx,
        "cloud_file",
        multi=True,
        path=["https://files.example.invalid/e1.txt", "https://files.example.invalid/e2.txt"],
        dest=["c1.txt", "c2.txt"],
        gives=[0, 1],
    )
    assert [Path(p).read_bytes() for p in both] == [b"one", b"two"]
    from pytest_osworld.setup.errors import AssetMissing

    with pytest.raises(AssetMissing):
        call(ctx, "cloud_file", path="https://files.example.invalid/absent.txt", dest="x.txt")


@pytest.mark.docker
def test_commands_terminal_and_tree(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    assert call(ctx, "vm_command_line", command=["bash", "-c", "echo out; echo err >&2"]) == "out\n"
    assert call(ctx, "vm_command_error", command="echo out; echo err >&2", shell=True) == "err\n"
    assert call(ctx, "vm_terminal_output") is None
    assert call(ctx, "vm_screen_size") == {"width": 1920, "height": 1080}
    ctx.guest.upload("~/getter-tree/sub/f.txt", b"x")
    assert call(ctx, "list_directory", path="~/getter-tree") == {
        "type": "directory",
        "name": "getter-tree",
        "children": [{"type": "directory", "name": "sub", "children": [{"type": "file", "name": "f.txt"}]}],
    }
    assert call(ctx, "list_directory", path="~/no-such-tree") is None
    tree = call(ctx, "accessibility_tree")
    assert tree.startswith("<") and "desktop" in tree
    assert call(ctx, "rule", rules={"expected": ["a", 1]}) == {"expected": ["a", 1]}
    assert call(ctx, "time_diff_range", diff_range_in_minutes=5) == 5


@pytest.mark.docker
def test_window_size(fresh_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    ctx.guest.launch(["xmessage", "-geometry", "300x120", "-title", "sized", "hello"])
    wait_for(lambda: call(ctx, "vm_window_size", app_class_name="Xmessage") is not None, "window", timeout=30.0)
    assert call(ctx, "vm_window_size", app_class_name="xmessage") == {"width": 300, "height": 120}


@pytest.mark.docker
def test_content_from_vm_file_last_row(shared_desktop: Desktop, tmp_path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.append(["name", "count"])
    sheet.append(["apples", 3])
    sheet.append(["pears", 4.5])
    buffer = io.BytesIO()
    book.save(buffer)
    ctx = make_context(shared_desktop, tmp_path)
    ctx.guest.upload("~/getter-test/sheet.xlsx", buffer.getvalue())
    assert call(
        ctx, "content_from_vm_file", path="~/getter-test/sheet.xlsx", file_type="xlsx", file_content="last_row"
    ) == ["pears", "4.5"]
    with pytest.raises(FileNotFoundError):
        call(ctx, "content_from_vm_file", path="~/getter-test/absent.xlsx", file_type="xlsx", file_content="last_row")


@pytest.mark.docker
def test_chrome_profile_files(fresh_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    # No profile yet: upstream's fixed answers.
    assert call(ctx, "default_search_engine") == "Google"
    assert call(ctx, "find_unpacked_extension_path") == "Google"
    assert call(ctx, "bookmarks") == []
    assert call(ctx, "cookie_data", dest="Cookies") is None
    assert call(ctx, "history", dest="History") is None
    assert call(ctx, "chrome_language") == "en-US"
    preferences = {
        "default_search_provider_data": {"template_url_data": {"short_name": "Bing"}},
        "extensions": {"settings": {"abc": {"path": "/home/user/ext/helloExtension", "manifest": {"name": "Hello"}}}},
        "profile": {"name": "Work", "default_content_setting_values": {"cookies": 4}},
        "enable_do_not_track": True,
        "safebrowsing": {"enhanced": True},
        "webkit": {"webprefs": {"default_font_size": 20}},
    }
    ctx.guest.upload("~/.config/google-chrome/Default/Preferences", json.dumps(preferences).encode())
    ctx.guest.upload(
        "~/.config/google-chrome/Local State",
        json.dumps({"browser": {"enabled_labs_experiments": ["a@1"]}, "intl": {"app_locale": "de"}}).encode(),
    )
    ctx.guest.upload(
        "~/.config/google-chrome/Default/Bookmarks",
        json.dumps({"roots": {"bookmark_bar": {"children": [{"name": "Ex", "url": "https://ex.example/"}]}}}).encode(),
    )
    assert call(ctx, "default_search_engine") == "Bing"
    assert call(ctx, "find_unpacked_extension_path") == ["/home/user/ext/helloExtension"]
    assert call(ctx, "find_installed_extension_name") == ["Hello"]
    assert call(ctx, "profile_name") == "Work"
    assert call(ctx, "data_delete_automacally") == "true"
    assert call(ctx, "enable_do_not_track") == "true"
    assert call(ctx, "enable_enhanced_safety_browsing") == "true"
    assert call(ctx, "enable_safe_browsing") == "true"
    assert call(ctx, "new_startup_page") == "true"
    assert call(ctx, "chrome_font_size") == {"default_font_size": 20}
    assert call(ctx, "enabled_experiments") == ["a@1"]
    assert call(ctx, "chrome_language") == "de"
    assert call(ctx, "bookmarks")["bookmark_bar"]["children"][0]["name"] == "Ex"

    cookies = tmp_path / "Cookies"
    db = sqlite3.connect(cookies)
    db.execute("CREATE TABLE cookies (creation_utc INTEGER, host_key TEXT, name TEXT, value TEXT)")
    db.execute("INSERT INTO cookies VALUES (1, '.example.com', 'sid', 'v')")
    db.commit()
    db.close()
    # Current Chrome keeps cookies under Default/Network/; upstream's image under Default/.
    ctx.guest.upload("~/.config/google-chrome/Default/Network/Cookies", cookies.read_bytes())
    assert call(ctx, "cookie_data", dest="Cookies") == [(1, ".example.com", "sid", "v")]


@pytest.mark.docker
def test_shortcuts_on_desktop(fresh_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    assert call(ctx, "shortcuts_on_desktop") == {}
    entry = "[Desktop Entry]\nName=Example\nExec=google-chrome https://example.com\nType=Application\n"
    ctx.guest.upload("~/Desktop/example.desktop", entry.encode())
    ctx.guest.upload("~/Desktop/readme.txt", b"not a shortcut")
    assert call(ctx, "shortcuts_on_desktop") == {"example.desktop": entry}


@pytest.mark.docker
def test_vscode_config_reads_the_file_after_the_palette(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    ctx.guest.upload("~/getter-test/vscode-out.json", b'{"x": 1}')
    local = call(
        ctx,
        "vscode_config",
        vscode_extension_command="Write settings",
        path="~/getter-test/vscode-out.json",
        dest="vscode.json",
    )
    assert Path(local).read_bytes() == b'{"x": 1}'


@pytest.mark.docker
def test_vscode_config_waits_for_a_late_file_unless_osworlds_fixed_waits_are_asked(
    shared_desktop: Desktop, tmp_path: Path
) -> None:
    """A command slower than upstream's 1 s pause: found with the readiness waits, missing (as upstream) with compat's."""
    quiet = make_context(shared_desktop, tmp_path / "quiet")
    fixed = make_context(shared_desktop, tmp_path / "fixed", eval_settle=20)
    for ctx, name in ((fixed, "fixed"), (quiet, "quiet")):
        path = f"~/getter-test/late-{name}.txt"
        # Written 4 s from now by a process of its own, as an extension host busy for 4 s would.
        ctx.guest.execute(f"(sleep 4; mkdir -p ~/getter-test; printf {name} > {path}) >/dev/null 2>&1 &", shell=True)
        local = call(ctx, "vscode_config", vscode_extension_command="Write settings", path=path, dest=f"{name}.txt")
        if ctx is fixed:
            assert local is None
        else:
            assert local is not None and Path(local).read_text() == "quiet"


VLC_STAND_IN = """
import base64, http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.headers.get("Authorization") != "Basic " + base64.b64encode(b":password").decode():
            self.send_response(401); self.end_headers(); return
        body = b"<root><state>playing</state><information/></root>"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("0.0.0.0", 8080), H).serve_forever()
"""


@pytest.mark.docker
def test_vlc_playing_info(fresh_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    assert call(ctx, "vlc_playing_info", dest="status.xml") is None  # no VLC running
    # VLC's HTTP interface stands in: same port, same password, same status path.
    ctx.guest.upload("/tmp/vlc_stand_in.py", VLC_STAND_IN.encode())
    ctx.guest.launch(["python3", "/tmp/vlc_stand_in.py"])
    wait_for(lambda: call(ctx, "vlc_playing_info", dest="status.xml") is not None, "VLC interface", timeout=30.0)
    assert Path(tmp_path / "cache" / "status.xml").read_text() == "<root><state>playing</state><information/></root>"


def _deck(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


RELS = '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{}</Relationships>'
IMAGE_TYPE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image"
AUDIO_TYPE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/audio"
SLIDE_BG = (
    '<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
    '<p:cSld><p:bg><p:bgPr><a:blipFill><a:blip r:embed="rId7"/></a:blipFill></p:bgPr></p:bg></p:cSld></p:sld>'
)


@pytest.mark.docker
def test_slide_media_getters(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    deck = _deck(
        {
            "ppt/slides/slide1.xml": SLIDE_BG.encode(),
            "ppt/slides/_rels/slide1.xml.rels": RELS.format(
                f'<Relationship Id="rId7" Type="{IMAGE_TYPE}" Target="../media/image1.png"/>'
                f'<Relationship Id="rId8" Type="{AUDIO_TYPE}" Target="file:///home/user/getter-test/sound.mp3"/>'
            ).encode(),
            "ppt/media/image1.png": b"png-bytes",
        }
    )
    ctx.guest.upload("~/getter-test/deck.pptx", deck)
    ctx.guest.upload("~/getter-test/sound.mp3", b"mp3-bytes")
    image = call(
        ctx, "background_image_in_slide", ppt_file_path="~/getter-test/deck.pptx", slide_index=0, dest="bg.png"
    )
    assert Path(image).read_bytes() == b"png-bytes"
    audio = call(ctx, "audio_in_slide", ppt_file_path="~/getter-test/deck.pptx", slide_index=0, dest="a.mp3")
    assert Path(audio).read_bytes() == b"mp3-bytes"
    assert call(ctx, "audio_in_slide", ppt_file_path="~/getter-test/deck.pptx", slide_index=4, dest="b.mp3") is None


@pytest.mark.docker
def test_gimp_vlc_config_and_default_video_player(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    assert call(ctx, "gimp_config_file", file_name="gimprc", dest="gimprc") is None
    ctx.guest.upload("~/.config/GIMP/2.10/gimprc", b'(theme "Dark")\n')
    assert Path(call(ctx, "gimp_config_file", file_name="gimprc", dest="gimprc")).read_bytes() == b'(theme "Dark")\n'
    # The image ships VLC's config with its HTTP interface on; without the file the getter raises.
    assert "http-password=password" in Path(call(ctx, "vlc_config", dest="vlcrc")).read_text()
    ctx.guest.execute(["rm", "-f", "/home/user/.config/vlc/vlcrc"])
    with pytest.raises(FileNotFoundError):
        call(ctx, "vlc_config", dest="vlcrc2")
    ctx.guest.upload("~/.config/vlc/vlcrc", b"qt-minimal-view=1\n")
    assert Path(call(ctx, "vlc_config", dest="vlcrc")).read_text() == "qt-minimal-view=1\n"
    assert isinstance(call(ctx, "default_video_player"), str)


@pytest.mark.docker
def test_rule_relative_time_uses_the_guest_clock(shared_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(shared_desktop, tmp_path)
    config = {"rules": {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{Year}-{Month0D}-{Day0D}"}}}
    before = ctx.guest.execute(["date", "-d", "tomorrow", "+%Y-%m-%d"]).output.strip()
    result = get_getter("rule_relativeTime")(ctx, config)
    after = ctx.guest.execute(["date", "-d", "tomorrow", "+%Y-%m-%d"]).output.strip()
    assert result["expected"]["time"] in (before, after)
    zoned = get_getter("rule_relativeTime")(
        ctx,
        {
            "rules": {
                "relativeTime": {"from": "next Monday"},
                "timezone": "Pacific/Kiritimati",
                "expected": {"time": "{DoW}"},
            }
        },
    )
    assert zoned["expected"]["time"] == "Mon"
