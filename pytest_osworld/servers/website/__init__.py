"""The ``website`` service: "Corner Market", a mock web shop of the project's own, run by python3
inside a container (``python3 -m osworld_servers.website``).

Real HTML pages a browser agent can use: the catalogue (``/``, ``?q=`` search, ``?sort=price``), a
product's page (``/product/<id>``), the cart (``/cart``: add, change a quantity, remove), checkout
(``/checkout``: name and address, the cart becomes an order) and the orders (``/orders``,
``/orders/<id>``) (``pages``, ``views``); the same actions as JSON under ``/api/`` (``api``); the shop
itself (``shop``); state per visitor read and written by OSWorld-V2's state protocol
(``servers/state.py``); ``GET /health``, and ``GET /api/state?cookie=readycheck`` answers 200 like
every cookie (the readiness probe). Who the visitor is and which part answers: ``app``.
"""
