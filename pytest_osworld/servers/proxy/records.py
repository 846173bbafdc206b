"""What each task's sandbox reached through the proxy, under the task's key, by the address its
requests come from."""

from __future__ import annotations

import json
import threading
from typing import Any

MAX_REQUESTS = 5000  # per key: a page that loops cannot exhaust the service's memory


def _empty() -> dict[str, Any]:
    return {"hosts": {}, "requests": [], "dropped": 0}


class Records:
    """What each key's sandbox reached, and which address is which key's."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.keys: dict[str, dict[str, Any]] = {}
        self.clients: dict[str, str] = {}
        self.unregistered = 0

    def register(self, client: str, key: str) -> None:
        with self.lock:
            for address in [a for a, k in self.clients.items() if k == key]:
                del self.clients[address]
            self.clients[client] = key
            self.keys[key] = _empty()

    def add(self, client: str, entry: dict[str, Any]) -> None:
        with self.lock:
            key = self.clients.get(client)
            if key is None:
                self.unregistered += 1
                return
            record = self.keys.setdefault(key, _empty())
            name = f"{entry['host']}:{entry['port']}"
            host = record["hosts"].setdefault(
                name, {"host": entry["host"], "port": entry["port"], "requests": 0, "reached": False}
            )
            host["requests"] += 1
            host["reached"] = host["reached"] or entry["outcome"] in ("answered", "tunnelled")
            if len(record["requests"]) < MAX_REQUESTS:
                record["requests"].append(entry)
            else:
                record["dropped"] += 1

    def state(self, key: str) -> dict[str, Any]:
        with self.lock:
            record = self.keys.get(key, _empty())
            meta = {"dropped_requests": record["dropped"]} if record["dropped"] else {}
            data = {"hosts": list(record["hosts"].values()), "requests": list(record["requests"])}
            copied: dict[str, Any] = json.loads(json.dumps({"data": data, "meta": meta}))  # sent unlocked
            return copied

    def forget(self, key: str) -> None:
        with self.lock:
            self.keys.pop(key, None)

    def reset(self) -> None:
        with self.lock:
            self.keys.clear()
            self.clients.clear()
