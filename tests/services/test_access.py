"""Service placeholders in a task's JSON: what they name, how they are filled, and the errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_osworld.services.access import PlaceholderError, ServiceAccess, fill, names_in, with_services
from pytest_osworld.tasks.readers import read_jsonl

WEBSITE = ServiceAccess(
    name="website",
    hostname="website.osworld.test",
    ports=(80, 8443),
    state_key="run-1-chrome/shop",
    host_urls={80: "http://127.0.0.1:49153"},
)
ECHO = ServiceAccess(name="echo", hostname="echo.osworld.test", ports=(8000,))
HELD = {"website": WEBSITE, "echo": ECHO}


def test_names_in_finds_every_placeholder_at_any_depth() -> None:
    value = {
        "config": [{"parameters": {"urls": ["{SERVICE_URL:website}/?cookie={SERVICE_KEY:website}"]}}],
        "evaluator": {"command": "curl {SERVICE_HOST:echo}:{SERVICE_URL:forge:3000}", "n": 3, "none": None},
        "plain": "{SERVICE_PORT:other} {SERVICE_URL:} {not a placeholder}",
    }
    assert names_in(value) == {"website", "echo", "forge"}
    assert names_in("no placeholder here") == set()
    assert names_in([1, 2.5, True, None]) == set()


def test_fill_gives_guest_urls_hosts_and_state_keys_in_a_copy() -> None:
    value = {
        "url": "{SERVICE_URL:website}/?cookie={SERVICE_KEY:website}",
        "other_port": "{SERVICE_URL:website:8443}/x",
        "echo": ["{SERVICE_URL:echo}/health", "{SERVICE_HOST:echo}"],
        "kept": [1, None, {"deep": "{SERVICE_HOST:website}"}],
    }
    filled = fill(value, HELD)
    assert filled == {
        "url": "http://website.osworld.test/?cookie=run-1-chrome/shop",  # port 80 is left out
        "other_port": "http://website.osworld.test:8443/x",
        "echo": ["http://echo.osworld.test:8000/health", "echo.osworld.test"],
        "kept": [1, None, {"deep": "website.osworld.test"}],
    }
    assert value["url"] == "{SERVICE_URL:website}/?cookie={SERVICE_KEY:website}"  # the original is untouched


def test_a_placeholder_of_a_service_the_task_does_not_hold_names_it_and_the_fix() -> None:
    with pytest.raises(PlaceholderError) as caught:
        fill({"x": ["{SERVICE_URL:forge}/api"]}, HELD, where="task t1")
    message = str(caught.value)
    assert message.startswith("task t1: {SERVICE_URL:forge} names the service 'forge'")
    assert "(it holds: echo, website)" in message and 'list it in the task\'s "services"' in message
    with pytest.raises(PlaceholderError, match=r"\(it holds: none\)"):
        fill("{SERVICE_HOST:website}", {})


def test_a_key_placeholder_of_a_service_without_state_keys_says_what_its_definition_needs() -> None:
    with pytest.raises(PlaceholderError) as caught:
        fill("cookie={SERVICE_KEY:echo}", HELD, where="task t2")
    assert str(caught.value) == (
        "task t2: {SERVICE_KEY:echo}: the service 'echo' gives no per-task state key "
        "(its definition needs reset: {state_key: ...})"
    )


def test_host_urls_are_the_published_ports_only() -> None:
    assert WEBSITE.url() == "http://127.0.0.1:49153"
    assert WEBSITE.guest_url(8443) == "http://website.osworld.test:8443"
    with pytest.raises(PlaceholderError, match=r"service website: port 8443 is not published \(published: \[80\]\)"):
        WEBSITE.url(8443)


def test_with_services_fills_a_read_task_and_keeps_one_without_placeholders(tmp_path: Path) -> None:
    source = tmp_path / "t.jsonl"
    source.write_text(
        '{"domain": "chrome", "id": "shop", "instruction": "Shop at {SERVICE_HOST:website}.", "services": ["website"],'
        ' "config": [{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["{SERVICE_URL:website}/"]}}],'
        ' "evaluator": {"func": "exact_match", "result": {"type": "service_state", "service": "website"},'
        ' "expected": {"type": "rule", "rules": {"expected": "{SERVICE_KEY:website}"}}},'
        ' "solution": ["DONE"]}\n'
        '{"domain": "os", "id": "plain", "instruction": "x", "evaluator": {"func": "exact_match"}}\n',
        encoding="utf-8",
    )
    shop, plain = read_jsonl(source)
    filled = with_services(shop, HELD)
    assert filled.task.instruction == "Shop at website.osworld.test."
    assert filled.raw["config"][0]["parameters"]["urls_to_open"] == ["http://website.osworld.test/"]
    assert filled.raw["evaluator"]["expected"]["rules"]["expected"] == "run-1-chrome/shop"
    assert filled.domain == "chrome" and filled.id == "shop"
    assert shop.task.instruction == "Shop at {SERVICE_HOST:website}."  # the collected entry is unchanged
    assert with_services(plain, {}) is plain
    with pytest.raises(PlaceholderError, match=r"^task shop: \{SERVICE_HOST:website\} names the service"):
        with_services(shop, {"echo": ECHO})


def test_state_keys_are_url_safe_and_keep_repeats_apart() -> None:
    # A repeat's "#r2" once became a URL fragment: the browser and the getter then read different states.
    from urllib.parse import quote

    from pytest_osworld.services.naming import state_key

    keys = {state_key("run-1", k) for k in ("os/t", "os/t#r2", "os/t#r3", "os.t", "os/t~2F")}
    assert len(keys) == 5
    assert all(quote(k, safe="") == k for k in keys)
