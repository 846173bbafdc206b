"""The ``proxy`` service: a recording forward HTTP(S) proxy, run by python3 inside a container
(``python3 -m osworld_servers.proxy``).

Plain HTTP requests in absolute form (``GET http://host:port/path``) are forwarded; ``CONNECT
host:port`` is tunnelled as bytes (TLS is never intercepted, so a tunnel records its host only). What
each task's sandbox reaches is recorded under the task's key, by the address the request comes from:

- ``GET /api/register?cookie=KEY``, sent from inside a sandbox at its task's start, maps the sandbox's
  address to KEY from then on and empties KEY's record. The address's earlier mapping is replaced (Docker
  gives a removed sandbox's address to a new one) and no other address stays mapped to KEY. Requests from
  an address that no task registered are forwarded but recorded nowhere.
- ``GET /api/state?cookie=KEY``: ``{"user_id": KEY, "state": {"data": {"hosts": [...], "requests":
  [...]}, "meta": {}}}``, the mock websites' state protocol; ``DELETE /api/state?cookie=KEY`` empties
  it; ``POST /reset`` forgets every key and address; ``GET /health``.

Requests in origin form (``GET /health``) are this control API, never forwarded. With ``PROXY_CREDENTIALS``
(``user:password``) proxied requests need them as ``Proxy-Authorization`` (407 otherwise). With
``OSWORLD_PROXY_UPSTREAM`` (``http://user:password@host:port``) every request goes through that proxy, its
credentials sent as ``Proxy-Authorization``. Neither value is ever logged, printed, recorded or answered:
messages name "the upstream proxy" only. ``PROXY_BIND`` and ``PROXY_PORT`` say where to listen (port 0: a
free one); the address is printed on stdout once listening. Standard library only.

Modules: ``handler`` (the control API, forwarding, the answers), ``tunnel`` (``CONNECT``), ``records``
(what each key's sandbox reached), ``upstream`` (the proxy behind this one, and connection errors).
"""
