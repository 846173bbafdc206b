"""The ``website`` service's pages as a browser reaches them: the page a GET shows, and what a form's
POST does (a redirect to the next page, or the form's page again with what went wrong)."""

from __future__ import annotations

from urllib.parse import quote, unquote, urlencode

from ..base import HttpError
from ..state import States, bump
from .api import data_of
from .pages import cart_page, catalogue_page, checkout_page, order_page, orders_page, product_page
from .shop import cart, checkout, product_of, products, quantity_of, set_quantity


def segments_of(path: str) -> list[str]:
    return [unquote(s) for s in path.strip("/").split("/")] if path != "/" else []


def page(states: States, user: str, path: str, query: dict[str, str]) -> str:
    """The HTML of the page at ``path`` for the visitor ``user``."""
    segments = segments_of(path)
    with states.lock:
        data = data_of(states.of(user))
        if not segments:
            return catalogue_page(data, query)
        if segments[0] == "product" and len(segments) == 2:
            return product_page(data, segments[1])
        if segments == ["cart"]:
            return cart_page(data)
        if segments == ["checkout"]:
            return checkout_page(data)
        if segments == ["orders"]:
            return orders_page(data)
        if segments[0] == "orders" and len(segments) == 2:
            return order_page(data, segments[1], placed=query.get("placed") == "1")
    raise HttpError(404, f"there is no page {path}")


def submit(states: States, user: str, path: str, fields: dict[str, str]) -> str | tuple[int, str]:
    """A form posted to ``path``: where to go next, or the status and page that show what went wrong."""
    segments = segments_of(path)
    with states.lock:
        state = states.of(user)
        data = data_of(state)
        try:
            if segments == ["cart", "add"]:
                set_quantity(data, fields.get("product_id"), quantity_of(fields.get("quantity"), least=1), add=True)
                location = "/cart"
            elif segments == ["cart", "update"]:
                set_quantity(data, fields.get("product_id"), quantity_of(fields.get("quantity"), least=0))
                location = "/cart"
            elif segments == ["cart", "remove"]:
                product_of(data, fields.get("product_id"))
                cart(data).pop(str(fields.get("product_id")), None)
                location = "/cart"
            elif segments == ["checkout"]:
                order = checkout(data, fields.get("name"), fields.get("address"))
                location = "/orders/" + quote(order["id"]) + "?" + urlencode({"placed": 1})
            else:
                raise HttpError(404, f"there is no form {path}")
        except HttpError as exc:
            if exc.status == 404:
                raise
            # The form's own page again, with what went wrong and what was typed.
            if segments == ["checkout"]:
                form = checkout_page(data, exc.message, fields.get("name", ""), fields.get("address", ""))
            elif segments == ["cart", "add"] and str(fields.get("product_id")) in products(data):
                form = product_page(data, str(fields.get("product_id")), exc.message)
            else:
                form = cart_page(data, exc.message)
            return exc.status, form
        bump(state)
    return location
