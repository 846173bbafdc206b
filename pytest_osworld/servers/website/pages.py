"""The pages of the ``website`` service: real HTML a browser agent uses (plain forms and links, ids on
the elements that matter), made from a visitor's ``data``."""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import quote

from .shop import SITE, cart, cart_lines, money, number, order_of, orders, product_of, products

STYLE = (
    "body{font-family:sans-serif;margin:0;color:#222}header{background:#2d4b3f;color:#fff;padding:12px 24px;"
    "display:flex;gap:24px;align-items:center}header a{color:#fff}main{padding:16px 24px;max-width:900px}"
    "table{border-collapse:collapse}td,th{padding:6px 12px;border-bottom:1px solid #ccc;text-align:left}"
    ".error{color:#a00;font-weight:bold}.notice{color:#060}form.inline{display:inline}"
    "label{display:block;margin-top:8px}input{font-size:16px;padding:4px}button{font-size:16px;margin:4px 0}"
)


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def layout(title: str, body: str, data: dict[str, Any]) -> str:
    count = sum(line["quantity"] for line in cart_lines(data))
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} - {SITE}</title>'
        f"<style>{STYLE}</style></head><body><header>"
        f'<a id="nav-home" href="/"><strong>{SITE}</strong></a>'
        f'<a id="nav-cart" href="/cart">Cart ({count})</a><a id="nav-orders" href="/orders">Orders</a>'
        f'</header><main id="main"><h1 id="title">{esc(title)}</h1>{body}</main></body></html>'
    )


def error_html(message: str) -> str:
    return f'<p id="error" class="error" role="alert">{esc(message)}</p>'


def stock_text(product: dict[str, Any]) -> str:
    stock = number(product, "stock")
    return f"{stock} in stock" if stock > 0 else "Out of stock"


def catalogue_page(data: dict[str, Any], query: dict[str, str]) -> str:
    q = query.get("q", "").strip()
    found = [
        (pid, p)
        for pid, p in products(data).items()
        if not q or q.lower() in f"{p.get('name', '')} {p.get('category', '')}".lower()
    ]
    if query.get("sort") == "price":
        found.sort(key=lambda item: number(item[1], "price_cents"))
    rows = "".join(
        f'<tr id="product-{esc(pid)}"><td><a id="link-{esc(pid)}" href="/product/{quote(pid)}">'
        f"{esc(p.get('name', pid))}</a></td><td>{esc(p.get('category', ''))}</td>"
        f"<td>{money(number(p, 'price_cents'))}</td><td>{stock_text(p)}</td></tr>"
        for pid, p in found
    )
    table = (
        '<table id="products"><thead><tr><th>Product</th><th>Category</th><th>Price</th><th>Stock</th></tr>'
        f"</thead><tbody>{rows}</tbody></table>"
        if found
        else f'<p id="no-results">No product matches {esc(q)}.</p>'
    )
    search = (
        '<form id="search-form" method="get" action="/"><label for="search">Search</label>'
        f'<input id="search" name="q" value="{esc(q)}"> <button id="search-button" type="submit">Search</button>'
        ' <a id="sort-price" href="/?sort=price">Sort by price</a></form>'
    )
    return layout("Catalogue", search + table, data)


def product_page(data: dict[str, Any], pid: str, error: str = "") -> str:
    p = product_of(data, pid)
    in_cart = cart(data).get(pid, 0)
    body = error_html(error) if error else ""
    body += (
        f'<p id="price">Price: {money(number(p, "price_cents"))}</p>'
        f'<p id="category">Category: {esc(p.get("category", ""))}</p>'
        f'<p id="stock">{stock_text(p)}</p><p id="description">{esc(p.get("description", ""))}</p>'
    )
    if in_cart:
        body += f'<p id="in-cart" class="notice">In your cart: {esc(in_cart)}</p>'
    if number(p, "stock") > 0:
        body += (
            '<form id="add-form" method="post" action="/cart/add">'
            f'<input type="hidden" name="product_id" value="{esc(pid)}">'
            '<label for="quantity">Quantity</label>'
            '<input id="quantity" name="quantity" type="number" min="1" value="1" autofocus>'
            ' <button id="add-to-cart" type="submit">Add to cart</button></form>'
        )
    else:
        body += '<p id="out-of-stock">This product cannot be ordered now.</p>'
    body += '<p><a id="back" href="/">Back to the catalogue</a></p>'
    return layout(str(p.get("name", pid)), body, data)


def cart_page(data: dict[str, Any], error: str = "") -> str:
    body = error_html(error) if error else ""
    lines = cart_lines(data)
    if not lines:
        body += '<p id="cart-empty">Your cart is empty.</p><p><a id="back" href="/">Back to the catalogue</a></p>'
        return layout("Cart", body, data)
    rows = ""
    for line in lines:
        pid = esc(line["product_id"])
        rows += (
            f'<tr id="cart-{pid}"><td><a href="/product/{quote(line["product_id"])}">{esc(line["name"])}</a></td>'
            f"<td>{money(line['price_cents'])}</td><td>"
            '<form class="inline" method="post" action="/cart/update">'
            f'<input type="hidden" name="product_id" value="{pid}">'
            f'<input id="qty-{pid}" name="quantity" type="number" min="0" value="{line["quantity"]}" '
            f'aria-label="Quantity of {esc(line["name"])}">'
            f' <button id="update-{pid}" type="submit">Update</button></form></td>'
            f'<td id="line-total-{pid}">{money(line["line_total_cents"])}</td><td>'
            '<form class="inline" method="post" action="/cart/remove">'
            f'<input type="hidden" name="product_id" value="{pid}">'
            f'<button id="remove-{pid}" type="submit">Remove</button></form></td></tr>'
        )
    total = sum(line["line_total_cents"] for line in lines)
    body += (
        '<table id="cart"><thead><tr><th>Product</th><th>Price</th><th>Quantity</th><th>Total</th><th></th></tr>'
        f'</thead><tbody>{rows}</tbody></table><p id="cart-total">Total: {money(total)}</p>'
        '<p><a id="checkout-link" href="/checkout">Proceed to checkout</a></p>'
    )
    return layout("Cart", body, data)


def checkout_page(data: dict[str, Any], error: str = "", name: str = "", address: str = "") -> str:
    body = error_html(error) if error else ""
    lines = cart_lines(data)
    if not lines:
        body += '<p id="cart-empty">Your cart is empty.</p><p><a id="back" href="/">Back to the catalogue</a></p>'
        return layout("Checkout", body, data)
    items = "".join(
        f'<li id="summary-{esc(line["product_id"])}">{esc(line["quantity"])} x {esc(line["name"])}: '
        f"{money(line['line_total_cents'])}</li>"
        for line in lines
    )
    total = sum(line["line_total_cents"] for line in lines)
    body += (
        f'<ul id="summary">{items}</ul><p id="checkout-total">Total: {money(total)}</p>'
        '<form id="checkout-form" method="post" action="/checkout">'
        f'<label for="name">Full name</label><input id="name" name="name" value="{esc(name)}" autofocus required>'
        f'<label for="address">Shipping address</label>'
        f'<input id="address" name="address" size="50" value="{esc(address)}" required>'
        '<p><button id="place-order" type="submit">Place order</button></p></form>'
    )
    return layout("Checkout", body, data)


def order_lines(order: dict[str, Any]) -> str:
    items = order.get("items") if isinstance(order.get("items"), list) else []
    return "".join(
        f"<li>{esc(item.get('quantity'))} x {esc(item.get('name'))} at {money(number(item, 'price_cents'))}</li>"
        for item in items or []
        if isinstance(item, dict)
    )


def orders_page(data: dict[str, Any]) -> str:
    found = [o for o in orders(data) if isinstance(o, dict)]
    if not found:
        return layout("Orders", '<p id="no-orders">You have no orders yet.</p>', data)
    rows = "".join(
        f'<tr id="order-{esc(o.get("id"))}"><td><a href="/orders/{quote(str(o.get("id")))}">Order {esc(o.get("id"))}'
        f"</a></td><td>{money(number(o, 'total_cents'))}</td></tr>"
        for o in found
    )
    return layout("Orders", f'<table id="orders"><tbody>{rows}</tbody></table>', data)


def order_page(data: dict[str, Any], oid: str, placed: bool) -> str:
    order = order_of(data, oid)
    shipping = order["shipping"] if isinstance(order.get("shipping"), dict) else {}
    body = (
        f'<p id="order-status" class="notice">Thank you! Your order {esc(oid)} has been placed.</p>' if placed else ""
    )
    body += (
        f'<ul id="order-items">{order_lines(order)}</ul>'
        f'<p id="order-total">Total: {money(number(order, "total_cents"))}</p>'
        f'<p id="order-shipping">Ship to: {esc(shipping.get("name", ""))}, {esc(shipping.get("address", ""))}</p>'
        '<p><a id="back" href="/">Back to the catalogue</a></p>'
    )
    return layout(f"Order {oid}", body, data)


BACK = '<p><a id="back" href="/">Back to the catalogue</a></p>'
