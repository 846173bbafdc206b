"""The simulated user's API as task files may import it: the project's implementation."""

from __future__ import annotations

from pytest_osworld.v2.llm.user_sim import UserSimulator, make_user_simulator

__all__ = ["UserSimulator", "make_user_simulator"]
