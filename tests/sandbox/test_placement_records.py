"""Where each sandbox ran, as the records keep it and the summary counts it: claim time p50/p95 (the
nearest-rank percentile), warm claims, and sandboxes per node (the Ray node, else the environment
host), in summary.json and in the terminal's lines."""

from __future__ import annotations

from typing import Any

from pytest_osworld.record import Placement, TaskResult, Termination
from pytest_osworld.results.render import summary_lines
from pytest_osworld.results.summary import build_summary, percentile

NODE_A = "a1" * 28
NODE_B = "b2" * 28


def record(task: str, sandbox: dict[str, Any]) -> TaskResult:
    return TaskResult(run_id="r", task_id=task, domain="os", termination=Termination.DONE, score=1.0, sandbox=sandbox)


def on_ray(node: str, claim: float, *, warm: bool | None, wait: float = 0.0) -> dict[str, Any]:
    placement = Placement(
        provider="ray",
        node_id=node,
        node_address="10.0.0.1" if node == NODE_A else "10.0.0.2",
        pooled=warm is not None,
        warm=warm,
        pool_wait_seconds=wait,
        claim_seconds=claim,
        claimed_at="2026-01-01T00:00:00.000+00:00",
    )
    return {"profile": "desktop", "node_id": node, "placement": placement.model_dump(mode="json")}


def test_a_record_reads_its_placement_back() -> None:
    found = record("t", on_ray(NODE_A, 0.03, warm=True)).placement
    assert found is not None and found.node_id == NODE_A and found.warm and found.node == NODE_A
    assert record("t", {"profile": "desktop"}).placement is None  # a record made before placements existed
    assert record("t", {"placement": {"claim_seconds": "soon"}}).placement is None  # unreadable: none
    local = Placement(provider="desktop", node_address="unix:///var/run/docker.sock", pooled=True, warm=False)
    assert local.node == "unix:///var/run/docker.sock"  # a local sandbox counts per environment host


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert percentile(values, 50) == 10.0
    assert percentile(values, 95) == 19.0
    assert percentile([3.0], 95) == 3.0
    assert percentile([], 50) is None


def test_the_summary_gives_claim_percentiles_warm_claims_and_sandboxes_per_node() -> None:
    records = {
        "os/a": record("a", on_ray(NODE_A, 4.0, warm=False, wait=3.5)),  # the first claim waited for a start
        **{
            f"os/w{i}": record(f"w{i}", on_ray(NODE_A if i % 2 else NODE_B, 0.02 + i / 1000, warm=True))
            for i in range(8)
        },
        "os/cold": record("cold", on_ray(NODE_B, 2.0, warm=None, wait=0.5)),  # no pool: a placement and a start
        "os/local": record("local", {"host": "unix:///var/run/docker.sock", "ready_seconds": 1.2}),  # no placement
        "os/none": record("none", {}),  # never got a sandbox (its start failed): not a claim
    }
    summary = build_summary(records, None, run_id="r")
    figures = summary["sandboxes"]
    assert figures["claims"] == 11
    assert figures["pooled"] == 9 and figures["warm"] == 8
    assert figures["claim_seconds"] == {"p50": 0.025, "p95": 4.0, "max": 4.0}
    assert figures["pool_wait_seconds"] == 4.0
    assert figures["nodes"] == {
        NODE_B: {"address": "10.0.0.2", "sandboxes": 5},
        NODE_A: {"address": "10.0.0.1", "sandboxes": 5},
        "unix:///var/run/docker.sock": {"address": "unix:///var/run/docker.sock", "sandboxes": 1},
    }
    lines = summary_lines(summary)
    assert (
        "  sandboxes  11 claims: p50 0.025 s, p95 4.000 s; 8 of 9 pooled claims found one ready, 4.0 s waited in all"
        in lines
    )
    assert (
        f"  per node   {NODE_A[:12]} (10.0.0.1) 5, {NODE_B[:12]} (10.0.0.2) 5, unix:///var/run/docker.sock 1" in lines
    )


def test_a_run_without_sandboxes_has_no_such_figures() -> None:
    summary = build_summary({"os/none": record("none", {})}, None, run_id="r")
    assert summary["sandboxes"] is None
    assert not any(line.startswith("  sandboxes") for line in summary_lines(summary))
