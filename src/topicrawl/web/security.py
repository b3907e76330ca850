"""Headers on every response, the access token, and the Host check of the dashboard.

Crawled content is hostile, so every response carries a strict Content-Security-Policy
(scripts and styles from the app only, nothing inline, no plugins, never framed) and
``nosniff``. A route may send its own policy (the raw page route sends a ``sandbox`` one);
the default is only added where none was set.

When a token is configured, every route asks for it (``/api`` and ``/metrics`` too): as
``Authorization: Bearer <token>``, or as the cookie that ``?token=<token>`` on any page sets
(the browser is then redirected to the same address without the token in it). Without a
token the dashboard listens on loopback only, and accepts only loopback ``Host`` names, so a
web page elsewhere cannot reach it through DNS rebinding.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COOKIE", "CSP", "SecurityMiddleware", "loopback_hosts"]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
COOKIE = "topicrawl_token"

_COMMON = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
# Data is never cached (it is live, and may be private); the app's own files and the vendored
# libraries are revalidated by their ETag instead of being sent again.
_CACHED_PREFIXES = ("/static/", "/vendor/")


def loopback_hosts(port: int) -> frozenset[str]:
    """The ``Host`` header values a loopback-only dashboard answers to."""
    names = ("127.0.0.1", "localhost", "[::1]")
    return frozenset({*names, *(f"{name}:{port}" for name in names)})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class SecurityMiddleware:
    """Adds the security headers and enforces the token or the loopback Host.

    Args:
        app: the application.
        token: the access token, or None for none (then ``allowed_hosts`` must be given).
        allowed_hosts: the Host header values accepted; None accepts any (with a token).
    """

    def __init__(
        self, app: ASGIApp, *, token: str | None, allowed_hosts: Iterable[str] | None
    ) -> None:
        self._app = app
        self._token = token.encode() if token else None
        self._hosts = frozenset(allowed_hosts) if allowed_hosts is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {key.lower() for key, _ in headers}
                if b"content-security-policy" not in present:
                    headers.append((b"content-security-policy", CSP.encode()))
                headers.extend(h for h in _COMMON if h[0] not in present)
                if b"cache-control" not in present:
                    cached = scope["path"].startswith(_CACHED_PREFIXES)
                    headers.append((b"cache-control", b"no-cache" if cached else b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        refusal = self._refusal(scope)
        if refusal is not None:
            status, text, extra = refusal
            await _plain(send_with_headers, status, text, extra)
            return
        await self._app(scope, receive, send_with_headers)

    def _refusal(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        host = (_header(scope, b"host") or "").lower()
        if self._hosts is not None and host not in self._hosts:
            return 400, "unexpected Host header: open the dashboard at its loopback address\n", []
        if self._token is None:
            return None
        if self._bearer_ok(scope) or self._cookie_ok(scope):
            return None
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        given = [value for key, value in query if key == "token"]
        if given and hmac.compare_digest(given[-1].encode(), self._token):
            # Trade the token in the address for a cookie, and drop it from the address.
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            # One leading slash: "//host/..." would send the browser to another site.
            path = "/" + (scope.get("root_path", "") + scope["path"]).lstrip("/")
            location = path + (f"?{rest}" if rest else "")
            cookie = f"{COOKIE}={given[-1]}; HttpOnly; SameSite=Strict; Path=/"
            return 303, "", [(b"location", location.encode()), (b"set-cookie", cookie.encode())]
        return (
            401,
            "this dashboard needs its token (Authorization: Bearer, or ?token=)\n",
            [(b"www-authenticate", b'Bearer realm="topicrawl"')],
        )

    def _bearer_ok(self, scope: Scope) -> bool:
        assert self._token is not None
        value = _header(scope, b"authorization") or ""
        scheme, _, credentials = value.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode(), self._token
        )

    def _cookie_ok(self, scope: Scope) -> bool:
        assert self._token is not None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(_header(scope, b"cookie") or "")
        except CookieError:  # a malformed Cookie header is just no cookie
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), self._token)


async def _plain(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]]) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
