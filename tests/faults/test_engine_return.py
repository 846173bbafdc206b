"""What a run removes from an engine that restarts meanwhile is removed once it answers again.

The fault matrix's engine_restarted seed 1: every task of the run ended while the engine was down (a
1.5 s restart), the sandboxes' removals and the workers' sweeps failed at once, and their stopped
containers stayed. Here the matrix's own engine is stopped under a removal and under a worker's sweep,
and started again 2 s later each time.
"""

from __future__ import annotations

import os
import secrets
import threading
import time

import pytest

from pytest_osworld.guest import build
from pytest_osworld.sandbox.containers import Containers, remove_container
from pytest_osworld.sandbox.hosts import EngineHost
from pytest_osworld.sandbox.labels import LABEL_RUN_ID, Owner
from tests.support.faults.engine import OwnEngine

pytestmark = pytest.mark.docker

DOWN_S = 2.0


def test_a_removal_and_the_runs_sweep_wait_for_a_restarting_engine(fault_engine: OwnEngine) -> None:
    run_id = f"engine-return-{secrets.token_hex(3)}"
    client = fault_engine.client()
    owner = Owner(run_id)
    labels = owner.labels()  # this process's: its own sweep at the end takes them
    one, _swept = (
        client.containers.run(build.LATEST, ["600"], entrypoint=["sleep"], detach=True, labels=labels) for _ in range(2)
    )
    host = EngineHost(url=fault_engine.url)
    containers = Containers(host, owner)
    fault_engine.down()
    back = threading.Timer(DOWN_S, fault_engine.up)
    back.daemon = True
    started = time.monotonic()
    back.start()
    try:
        remove_container(client, one, one.name, host=host, run_id=run_id)  # raised at once before
        waited = time.monotonic() - started
        fault_engine.down()  # and again, under the worker's sweep at its session's end
        back = threading.Timer(DOWN_S, fault_engine.up)
        back.daemon = True
        back.start()
        removed = containers.sweep(run_id, pid=os.getpid())
    finally:
        back.join()
    left = [c.name for c in client.containers.list(all=True, filters={"label": f"{LABEL_RUN_ID}={run_id}"})]
    client.close()
    containers.close()
    assert waited >= DOWN_S and left == [] and removed == 1, (waited, left, removed)
