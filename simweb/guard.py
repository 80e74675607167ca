"""What the HTTP server answers, whoever asks: its own host names only, HEAD wherever GET, and
pages that run no script from elsewhere.

An ASGI middleware around the app (:func:`simweb.http.create_app` installs it):

- **Host allow-list.** A request whose ``Host`` is not one of the server's names gets 400, its
  Host never echoed into a redirect. A page on another site can make a visitor's browser send
  requests to 127.0.0.1 under that site's own name (DNS rebinding) and read the answers as its
  own; a server that answers only the names it was started under gives such a page nothing. The
  names are 127.0.0.1, localhost, [::1], the address the server is bound to, and those given
  with ``simweb serve --allow-host`` (a reverse proxy's, a machine's network name). A request
  without a Host header (HTTP/1.0) is answered: no browser sends one.
- **HEAD** is answered wherever GET is, with GET's status and headers and no body (uvicorn's
  ``Content-Length`` stays GET's, as RFC 9110 Section 9.3.2 allows).
- **Content-Security-Policy** on every HTML page: the related-pages page loads nothing and runs
  no script at all (``default-src 'none'``; its styles are inline), the API documentation runs
  only the scripts this server serves; neither can be framed by another site.
"""
from __future__ import annotations

import json
from collections.abc import Iterable

__all__ = ["LOCAL_HOSTS", "Guard", "host_names"]

#: The names a server on this machine is asked by, whatever address it is bound to.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_WILDCARDS = ("0.0.0.0", "::", "[::]", "")

#: The related-pages page: no script, no request of its own (its styles are in the page).
PAGE_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; "
               "frame-ancestors 'none'")
#: The API documentation (Swagger UI, ReDoc): scripts, styles and images served from here only.
DOCS_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
               "img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; form-action 'self'; "
               "base-uri 'self'; frame-ancestors 'none'")
_DOCS_PATHS = ("/docs", "/redoc")


def _name(host: str) -> str:
    """The host name of a Host header value or an address (``[::1]:8080`` → ``[::1]``,
    ``Example.org:80`` → ``example.org``, ``::1`` → ``[::1]``), lower-cased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    if host.count(":") > 1:  # a bare IPv6 address
        return f"[{host}]"
    name, colon, port = host.rpartition(":")
    return name if colon and port.isdigit() else host


def host_names(bound: str | None = None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host names a server bound to ``bound`` answers: the local ones, ``bound`` (unless it is
    a wildcard address) and ``extra``."""
    names = {_name(h) for h in LOCAL_HOSTS}
    if bound is not None and _name(bound) not in (_name(w) for w in _WILDCARDS):
        names.add(_name(bound))
    names.update(_name(h) for h in extra if h and h.strip())
    return frozenset(names)


class Guard:
    """ASGI middleware: the Host allow-list, HEAD as GET, and the pages' Content-Security-Policy."""

    def __init__(self, app, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        host = dict(scope.get("headers") or ()).get(b"host")
        if host is not None and _name(host.decode("latin-1")) not in self.hosts:
            return await _refuse_host(send, host.decode("latin-1"), self.hosts) if scope["type"] == "http" else None
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        head = scope["method"] == "HEAD"
        if head:
            scope = {**scope, "method": "GET"}
        docs = scope["path"].startswith(_DOCS_PATHS)

        async def guarded(message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or ())
                kind = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if kind.startswith(b"text/html"):
                    headers.append((b"content-security-policy", (DOCS_POLICY if docs else PAGE_POLICY).encode()))
                    headers.append((b"x-content-type-options", b"nosniff"))
                message = {**message, "headers": headers}
            elif head and message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app(scope, receive, guarded)


async def _refuse_host(send, host: str, hosts: frozenset[str]) -> None:
    shown = host if len(host) <= 100 else host[:100] + "…"
    detail = (f"Host header {shown!r} is not a name of this server (it answers {', '.join(sorted(hosts))}); "
              "a page of another site cannot read it through DNS rebinding. To serve under this name (a reverse "
              "proxy's, the machine's network name), start it with: simweb serve --allow-host NAME")
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
