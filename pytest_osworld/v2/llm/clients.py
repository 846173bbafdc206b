"""The model clients of the LLM judge and the simulated users: one per endpoint, shared."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

from pytest_osworld.models.anthropic_client import AnthropicClient
from pytest_osworld.models.openai_client import OpenAIClient
from pytest_osworld.models.retry import RetryPolicy
from pytest_osworld.models.transport import HttpModelClient
from pytest_osworld.v2.llm.settings import JudgeConfig


class ClientPool:
    """The model clients of the session's judge and simulated users: one per endpoint, model, key, timeout
    and retry policy, made on first use and shared by every thread (an httpx client is thread-safe)."""

    def __init__(self, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self._sleep = sleep
        self._clients: dict[tuple[Any, ...], HttpModelClient] = {}
        self._lock = threading.Lock()

    def get(self, config: JudgeConfig) -> HttpModelClient:
        fingerprint = hashlib.sha256(config.key.reveal().encode()).hexdigest() if config.key else ""
        ident = (
            config.api,
            config.base_url,
            config.model,
            config.key_env,
            fingerprint,
            config.timeout,
            config.retry_attempts,
            config.retry_delay,
            config.prices,
        )
        with self._lock:
            client = self._clients.get(ident)
            if client is None:
                client_class = OpenAIClient if config.api == "openai" else AnthropicClient
                # Upstream waits retry_delay between attempts: here up to it, jittered (concurrent
                # workers hit by the same burst spread out).
                retry = RetryPolicy(
                    retries=config.retry_attempts - 1,
                    base=config.retry_delay,
                    cap=config.retry_delay,
                    sleep=self._sleep,
                )
                client = client_class(
                    url=config.base_url,
                    model=config.model,
                    key=config.key,
                    key_env=config.key_env,
                    prices=config.prices,
                    timeout=config.timeout,
                    retry=retry,
                )
                self._clients[ident] = client
            return client

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    def __repr__(self) -> str:
        return f"ClientPool({len(self._clients)} clients)"
