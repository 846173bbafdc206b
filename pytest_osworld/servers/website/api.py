"""The JSON API of the ``website`` service's shop, the same actions as its pages: ``GET
/api/products[/<id>]``, ``GET|POST|DELETE /api/cart``, ``PUT|DELETE /api/cart/<id>``, ``POST
/api/checkout``, ``GET /api/orders[/<id>]``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from ..base import HttpError
from ..state import State, States, bump
from .shop import cart, cart_json, checkout, order_of, orders, product_of, products, quantity_of, set_quantity


def data_of(state: State) -> dict[str, Any]:
    """The state's ``data`` (made when a state put in by hand has none); call with the lock held."""
    data = state.get("data")
    return data if isinstance(data, dict) else state.setdefault("data", {})


def answer(states: States, user: str, method: str, path: str, read_json: Callable[[], Any]) -> tuple[int, Any]:
    """The status and JSON answer of ``method`` on ``/api<path>`` for the visitor ``user``."""
    segments = [unquote(s) for s in path.strip("/").split("/")]
    route = (method, segments[0], len(segments))
    with states.lock:
        data = data_of(states.of(user))
        if route == ("GET", "products", 1):
            return 200, copy.deepcopy({"products": [{"id": pid, **p} for pid, p in products(data).items()]})
        if route == ("GET", "products", 2):
            return 200, copy.deepcopy({"id": segments[1], **product_of(data, segments[1])})
        if route == ("GET", "cart", 1):
            return 200, cart_json(data)
        if route == ("GET", "orders", 1):
            return 200, copy.deepcopy({"orders": orders(data)})
        if route == ("GET", "orders", 2):
            return 200, copy.deepcopy(order_of(data, segments[1]))
    body = read_json() if method in ("POST", "PUT") else {}
    if not isinstance(body, dict):
        raise HttpError(400, "the body must be a JSON object")
    with states.lock:
        state = states.of(user)
        data = data_of(state)
        status = 200
        if route == ("POST", "cart", 1):
            set_quantity(data, body.get("product_id"), quantity_of(body.get("quantity", 1), least=1), add=True)
            result = cart_json(data)
        elif route == ("DELETE", "cart", 1):
            data["cart"] = {}
            result = cart_json(data)
        elif route == ("PUT", "cart", 2):
            set_quantity(data, segments[1], quantity_of(body.get("quantity"), least=0))
            result = cart_json(data)
        elif route == ("DELETE", "cart", 2):
            product_of(data, segments[1])
            cart(data).pop(segments[1], None)
            result = cart_json(data)
        elif route == ("POST", "checkout", 1):
            result, status = copy.deepcopy(checkout(data, body.get("name"), body.get("address"))), 201
        else:
            raise HttpError(404, f"no route {method} /api{path}")
        bump(state)
        return status, result
