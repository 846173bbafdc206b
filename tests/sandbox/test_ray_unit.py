"""The ray provider's parts that need no cluster and no Docker: what a sandbox asks of a node, what the
nodes offer and when none fits, the settings a node agent gets, addresses, and the guest-port
forwarder's rule (only the claiming driver gets through)."""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_osworld.errors import SettingsError
from pytest_osworld.sandbox import SandboxConfigError
from pytest_osworld.sandbox.ray import connect
from pytest_osworld.sandbox.ray.forward import Forwarder
from pytest_osworld.sandbox.ray.resources import (
    check_bundle_fits,
    node_settings,
    read_nodes,
    sandbox_bundle,
    slot_nodes,
)
from pytest_osworld.settings import Settings, merge

GIB = 1024**3


def ray_nodes() -> list[dict[str, Any]]:
    """``ray.nodes()`` as Ray answers it for a head without slots, two sandbox nodes, one dead."""
    return [
        {
            "NodeID": "a" * 56,
            "Alive": True,
            "NodeManagerAddress": "10.0.0.1",
            "Resources": {"CPU": 2.0, "node:10.0.0.1": 1.0},
        },
        {
            "NodeID": "b" * 56,
            "Alive": True,
            "NodeManagerAddress": "10.0.0.2",
            "Resources": {"CPU": 8.0, "memory": 16.0 * GIB, "osworld_sandbox": 4.0},
            "Labels": {"ray.io/node-id": "b" * 56},
        },
        {
            "NodeID": "c" * 56,
            "Alive": True,
            "NodeManagerAddress": "10.0.0.3",
            "Resources": {"CPU": 2.0, "memory": 4.0 * GIB, "osworld_sandbox": 2.0},
        },
        {"NodeID": "d" * 56, "Alive": False, "NodeManagerAddress": "10.0.0.4", "Resources": {"osworld_sandbox": 8.0}},
    ]


def test_a_sandbox_holds_a_slot_and_its_profiles_cpus_and_memory() -> None:
    assert sandbox_bundle(Settings(sandbox="ray")) == {"osworld_sandbox": 1.0}
    limited = Settings(sandbox="ray", sandbox_cpus=2, sandbox_memory="4g", ray_slot_resource="desktops")
    assert sandbox_bundle(limited) == {"desktops": 1.0, "CPU": 2.0, "memory": 4.0 * GIB}
    profile = Settings(
        sandbox="ray",
        ray_sandbox="mine",
        sandbox_profiles={"mine": {"image": "example/desk:1", "resources": {"cpus": 1.5, "memory": "3g"}}},
    )
    assert sandbox_bundle(profile) == {"osworld_sandbox": 1.0, "CPU": 1.5, "memory": 3.0 * GIB}
    # The vm sandbox holds its guest's vCPUs and memory (2 and 2 GiB for the project's image).
    assert sandbox_bundle(Settings(sandbox="ray", ray_sandbox="vm")) == {
        "osworld_sandbox": 1.0,
        "CPU": 2.0,
        "memory": 2.0 * GIB,
    }


def test_a_node_agent_gets_the_sandbox_settings_and_its_own_engine_only() -> None:
    settings = Settings(
        sandbox="ray",
        ray_sandbox="vm",
        vm_memory="3g",
        docker_host=["ssh://root@envhost=4"],
        warm_pool=2,
        model_url="http://gpu:8000/v1",
        model="m",
        screen_width=1280,
        screen_height=800,
    )
    inner = node_settings(settings)
    assert inner.sandbox.name == "vm" and inner.vm.memory == 3 * GIB and inner.sandbox.screen_width == 1280
    assert inner.sandbox.docker_host == []  # the node's own engine
    assert inner.sandbox.warm_pool == 0  # the agent keeps the node's pool, not a process pool inside it
    assert inner.model.url is None and inner.model.name is None  # the model stays on the pytest machine


def test_the_sandbox_each_node_starts_cannot_be_ray() -> None:
    with pytest.raises(SettingsError, match="--osworld-ray-sandbox: the sandbox each Ray node starts cannot be ray"):
        merge(cli={"sandbox": "ray", "ray_sandbox": "ray"})


def test_nodes_with_slots_and_a_bundle_that_fits_none() -> None:
    nodes = read_nodes(ray_nodes(), "osworld_sandbox")
    assert [n.slots for n in nodes] == [0.0, 4.0, 2.0, 8.0]
    assert [n.address for n in slot_nodes(nodes)] == ["10.0.0.2", "10.0.0.3"]  # alive, with slots
    assert "node:10.0.0.1" not in nodes[0].resources
    check_bundle_fits({"osworld_sandbox": 1.0, "CPU": 8.0}, nodes, "osworld_sandbox")
    with pytest.raises(SandboxConfigError, match=r"no Ray node can hold one sandbox \(osworld_sandbox 1, CPU 9\)"):
        check_bundle_fits({"osworld_sandbox": 1.0, "CPU": 9.0}, nodes, "osworld_sandbox")
    with pytest.raises(SandboxConfigError, match=r"memory 32768 MiB.*16384 MiB"):
        check_bundle_fits({"osworld_sandbox": 1.0, "memory": 32.0 * GIB}, nodes, "osworld_sandbox")
    with pytest.raises(
        SandboxConfigError, match="no live Ray node declares the sandbox slot resource 'gpus'.*--resources"
    ):
        check_bundle_fits({"gpus": 1.0}, read_nodes(ray_nodes(), "gpus"), "gpus")


@pytest.mark.parametrize(
    ("address", "host", "loopback"),
    [
        ("auto", None, False),
        ("127.0.0.1:6379", "127.0.0.1", True),
        ("localhost:6379", "localhost", True),
        ("ray://127.0.0.1:10001", "127.0.0.1", True),
        ("10.1.2.3:6379", "10.1.2.3", False),
        ("ray://head.example:10001", "head.example", False),
    ],
)
def test_addresses(address: str, host: str | None, loopback: bool) -> None:
    assert connect.host_of(address) == host
    assert connect.is_loopback(address) is loopback


def test_an_address_nothing_answers_at_fails_fast_with_the_fix() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(SandboxConfigError, match=r"no Ray cluster answers at 127\.0\.0\.1:\d+.*ray start --head"):
        connect.connect(f"127.0.0.1:{port}", "pytest-osworld-nothing")


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    """A TCP server on loopback that answers each line with itself, reversed."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(1024)
                conn.sendall(data[::-1])

    threading.Thread(target=serve, daemon=True).start()
    yield ("127.0.0.1", server.getsockname()[1])
    server.close()


def _ask(address: tuple[str, int], text: bytes) -> bytes:
    """What comes back; nothing when the other end closed the connection (a refused peer).

    A refused peer's close can reach this end at any of the three calls, as a reset, a broken pipe or
    "not connected", depending on the timing; a timeout (nobody answered nor closed) is an error.
    """
    with socket.create_connection(address, timeout=5) as conn:
        try:
            conn.sendall(text)
            conn.shutdown(socket.SHUT_WR)
            return conn.recv(1024)
        except ConnectionError:
            return b""
        except OSError as error:
            if error.errno == errno.ENOTCONN:
                return b""
            raise


def test_the_forwarder_lets_only_the_claiming_driver_through(echo: tuple[str, int]) -> None:
    forwarder = Forwarder("127.0.0.1", {5000: echo})
    try:
        address = forwarder.addresses[5000]
        assert address[0] == "127.0.0.1" and address[1] != echo[1]
        assert _ask(address, b"hello") == b""  # before the claim nobody gets through
        forwarder.allow({"10.9.8.7"})
        assert _ask(address, b"hello") == b""  # another machine's claim: this peer is closed at once
        forwarder.allow({"127.0.0.1"})
        assert _ask(address, b"hello") == b"olleh"
    finally:
        forwarder.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=5)  # an agent that ended listens no more
