"""The ``website`` service: its server on loopback (pages, cart, checkout, the state protocol), its
built-in definition, the ``service_state`` getter, and the bundled website tasks in real runs.

The server runs as the container runs it (``python3 -m osworld_servers.website``, with only the standard
library in reach) on a free loopback port, so these protocol tests take a moment, not a container.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from pytest_osworld.evaluation.getters import get_getter
from pytest_osworld.evaluation.getters.service import ServiceStateError
from pytest_osworld.services import BUILTIN
from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.services.naming import state_key
from tests.support.bundled_runs import task_keys
from tests.support.paths import REPO
from tests.support.services import run_leftovers, services_context, website_server
from tests.support.shared_runs import SharedRun

TASKS = REPO / "tasks" / "website.jsonl"


@pytest.fixture(scope="module")
def shop() -> Iterator[str]:
    """The server's base URL: its own process, as the service's container runs it."""
    with website_server() as url:
        yield url


def client(shop: str) -> httpx.Client:
    """A visitor: keeps its cookies like a browser, follows no redirect (the tests read them)."""
    return httpx.Client(base_url=shop, trust_env=False, timeout=10)


def state(shop: str, cookie: str) -> dict[str, Any]:
    answer = httpx.get(f"{shop}/api/state", params={"cookie": cookie}, trust_env=False)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert body["user_id"] == cookie
    result: dict[str, Any] = body["state"]
    return result


def test_health_and_the_readiness_probe(shop: str) -> None:
    assert httpx.get(f"{shop}/health", trust_env=False).json() == {"status": "ok"}
    ready = httpx.get(f"{shop}/api/state?cookie=readycheck", trust_env=False)
    assert ready.status_code == 200
    assert ready.json()["state"]["meta"] == {"site": "shop", "revision": 0}
    assert "set-cookie" not in ready.headers  # the control plane never changes a browser's visitor
    missing = httpx.get(f"{shop}/api/state", trust_env=False)
    assert missing.status_code == 400
    assert missing.json() == {"error": "name the visitor: /api/state?cookie=ID or the cookie user_id=ID"}


def test_the_catalogue_and_a_products_page_as_a_browser_sees_them(shop: str) -> None:
    with client(shop) as visitor:
        home = visitor.get("/?cookie=page-visitor")
        assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
        assert home.headers["set-cookie"] == "user_id=page-visitor; Path=/; SameSite=Lax"
        assert visitor.cookies["user_id"] == "page-visitor"
        text = home.text
        assert '<tr id="product-p1"><td><a id="link-p1" href="/product/p1">Desk Lamp</a>' in text
        assert "<td>$24.90</td><td>5 in stock</td>" in text
        assert '<tr id="product-p8">' in text and "<td>Out of stock</td>" in text
        assert '<a id="nav-cart" href="/cart">Cart (0)</a>' in text

        mugs = visitor.get("/", params={"q": "MUG"}).text
        assert re.findall(r'id="link-(p\d)"', mugs) == ["p2", "p4", "p7"]
        assert "No product matches" in visitor.get("/", params={"q": "piano"}).text
        by_price = visitor.get("/", params={"sort": "price"}).text
        assert re.findall(r'id="link-(p\d)"', by_price) == ["p8", "p3", "p4", "p2", "p7", "p5", "p1", "p6"]

        lamp = visitor.get("/product/p1").text
        assert '<h1 id="title">Desk Lamp</h1>' in lamp and '<p id="price">Price: $24.90</p>' in lamp
        assert '<form id="add-form" method="post" action="/cart/add">' in lamp
        assert '<input id="quantity" name="quantity" type="number" min="1" value="1" autofocus>' in lamp
        towel = visitor.get("/product/p8").text
        assert 'id="add-form"' not in towel and '<p id="out-of-stock">' in towel
        missing = visitor.get("/product/p99")
        assert missing.status_code == 404 and "there is no product &#x27;p99&#x27;" in missing.text
        assert visitor.get("/nowhere").status_code == 404
    # A visitor with neither cookie nor ?cookie= gets an id of its own.
    first, second = httpx.get(f"{shop}/", trust_env=False), httpx.get(f"{shop}/", trust_env=False)
    assert first.cookies["user_id"].startswith("anon-") and first.cookies["user_id"] != second.cookies["user_id"]


def test_cart_and_checkout_through_the_html_forms(shop: str) -> None:
    with client(shop) as visitor:
        visitor.get("/?cookie=form-visitor")  # from here on the cookie alone names the visitor
        added = visitor.post("/cart/add", data={"product_id": "p3", "quantity": "2"})
        assert added.status_code == 303 and added.headers["location"] == "/cart"
        visitor.post("/cart/add", data={"product_id": "p3", "quantity": "1"})  # adds to the line
        visitor.post("/cart/add", data={"product_id": "p5", "quantity": "1"})
        visitor.post("/cart/add", data={"product_id": "p1", "quantity": "1"})
        cart = visitor.get("/cart").text
        assert re.findall(r'<tr id="cart-(p\d)">', cart) == ["p1", "p3", "p5"]  # catalogue order
        assert 'id="qty-p3" name="quantity" type="number" min="0" value="3"' in cart
        assert '<p id="cart-total">Total: $57.49</p>' in cart and "Cart (5)" in cart

        assert visitor.post("/cart/update", data={"product_id": "p3", "quantity": "4"}).status_code == 303
        assert visitor.post("/cart/remove", data={"product_id": "p5"}).status_code == 303
        visitor.post("/cart/add", data={"product_id": "p2", "quantity": "1"})
        visitor.post("/cart/update", data={"product_id": "p2", "quantity": "0"})  # 0 takes the line out
        assert state(shop, "form-visitor")["data"]["cart"] == {"p3": 4, "p1": 1}

        form = visitor.get("/checkout").text
        assert '<li id="summary-p1">1 x Desk Lamp: $24.90</li>' in form
        assert '<input id="name" name="name" value="" autofocus required>' in form
        placed = visitor.post("/checkout", data={"name": " Ada Lovelace ", "address": "12 St James Square"})
        assert placed.status_code == 303 and placed.headers["location"] == "/orders/1001?placed=1"
        page = visitor.get(placed.headers["location"]).text
        assert '<p id="order-status" class="notice">Thank you! Your order 1001 has been placed.</p>' in page
        assert "<li>4 x Notebook A5 at $4.20</li>" in page and "Total: $41.70" in page
        assert "Ship to: Ada Lovelace, 12 St James Square" in page
        assert '<tr id="order-1001">' in visitor.get("/orders").text
        assert '<p id="cart-empty">' in visitor.get("/cart").text

    data = state(shop, "form-visitor")["data"]
    assert data["cart"] == {}
    assert data["orders"] == [
        {
            "id": "1001",
            "items": [
                {"product_id": "p1", "name": "Desk Lamp", "price_cents": 2490, "quantity": 1},
                {"product_id": "p3", "name": "Notebook A5", "price_cents": 420, "quantity": 4},
            ],
            "total_cents": 4170,
            "shipping": {"name": "Ada Lovelace", "address": "12 St James Square"},
        }
    ]
    assert data["products"]["p1"]["stock"] == 4 and data["products"]["p3"]["stock"] == 26


def test_form_mistakes_are_shown_on_the_page_and_change_nothing(shop: str) -> None:
    with client(shop) as visitor:
        visitor.get("/?cookie=mistakes")
        empty = visitor.post("/checkout", data={"name": "A", "address": "B"})
        assert (
            empty.status_code == 409 and '<p id="error" class="error" role="alert">the cart is empty</p>' in empty.text
        )
        too_many = visitor.post("/cart/add", data={"product_id": "p5", "quantity": "4"})
        assert too_many.status_code == 409 and "only 3 of Wool Scarf in stock" in too_many.text
        assert '<h1 id="title">Wool Scarf</h1>' in too_many.text  # the product's page again
        sold_out = visitor.post("/cart/add", data={"product_id": "p8", "quantity": "1"})
        assert sold_out.status_code == 409 and "Tea Towel is out of stock" in sold_out.text
        bad = visitor.post("/cart/add", data={"product_id": "p1", "quantity": "two"})
        assert bad.status_code == 400 and "quantity must be a whole number, got &#x27;two&#x27;" in bad.text
        assert visitor.post("/cart/add", data={"product_id": "p99", "quantity": "1"}).status_code == 404
        visitor.post("/cart/add", data={"product_id": "p1", "quantity": "1"})
        nameless = visitor.post("/checkout", data={"name": "  ", "address": "7 Harbour Road"})
        assert nameless.status_code == 400 and "give a shipping name and address" in nameless.text
        assert 'value="7 Harbour Road"' in nameless.text  # what was typed is kept
    data = state(shop, "mistakes")["data"]
    assert data["cart"] == {"p1": 1} and data["orders"] == []


def test_cart_and_checkout_through_the_json_api(shop: str) -> None:
    with client(shop) as api:
        api.cookies.set("user_id", "json-visitor")  # the cookie header alone names the visitor
        products = api.get("/api/products").json()["products"]
        assert [p["id"] for p in products] == [f"p{i}" for i in range(1, 9)]
        assert api.get("/api/products/p2").json()["price_cents"] == 850
        assert api.post("/api/cart", json={"product_id": "p2", "quantity": 2}).status_code == 200
        api.post("/api/cart", json={"product_id": "p6"})  # one by default
        changed = api.put("/api/cart/p2", json={"quantity": 5}).json()
        assert changed == {
            "items": [
                {
                    "product_id": "p2",
                    "name": "Ceramic Mug",
                    "price_cents": 850,
                    "quantity": 5,
                    "line_total_cents": 4250,
                },
                {
                    "product_id": "p6",
                    "name": "Fountain Pen",
                    "price_cents": 3200,
                    "quantity": 1,
                    "line_total_cents": 3200,
                },
            ],
            "total_cents": 7450,
        }
        assert api.delete("/api/cart/p6").json()["total_cents"] == 4250
        assert api.post("/api/cart", json={"product_id": "p99"}).status_code == 404
        assert api.put("/api/cart/p2", json={"quantity": -1}).json() == {"error": "quantity must be at least 0, got -1"}
        assert api.put("/api/cart/p2", json={"quantity": 13}).status_code == 409
        assert api.post("/api/checkout", json={"name": "Grace Hopper"}).status_code == 400
        order = api.post("/api/checkout", json={"name": "Grace Hopper", "address": "7 Harbour Road"})
        assert order.status_code == 201
        assert order.json()["id"] == "1001" and order.json()["total_cents"] == 4250
        assert api.get("/api/cart").json() == {"items": [], "total_cents": 0}
        assert api.get("/api/orders").json()["orders"] == [order.json()]
        assert api.get("/api/orders/1001").json() == order.json()
        assert api.get("/api/orders/1002").status_code == 404
        assert api.get("/api/products/p2").json()["stock"] == 7
        assert api.post("/api/checkout", json={"name": "G", "address": "H"}).json() == {"error": "the cart is empty"}
        assert api.post("/api/cart", content=b"{not json").json() == {"error": "the body is not JSON"}
        assert api.get("/api/nothing").status_code == 404


def test_the_state_protocol_put_patch_delete(shop: str) -> None:
    url = f"{shop}/api/state"
    with httpx.Client(trust_env=False) as http:
        before = state(shop, "proto")
        assert before["data"]["cart"] == {} and len(before["data"]["products"]) == 8
        # PUT replaces the whole state.
        one = {"products": {"x1": {"name": "Kite", "category": "Toys", "price_cents": 999, "stock": 2}}, "cart": {}}
        put = http.put(url, params={"cookie": "proto"}, json={"data": one, "meta": {"site": "shop"}})
        assert put.json() == {"user_id": "proto", "state": {"data": one, "meta": {"site": "shop", "revision": 1}}}
        page = http.get(f"{shop}/?cookie=proto").text
        assert re.findall(r'id="link-(\w+)"', page) == ["x1"] and "$9.99" in page
        # PATCH merges: objects key by key, null removes a key, a list replaces.
        patch = {"data": {"products": {"x1": {"stock": 5}, "x2": {"name": "Yo-yo", "price_cents": 150, "stock": 1}}}}
        http.patch(url, params={"cookie": "proto"}, json=patch)
        http.patch(url, params={"cookie": "proto"}, json={"cart": {"x1": 2}, "orders": ["kept as given"]})
        merged = http.patch(url, params={"cookie": "proto"}, json={"data": {"products": {"x2": None}}}).json()
        assert merged["state"]["data"] == {
            "products": {"x1": {"name": "Kite", "category": "Toys", "price_cents": 999, "stock": 5}},
            "cart": {"x1": 2},
            "orders": ["kept as given"],
        }
        assert merged["state"]["meta"]["revision"] == 4
        # The cookie header names the same visitor as ?cookie=.
        by_header = http.get(url, headers={"Cookie": "theme=dark; user_id=proto"}).json()
        assert by_header == merged
        # A bare object is the data; DELETE goes back to the initial state.
        assert http.put(url, params={"cookie": "proto"}, json={"cart": {}}).json()["state"]["data"] == {"cart": {}}
        reset = http.delete(url, params={"cookie": "proto"}).json()
        assert reset == {"user_id": "proto", "state": before}
        assert state(shop, "proto") == before
        wrong = http.put(url, params={"cookie": "proto"}, json=[1, 2])
        assert wrong.status_code == 400 and "must be a JSON object" in wrong.json()["error"]
        assert http.post(url, params={"cookie": "proto"}, json={}).status_code == 405
        assert http.put(url, params={"cookie": "proto"}, content=b"nope").status_code == 400
        assert state(shop, "proto") == before


def test_each_cookie_keeps_its_own_state(shop: str) -> None:
    with client(shop) as a, client(shop) as b:
        a.get("/?cookie=iso-a")
        b.get("/?cookie=iso-b")
        a.post("/cart/add", data={"product_id": "p6", "quantity": "3"})
        b.post("/cart/add", data={"product_id": "p1", "quantity": "1"})
        a.post("/checkout", data={"name": "A", "address": "a street"})
        assert "Cart (1)" in b.get("/cart").text and "no orders yet" in b.get("/orders").text
    httpx.patch(f"{shop}/api/state?cookie=iso-a", json={"data": {"products": {"p1": {"stock": 0}}}}, trust_env=False)
    a_state, b_state = state(shop, "iso-a")["data"], state(shop, "iso-b")["data"]
    assert [o["shipping"]["name"] for o in a_state["orders"]] == ["A"] and b_state["orders"] == []
    assert a_state["products"]["p6"]["stock"] == 4 and b_state["products"]["p6"]["stock"] == 7
    assert a_state["products"]["p1"]["stock"] == 0 and b_state["products"]["p1"]["stock"] == 5
    assert b_state["cart"] == {"p1": 1}
    httpx.delete(f"{shop}/api/state?cookie=iso-a", trust_env=False)
    assert state(shop, "iso-b")["data"]["cart"] == {"p1": 1}  # a reset of one leaves the other


def test_the_builtin_definition() -> None:
    website = BUILTIN["website"]
    assert website.build == "desktop" and website.image is None and not website.exclusive
    assert website.ports == [80] and website.env == {"WEBSITE_PORT": "80"}
    assert website.hostnames("osworld.test") == ["website.osworld.test", "shop.osworld.test"]
    assert website.readiness.path == "/api/state?cookie=readycheck" and website.probe_port == 80
    assert website.reset is not None and website.reset.state_key == "cookie" and website.reset.http is None
    assert website.entrypoint == [
        "env",
        "PYTHONPATH=/usr/local/lib/pytest-osworld",
        "python3",
        "-m",
        "osworld_servers.website",
    ]


def access(base: str, key: str | None) -> ServiceAccess:
    return ServiceAccess(
        name="website", hostname="website.osworld.test", ports=(80,), state_key=key, host_urls={80: base}
    )


def test_service_state_getter_reads_the_tasks_own_state(shop: str, tmp_path: Path) -> None:
    getter = get_getter("service_state")
    key = "run-1-chrome/website-x#r2"  # a real task key: '/' and '#' reach the server intact
    with httpx.Client(base_url=shop, trust_env=False) as api:
        api.cookies.set("user_id", key)
        api.post("/api/cart", json={"product_id": "p3", "quantity": 2})
        api.post("/api/checkout", json={"name": "Ada", "address": "Street 1"})
    ctx = services_context(tmp_path, {"website": access(shop, key)})
    try:
        whole = getter(ctx, {"type": "service_state", "service": "website"})
        assert whole == state(shop, key)  # the protocol's answer gives its state
        orders = getter(
            ctx, {"type": "service_state", "service": "website", "path": "/api/state", "key": "data.orders"}
        )
        assert [o["total_cents"] for o in orders] == [840]
        assert getter(ctx, {"type": "service_state", "service": "website", "key": "data.orders.0.id"}) == "1001"
        assert getter(ctx, {"type": "service_state", "service": "website", "key": "data.orders.-1.id"}) == "1001"
        for missing in ("data.orders.1", "data.nothing", "data.orders.x", "meta.revision.deeper"):
            assert getter(ctx, {"type": "service_state", "service": "website", "key": missing}) is None
        # Another cookie, and another path whose JSON is taken whole.
        other = {"type": "service_state", "service": "website", "cookie": "someone-else", "key": "data.orders"}
        assert getter(ctx, other) == []
        product = {"type": "service_state", "service": "website", "path": "/api/products/p3", "key": "stock"}
        assert getter(ctx, product) == 28

        with pytest.raises(ServiceStateError) as caught:
            getter(ctx, {"type": "service_state", "service": "forge"})
        assert str(caught.value) == (
            "the task does not hold the service 'forge' (it holds: website); list it in the task's \"services\""
        )
        with pytest.raises(ServiceStateError, match='give "service"'):
            getter(ctx, {"type": "service_state"})
        with pytest.raises(ServiceStateError, match=r"service website: GET /api/nothing answered 404"):
            getter(ctx, {"type": "service_state", "service": "website", "path": "/api/nothing"})
        with pytest.raises(ServiceStateError, match=r"service website: GET /product/p1 answered no JSON"):
            getter(ctx, {"type": "service_state", "service": "website", "path": "/product/p1"})
    finally:
        ctx.close()
    # No key of its own (and none given): the service answers its error, which fails the evaluation.
    keyless = services_context(tmp_path, {"website": access(shop, None)})
    try:
        with pytest.raises(ServiceStateError, match=r"GET /api/state answered 400: .*name the visitor"):
            getter(keyless, {"type": "service_state", "service": "website"})
    finally:
        keyless.close()
    # A service that does not answer at all.
    down = services_context(tmp_path, {"website": access("http://127.0.0.1:9", "k")})
    try:
        with pytest.raises(ServiceStateError, match=r"^service website: GET /api/state got no answer"):
            getter(down, {"type": "service_state", "service": "website"})
    finally:
        down.close()


# --- the bundled tasks in real runs


@pytest.mark.docker
def test_the_bundled_website_tasks_pass_with_the_oracle_on_one_shared_container(
    bundled_oracle: SharedRun, engine: docker.DockerClient
) -> None:
    keys = task_keys(TASKS)
    assert keys == {"chrome/website-cart-checkout", "chrome/website-cheapest-mug"}
    records = {key: record for key, record in bundled_oracle.records().items() if key in keys}
    assert set(records) == keys, bundled_oracle.result.stdout.str()
    assert all(r["score"] == 1.0 and r["termination"] == "done" for r in records.values())
    used = [r["services"]["website"] for r in records.values()]
    assert len({u["id"] for u in used}) == 1  # one website container for the run (two workers)
    run_id = bundled_oracle.run_id
    assert {u["state_key"] for u in used} == {state_key(run_id, key) for key in records}  # a cookie per task
    assert all("needs_services" in r["markers"] for r in records.values())
    assert run_leftovers(engine, run_id) == ([], [])


@pytest.mark.docker
def test_the_bundled_website_tasks_fail_with_the_null_agent(
    bundled_null: SharedRun, engine: docker.DockerClient
) -> None:
    keys = task_keys(TASKS)
    records = {key: record for key, record in bundled_null.records().items() if key in keys}
    assert set(records) == keys and all(r["score"] == 0.0 and not r["masked"] for r in records.values())
    outcomes = bundled_null.task_outcomes()
    assert {key: outcomes.get(key) for key in keys} == dict.fromkeys(keys, "FAILED")
    assert run_leftovers(engine, bundled_null.run_id) == ([], [])
