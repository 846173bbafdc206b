"""The shop of the ``website`` service: its catalogue, each visitor's cart, checkout and orders, kept
in the ``data`` of the visitor's state (``servers/state.py``). ``data`` holds ``products`` (by id:
name, category, price_cents, stock, description), ``cart`` (product id -> quantity) and ``orders``
(id from 1001, items in catalogue order, total_cents, shipping name and address). What a visitor may
not do is an ``HttpError``, shown on the page or answered as ``{"error": ...}``."""

from __future__ import annotations

import copy
from typing import Any

from ..base import HttpError

SITE = "Corner Market"


def _product(name: str, category: str, price_cents: int, stock: int, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "category": category,
        "price_cents": price_cents,
        "stock": stock,
        "description": description,
    }


INITIAL_DATA: dict[str, Any] = {
    "products": {
        "p1": _product("Desk Lamp", "Lighting", 2490, 5, "An adjustable steel lamp with a warm LED bulb."),
        "p2": _product("Ceramic Mug", "Kitchen", 850, 12, "A 350 ml stoneware mug, dishwasher safe."),
        "p3": _product("Notebook A5", "Stationery", 420, 30, "96 dotted pages, lay-flat binding."),
        "p4": _product("Enamel Mug", "Kitchen", 675, 8, "A light enamel camping mug, 300 ml."),
        "p5": _product("Wool Scarf", "Clothing", 1999, 3, "A soft merino scarf, 180 cm long."),
        "p6": _product("Fountain Pen", "Stationery", 3200, 7, "A medium-nib pen with a converter for bottled ink."),
        "p7": _product("Travel Mug", "Kitchen", 1500, 4, "An insulated 450 ml mug with a leak-proof lid."),
        "p8": _product("Tea Towel", "Kitchen", 399, 0, "A linen tea towel with a hanging loop."),
    },
    "cart": {},
    "orders": [],
}
FIRST_ORDER = 1001


def initial_data() -> dict[str, Any]:
    """A new visitor's data: the catalogue, an empty cart, no orders."""
    return copy.deepcopy(INITIAL_DATA)


def products(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = data.get("products")
    if not isinstance(found, dict):
        return {}
    return {str(pid): p for pid, p in found.items() if isinstance(p, dict)}


def cart(data: dict[str, Any]) -> dict[str, int]:
    """The cart (product id -> quantity), as stored; a state without one gets an empty one."""
    found = data.get("cart")
    if not isinstance(found, dict):
        found = data["cart"] = {}
    return found


def orders(data: dict[str, Any]) -> list[dict[str, Any]]:
    found = data.get("orders")
    if not isinstance(found, list):
        found = data["orders"] = []
    return found


def number(product: dict[str, Any], key: str) -> int:
    value = product.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def money(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


def cart_lines(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The cart's lines in catalogue order (lines of products no longer in the catalogue are left out)."""
    items = cart(data)
    lines = []
    for pid, product in products(data).items():
        quantity = items.get(pid)
        if isinstance(quantity, int) and quantity > 0:
            price = number(product, "price_cents")
            lines.append(
                {
                    "product_id": pid,
                    "name": str(product.get("name", pid)),
                    "price_cents": price,
                    "quantity": quantity,
                    "line_total_cents": price * quantity,
                }
            )
    return lines


def cart_json(data: dict[str, Any]) -> dict[str, Any]:
    lines = cart_lines(data)
    return {"items": lines, "total_cents": sum(line["line_total_cents"] for line in lines)}


def quantity_of(value: Any, *, least: int) -> int:
    try:
        quantity = int(value)
    except (TypeError, ValueError):
        raise HttpError(400, f"quantity must be a whole number, got {value!r}") from None
    if quantity < least:
        raise HttpError(400, f"quantity must be at least {least}, got {quantity}")
    return quantity


def product_of(data: dict[str, Any], pid: Any) -> dict[str, Any]:
    product = products(data).get(str(pid))
    if product is None:
        raise HttpError(404, f"there is no product {pid!r}")
    return product


def set_quantity(data: dict[str, Any], pid: Any, quantity: int, *, add: bool = False) -> None:
    product = product_of(data, pid)
    items = cart(data)
    pid = str(pid)
    current = items.get(pid)
    wanted = (current if add and isinstance(current, int) else 0) + quantity
    stock = number(product, "stock")
    if wanted > stock:
        name = product.get("name", pid)
        raise HttpError(409, f"only {stock} of {name} in stock" if stock else f"{name} is out of stock")
    if wanted <= 0:
        items.pop(pid, None)
    else:
        items[pid] = wanted


def checkout(data: dict[str, Any], name: Any, address: Any) -> dict[str, Any]:
    name = str(name or "").strip()
    address = str(address or "").strip()
    if not name or not address:
        raise HttpError(400, "give a shipping name and address")
    lines = cart_lines(data)
    if not lines:
        raise HttpError(409, "the cart is empty")
    catalogue = products(data)
    for line in lines:
        if line["quantity"] > number(catalogue[line["product_id"]], "stock"):
            raise HttpError(409, f"only {number(catalogue[line['product_id']], 'stock')} of {line['name']} in stock")
    for line in lines:
        product = catalogue[line["product_id"]]
        product["stock"] = number(product, "stock") - line["quantity"]
    previous = orders(data)
    order = {
        "id": str(FIRST_ORDER + len(previous)),
        "items": [{k: line[k] for k in ("product_id", "name", "price_cents", "quantity")} for line in lines],
        "total_cents": sum(line["line_total_cents"] for line in lines),
        "shipping": {"name": name, "address": address},
    }
    previous.append(order)
    data["cart"] = {}
    return order


def order_of(data: dict[str, Any], oid: str) -> dict[str, Any]:
    for order in orders(data):
        if isinstance(order, dict) and str(order.get("id")) == oid:
            return order
    raise HttpError(404, f"there is no order {oid!r}")
