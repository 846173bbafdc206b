"""The shared services in a run's summary: figures computed from records written by the run store."""

from __future__ import annotations

from pathlib import Path

from pytest_osworld.record import ServiceRecord, TaskResult, Termination
from pytest_osworld.results.render import summary_lines
from pytest_osworld.results.summary import failed_service, load_summary, summarize_run, write_summary
from tests.results.helpers import record, write_run

ECHO_1 = "1" * 64
ECHO_2 = "2" * 64  # the same service, started again (its first container was removed)
FORGE = "f" * 64


def used(
    container: str,
    *,
    image: str = "pytest-osworld/desktop:latest",
    exclusive: bool = False,
    waited: float = 0.0,
    restarted: bool = False,
) -> ServiceRecord:
    return ServiceRecord(
        id=container,
        image=image,
        exclusive=exclusive,
        waited_seconds=waited,
        restarted=restarted,
        held_at="2026-01-01T10:00:00.000+00:00" if exclusive else None,
    )


def with_services(result: TaskResult, services: dict[str, ServiceRecord] | None) -> TaskResult:
    result.services = services
    return result


def service_run(tmp_path: Path) -> Path:
    forge_image = "example/forge:2"
    records = [
        with_services(record("os/a", 1.0), {"echo": used(ECHO_1)}),
        with_services(record("os/b", 0.0), {"echo": used(ECHO_1, restarted=True)}),
        with_services(
            record("os/c", 1.0),
            {"echo": used(ECHO_2), "forge": used(FORGE, image=forge_image, exclusive=True, waited=2.5)},
        ),
        with_services(
            record("os/d", None, Termination.SERVICE_ERROR, message="service echo went down during the task: exited"),
            {"echo": used(ECHO_2), "forge": used(FORGE, image=forge_image, exclusive=True, waited=4.25)},
        ),
        # Masked before it could hold the service: the record has none, the message names it.
        with_services(
            record("os/e", None, Termination.SERVICE_ERROR, message="service broken is down: exit code 3"), {}
        ),
        # Another mask never counts against a service, even one it held.
        with_services(
            record("os/f", None, Termination.SANDBOX_ERROR, message="service echo is fine; the desktop is not"),
            {"echo": used(ECHO_2)},
        ),
        record("os/plain", 1.0),
    ]
    return write_run(tmp_path / "run-1", records)


def test_each_service_has_its_starts_restarts_failures_tasks_and_waits(tmp_path: Path) -> None:
    summary = summarize_run(service_run(tmp_path))
    assert summary["services"] == {
        "broken": {"images": [], "exclusive": False, "tasks": 0, "starts": 0, "restarts": 0, "failures": 1},
        "echo": {
            "images": ["pytest-osworld/desktop:latest"],
            "exclusive": False,
            "tasks": 5,
            "starts": 2,
            "restarts": 1,
            "failures": 1,
        },
        "forge": {
            "images": ["example/forge:2"],
            "exclusive": True,
            "tasks": 2,
            "starts": 1,
            "restarts": 0,
            "failures": 0,
            "waited_seconds": {"total": 6.75, "longest": 4.25},
        },
    }


def test_the_terminal_lists_them_and_a_written_summary_keeps_them(tmp_path: Path) -> None:
    run_dir = service_run(tmp_path)
    summary = summarize_run(run_dir)
    lines = summary_lines(summary)
    assert lines[-3:] == [
        "  services   broken: 0 tasks, 0 starts, 0 restarts, 1 failure",
        "             echo: 5 tasks, 2 starts, 1 restart, 1 failure",
        "             forge (exclusive): 2 tasks, 1 start, 0 restarts, 0 failures; waited 6.8 s in all, longest 4.2 s",
    ]
    assert load_summary(write_summary(run_dir, summary))["services"] == summary["services"]


def test_a_run_without_services_says_nothing_of_them(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "run-1", [record("os/a", 1.0), with_services(record("os/b", 0.0), {})])
    summary = summarize_run(run_dir)
    assert summary["services"] == {}
    assert not [line for line in summary_lines(summary) if "services" in line]


def test_which_service_a_mask_names() -> None:
    def masked(message: str, termination: Termination = Termination.SERVICE_ERROR) -> TaskResult:
        return record("os/x", None, termination, message=message)

    assert failed_service(masked("service echo is down: its container ... is not running")) == "echo"
    assert failed_service(masked("service my-shop: image example/shop:1 is not on the engine")) == "my-shop"
    assert failed_service(masked("masked (service_error): service proxy: the sandbox could not register")) == "proxy"
    assert failed_service(masked("the services' network could not be created")) is None
    assert failed_service(masked("service echo is down", Termination.SANDBOX_LOST)) is None
