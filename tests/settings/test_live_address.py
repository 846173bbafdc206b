"""``--osworld-live [HOST:]PORT``: a bare port listens on loopback; a bad value is an error naming the option."""

from __future__ import annotations

import pytest

from pytest_osworld.errors import SettingsError
from pytest_osworld.settings import Settings, merge
from pytest_osworld.settings.address import LiveAddress


@pytest.mark.parametrize(
    ("text", "host", "port", "loopback", "url"),
    [
        ("8765", "127.0.0.1", 8765, True, "http://127.0.0.1:8765/"),
        ("0", "127.0.0.1", 0, True, "http://127.0.0.1:0/"),
        ("localhost:9000", "localhost", 9000, True, "http://localhost:9000/"),
        ("0.0.0.0:8765", "0.0.0.0", 8765, False, "http://127.0.0.1:8765/"),
        ("[::1]:8765", "::1", 8765, True, "http://[::1]:8765/"),
        ("box.lan:80", "box.lan", 80, False, "http://box.lan:80/"),
    ],
)
def test_an_address_is_parsed(text: str, host: str, port: int, loopback: bool, url: str) -> None:
    address = LiveAddress.parse(text)
    assert (address.host, address.port, address.loopback_only, address.url) == (host, port, loopback, url)
    assert LiveAddress.parse(str(address)) == address


def test_the_setting_is_off_by_default_and_survives_a_tasks_overrides() -> None:
    assert Settings().reports.live is None and Settings().reports.live_input is False
    settings = merge(cli={"live": "8765", "live_input": True}, profile={"task_overrides": {"t": {"max_steps": 3}}})
    assert settings.reports.live == LiveAddress("127.0.0.1", 8765)
    assert settings.for_task("t").reports.live == settings.reports.live and settings.for_task("t").loop.max_steps == 3


@pytest.mark.parametrize("text", ["", "port", "host:", "1.2.3.4:99999", "a b:80", ":80"])
def test_a_bad_address_is_an_error_naming_the_option(text: str) -> None:
    with pytest.raises(SettingsError, match=r"--osworld-live: expected \[HOST:\]PORT|--osworld-live: the port"):
        merge(cli={"live": text})
