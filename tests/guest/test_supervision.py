"""The desktop survives what its user does to it: every supervised process comes back when killed.

These tests kill the session container's own processes as the desktop user (``docker exec``'s
default user, as an agent's action runs) and wait, by readiness checks, for each to answer again.
They leave the desktop as they found it: every process back, no window opened.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
import pytest

from tests.support.guest_containers import GUEST_PORT, VNC_PORT, Guest
from tests.support.polling import wait_for

pytestmark = pytest.mark.docker

SUPERVISED = ("xvfb", "dbus", "openbox", "x11vnc", "guest-server")
# The supervisor starts a killed process again at once; one that ran less than a second waits a second
# first (runsv's guard against a loop of failing starts).
RESTART_DELAY_LIMIT_S = 1.5
# Back and answering: within a second or two on a quiet machine (each test prints how long it took); the
# bound only tells "came back" from "never came back", so a loaded machine (Xvfb after everything was
# killed at once took over 5 s on a busy CI machine) does not fail it.
BACK_LIMIT_S = 30.0


def as_user(guest: Guest, *command: str) -> tuple[int, str]:
    """A command through ``docker exec`` as its default user (the desktop user), as an action would."""
    code, output = guest.container.exec_run(list(command))
    return int(code), output.decode(errors="replace")


def pids(guest: Guest, *pattern: str) -> list[int]:
    code, output = as_user(guest, "pgrep", *pattern)
    return [int(pid) for pid in output.split()] if code == 0 else []


def restarts(guest: Guest) -> list[dict[str, Any]]:
    answer = guest.http.get("/pytest-osworld/restarts")
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["restarts"]
    return found


def guest_answers(guest: Guest) -> bool:
    try:
        return guest.http.get("/platform", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def screenshot_answers(guest: Guest) -> bool:
    try:
        return guest.http.get("/screenshot", timeout=10).status_code == 200
    except httpx.HTTPError:
        return False


def vnc_answers(guest: Guest) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", guest.ports[VNC_PORT]), timeout=2) as vnc:
            return vnc.recv(12).startswith(b"RFB ")
    except OSError:
        return False


def bus_answers(guest: Guest) -> bool:
    ask = ("dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/", "org.freedesktop.DBus.GetId")
    return as_user(guest, *ask)[0] == 0


@dataclass(frozen=True)
class Service:
    """A supervised service: how its process is found and how it shows it works."""

    name: str
    pattern: tuple[str, ...]  # pgrep's arguments
    answers: Callable[[Guest], bool]


SERVICES = {
    service.name: service
    for service in (
        Service("xvfb", ("-x", "Xvfb"), lambda g: as_user(g, "xset", "q")[0] == 0 and screenshot_answers(g)),
        # The session bus, not the accessibility bus that AT-SPI starts beside it on demand.
        Service("dbus", ("-f", "^dbus-daemon --session "), bus_answers),
        Service("openbox", ("-x", "openbox"), lambda g: "Openbox" in as_user(g, "wmctrl", "-m")[1]),
        Service("x11vnc", ("-x", "x11vnc"), vnc_answers),
        Service("guest-server", ("-f", "-x", "python3 -m guest_server"), guest_answers),
    )
}


def wait_back(guest: Guest, service: Service, old: list[int]) -> float:
    """Seconds until ``service`` runs as a new process and answers."""
    started = time.monotonic()
    wait_for(
        lambda: (found := pids(guest, *service.pattern)) and found != old and service.answers(guest),
        f"{service.name} to run again and answer",
        timeout=BACK_LIMIT_S,
        every=0.1,
    )
    return time.monotonic() - started


def test_the_supervisor_is_out_of_the_desktop_users_reach(guest: Guest) -> None:
    assert as_user(guest, "id", "-un")[1].strip() == "user"  # docker exec's default user is still the desktop's
    code, table = as_user(guest, "ps", "-eo", "pid=,user=,comm=")
    assert code == 0
    processes = [line.split(None, 2) for line in table.splitlines()]
    owner = {comm: user for _pid, user, comm in processes}
    assert processes[0][:2] == ["1", "root"] and processes[0][2] == "tini"
    assert owner["runsvdir"] == owner["runsv"] == "root"
    for comm in ("Xvfb", "dbus-daemon", "openbox", "x11vnc", "python3"):
        assert owner[comm] == "user", (comm, table)
    supervisor = pids(guest, "-x", "runsvdir")
    code, _ = as_user(guest, "kill", "-9", str(supervisor[0]))
    assert code != 0  # not permitted
    assert pids(guest, "-x", "runsvdir") == supervisor
    assert {each["process"] for each in restarts(guest)} <= set(SUPERVISED)
    assert sorted(guest.http.get("/pytest-osworld/restarts").json()["supervised"]) == sorted(SUPERVISED)


@pytest.mark.parametrize("name", SUPERVISED)
def test_a_killed_process_comes_back_within_seconds(guest: Guest, name: str) -> None:
    service = SERVICES[name]
    wait_for(lambda: service.answers(guest), f"{name} to answer before the test", timeout=BACK_LIMIT_S, every=0.1)
    before = len(restarts(guest))
    old = pids(guest, *service.pattern)
    guest_server = pids(guest, *SERVICES["guest-server"].pattern)
    assert len(old) == 1, old
    assert as_user(guest, "kill", "-9", str(old[0]))[0] == 0
    seconds = wait_back(guest, service, old)
    print(f"{name} answered again {seconds:.2f} s after kill -9")
    new = restarts(guest)[before:]
    own = [each for each in new if each["process"] == name]
    assert len(own) == 1, new
    assert own[0]["signal"] == 9 and own[0]["exit_code"] is None
    assert 0 <= own[0]["down_seconds"] <= RESTART_DELAY_LIMIT_S, own
    if name == "xvfb":
        # What needs the display starts again with the new one; the guest server outlives it.
        for follower in ("openbox", "x11vnc"):
            wait_back(guest, SERVICES[follower], [])
        assert {each["process"] for each in restarts(guest)[before:]} == {"xvfb", "openbox", "x11vnc"}
        assert pids(guest, *SERVICES["guest-server"].pattern) == guest_server


def test_everything_the_desktop_user_runs_killed_at_once_comes_back(guest: Guest) -> None:
    for service in SERVICES.values():
        wait_for(
            partial(service.answers, guest),
            f"{service.name} to answer before the test",
            timeout=BACK_LIMIT_S,
            every=0.1,
        )
    before = len(restarts(guest))
    old = {name: pids(guest, *service.pattern) for name, service in SERVICES.items()}
    supervisor = pids(guest, "-x", "runsvdir")
    as_user(guest, "kill", "-9", "-1")  # every process of the user but this one
    for name, service in SERVICES.items():
        seconds = wait_back(guest, service, old[name])
        print(f"{name} answered again within {seconds:.2f} s of the previous one")
    assert pids(guest, "-x", "runsvdir") == supervisor
    killed = [each for each in restarts(guest)[before:] if each["signal"] == 9]
    assert {each["process"] for each in killed} == set(SUPERVISED)
    assert guest.http.get("/screenshot").status_code == 200
    assert guest.ports[GUEST_PORT]  # the same published port: the container never stopped
