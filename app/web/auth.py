"""The token in front of every path, the websocket included.

A browser's first visit carries it as `?token=`: the answer sets it as an HttpOnly, SameSite=Strict cookie (Secure
over TLS) and redirects to the same URL without it, so the token leaves the address bar and the browser history.
Scrapers send `Authorization: Bearer TOKEN`. Anything else is a 401 with a one-line reason, before any handler
runs: no page, no session process, no metrics.
"""

from __future__ import annotations

import hmac

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from multidict import MultiDict

COOKIE = "llamaherd_serve"
# Bound: a token is at most 512 characters (api_key.KEY_RULE); a longer header or cookie is not compared at all.
MAX_PRESENTED = 1024

UNAUTHORIZED = (
    "401 Unauthorized: llamaherd serve needs its token. In a browser, open the address `llamaherd serve` printed "
    "with ?token=TOKEN once (`llamaherd serve --show-token` prints the token); a scraper sends "
    "Authorization: Bearer TOKEN.\n"
)

NO_STORE = "no-store"


def _matches(presented: str | None, token: str) -> bool:
    if not presented or len(presented) > MAX_PRESENTED:
        return False
    return hmac.compare_digest(presented.encode(), token.encode())


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def token_middleware(token: str, secure_cookie: bool) -> Middleware:
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if _matches(request.cookies.get(COOKIE), token) or _matches(_bearer(request), token):
            return await handler(request)
        if "token" in request.query and _matches(request.query.get("token"), token):
            rest = MultiDict((k, v) for k, v in request.query.items() if k != "token")
            headers = {
                "Location": str(request.rel_url.with_query(rest)),
                "Cache-Control": NO_STORE,
                "Referrer-Policy": "no-referrer",
            }
            answer = web.Response(status=303, headers=headers)
            answer.set_cookie(COOKIE, token, httponly=True, samesite="Strict", secure=secure_cookie, path="/")
            return answer
        challenge = {"WWW-Authenticate": 'Bearer realm="llamaherd"', "Cache-Control": NO_STORE}
        return web.Response(status=401, text=UNAUTHORIZED, headers=challenge)

    return check
