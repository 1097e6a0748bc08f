"""A failure to reach a server, worded by its cause: connection refused, timed out, no route, name not resolved, TLS.

The exception an HTTP client raises is a wrapper ("ConnectError: [Errno 111] Connect call failed ('127.0.0.1',
59999)"); the cause is in the OSError, socket or ssl error it was raised from. Read from that chain, with the
wrapper's text as the last resort, so a card says "connection refused" where it said "not answering".
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator

_BY_ERRNO = {
    errno.ECONNREFUSED: "connection refused",
    errno.ETIMEDOUT: "timed out connecting",
    errno.EHOSTUNREACH: "no route to host",
    errno.ENETUNREACH: "network unreachable",
    errno.ECONNRESET: "connection reset",
    errno.ECONNABORTED: "connection aborted",
    errno.EPIPE: "connection closed",
}
# The same causes as the words an exception's text carries when its errno was lost on the way up.
_BY_TEXT = (
    ("refused", "connection refused"),
    ("Errno 111", "connection refused"),
    ("Name or service not known", "name not resolved"),
    ("nodename nor servname", "name not resolved"),
    ("Temporary failure in name resolution", "name not resolved"),
    ("No address associated", "name not resolved"),
    ("No route to host", "no route to host"),
    ("Network is unreachable", "network unreachable"),
    ("CERTIFICATE_VERIFY_FAILED", "TLS: certificate not trusted"),
    ("SSL", "TLS failed"),
    ("timed out", "timed out connecting"),
    ("Connection reset", "connection reset"),
)


CAUSE_WORDS = frozenset({*_BY_ERRNO.values(), *(w for _, w in _BY_TEXT), "name not resolved", "TLS"})
"""The words connect_cause says a cause with: a reason holding one of them is about reaching the server at all."""


def names_a_connect_cause(reason: str) -> bool:
    return any(w in reason for w in CAUSE_WORDS)


def _chain(e: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def connect_cause(e: BaseException) -> str | None:
    """The cause in a few words, or None when the chain names none of the known ones."""
    for ex in _chain(e):
        if isinstance(ex, ssl.SSLCertVerificationError):
            return f"TLS: certificate not trusted ({ex.verify_message or ex})"
        if isinstance(ex, ssl.SSLError):
            return f"TLS failed ({getattr(ex, 'reason', None) or ex})"
        if isinstance(ex, socket.gaierror):
            return "name not resolved"
        if isinstance(ex, OSError) and ex.errno in _BY_ERRNO:
            return _BY_ERRNO[ex.errno]
        if isinstance(ex, TimeoutError) or type(ex).__name__ in ("ConnectTimeout", "TimeoutException"):
            return "timed out connecting"
    text = " ".join(str(ex) for ex in _chain(e))
    return next((words for needle, words in _BY_TEXT if needle in text), None)


def connect_failure(e: BaseException) -> str:
    """`cause (the error's own text)`, or the text alone when no cause is known."""
    text = str(e) or type(e).__name__
    cause = connect_cause(e)
    if cause is None or cause == text:
        return text
    return f"{cause} ({text})"
