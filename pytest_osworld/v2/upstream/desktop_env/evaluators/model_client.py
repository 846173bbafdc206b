"""``desktop_env.evaluators.model_client`` as task files import it, re-exported from
:mod:`pytest_osworld.v2.api.model_client`."""

from __future__ import annotations

from pytest_osworld.v2.api.model_client import generate_chat, generate_text

__all__ = ["generate_chat", "generate_text"]
