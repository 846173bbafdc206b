"""Where a task's sandbox ran and how the task got it: the ``placement`` of its record.

A pooled sandbox (``sandbox.pooled``) and every sandbox of the ``ray`` provider carry one in their
``describe()``, which the episode writes into the result record's ``sandbox`` entry; the summary
reads it back (``TaskResult.placement``) for the claim time percentiles and the sandboxes per node.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Placement(BaseModel):
    """One sandbox's placement and claim. Times in seconds."""

    model_config = ConfigDict(extra="allow")  # keys a later version adds stay readable

    provider: str  # "ray", or the local sandbox's name (desktop, vm, a profile's)
    node_id: str | None = None  # the Ray node's id; None on a local provider
    node_address: str | None = None  # the Ray node's address; the environment host on a local provider
    pooled: bool = False  # taken from a warm pool
    warm: bool | None = None  # pooled: a ready sandbox was there when the claim came; None: no pool
    pool_wait_seconds: float = 0.0  # waited for a sandbox to get ready (in the pool, or for a free Ray slot)
    claim_seconds: float = 0.0  # from the request until the task had it, the claim's check included
    verify_seconds: float | None = None  # of which the check that it is ready and clean (pooled only)
    rejected: int = 0  # pooled: ready sandboxes that failed that check first (destroyed; the next one taken)
    claimed_at: str | None = None  # ISO 8601

    @property
    def node(self) -> str:
        """What the summary counts sandboxes per: the Ray node's id, else the environment host."""
        return self.node_id or self.node_address or "?"
