"""The toolkit's one exception tree: every error a caller can see from the REST client,
the loaders and the CLI. Low-level httpx errors are chained (``raise ... from exc``).

::

    ToolkitError
    ├── InvalidRequest            refused before anything was sent (also a ValueError)
    ├── PaginationLoop            the listing restarted or never ended (spec 4.2 rule 5)
    ├── WriteError                a file could not be written: disk full, read-only, too
    │                             large, no permission (also an OSError, with its errno)
    ├── TransportError            the network failed (connect, read, timeout), after retries
    └── ServiceError              the service answered with a status we cannot accept
        ├── InvalidResponse       2xx whose body is not what the contract says
        ├── BadRequest            400 or 422: the service refused the input
        ├── AuthenticationError   401: bad API key/secret, or a token refused twice
        ├── PermissionDenied      403: the API key lacks a permission
        ├── OrderNotFound         404 on fetchOrder / cancel: no such order here
        ├── RouteNotActive        404 on a limit route: published but not active yet
        ├── Conflict              409 not turned into a CancelResult
        ├── RateLimited           429 after every retry
        └── ServiceUnavailable    503 / other 5xx after every retry

Every error carries ``method``, a redacted ``url`` (never a token or secret), ``status``
(None when nothing was answered), ``body`` (text, truncated, scrubbed of secrets) and
``order_id`` (the order the call was about, or None).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

#: query parameters whose values are credentials (the WebSocket URL carries ``token``)
SECRET_PARAMS = frozenset({"token", "apikey", "apisecret", "secret", "access_token", "password"})
_BODY_LIMIT = 2000
_REDACTED = "***"


def redact_url(url: object) -> str:
    """``url`` without user info and with the values of credential parameters hidden."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return "<unparseable url>"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, _REDACTED if k.lower() in SECRET_PARAMS else v) for k, v in pairs], safe="*"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


#: JSON's two-character escapes (``\\/`` is PHP's and others' way of writing ``/``)
_JSON_SHORT = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _hex(value: int, digits: int) -> str:
    """A regex for ``value`` in hexadecimal, either case (``\\u003C`` and ``\\u003c``)."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{digits}x}")


def _char_pattern(char: str) -> str:
    """A regex matching one character of a secret as any common encoder writes it: JSON's
    short escape, its ``\\uXXXX`` escape (``ensure_ascii``, Go's and PHP's HTML-safe
    ``\\u003c``, surrogate pairs), URL percent-encoding (``quote``, ``quote_plus``), or as
    is. Escaped forms come first, so a JSON ``\\\\`` is taken whole."""
    forms: list[str] = []
    if char in _JSON_SHORT:
        forms.append(re.escape(_JSON_SHORT[char]))
    units = char.encode("utf-16-be", "surrogatepass")
    forms.append(
        "".join(
            r"\\u" + _hex(int.from_bytes(units[i : i + 2], "big"), 4)
            for i in range(0, len(units), 2)
        )
    )
    forms.append("".join("%" + _hex(b, 2) for b in char.encode("utf-8", "surrogatepass")))
    if char == " ":
        forms.append(r"\+")
    forms.append(re.escape(char))
    return "(?:" + "|".join(forms) + ")"


def _secret_pattern(secret: str) -> str:
    """A regex matching ``secret`` as is and in every common encoding of it (JSON-escaped
    with or without ``ensure_ascii``, ``\\/``, ``\\u003c``-style escapes, URL-quoted), so a
    service that echoes a credential through its own encoder cannot carry it past us."""
    return "".join(_char_pattern(c) for c in secret)


def hide_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every value of ``secrets`` replaced by ``***``, as is and in every
    common encoding of it: JSON-escaped (with or without ``ensure_ascii``, ``\\/``,
    ``\\u003c``-style HTML-safe escapes in either case) and URL-quoted (``quote``,
    ``quote_plus``). Values shorter than 4 characters are left alone: they would mangle
    unrelated text, and real secrets are longer.

    Parameters
    ----------
    text : str
        The text to clean (an error body, a message, a log line).
    secrets : iterable of str or None
        The values to hide; ``None`` and empty values are skipped.

    Returns
    -------
    str
        ``text`` without any of the secrets.
    """
    known = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
    for secret in known:  # the longest first: one secret may contain another
        text = re.sub(_secret_pattern(secret), _REDACTED, text)
    return text


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every known secret value replaced, as is or encoded (JSON-escaped,
    URL-quoted: :func:`hide_secrets`), so a server that echoes a credential back in an error
    body cannot leak it through our exceptions or logs; bearer values are hidden too.

    Run it on the raw body *and* again on any text decoded from it: decoding can turn an
    encoding no pattern foresaw back into the clear secret."""
    text = hide_secrets(text, secrets)
    # bearer tokens we did not know about (e.g. from a custom auth) are hidden too
    return re.sub(r"(?i)(bearer\s+)[^\s\"',}]+", r"\1" + _REDACTED, text)


def say_once(message: str) -> str:
    """``message`` without a part that repeats the one before it: a call's own words
    followed by the service's (``order not found: order not found in this profile``)
    keep only the fuller of the two (``order not found in this profile``)."""
    parts = message.split(": ")
    kept: list[str] = []
    for part in parts:
        if kept and part.strip():
            before, now = kept[-1].strip().lower(), part.strip().lower()
            if now.startswith(before):
                kept[-1] = part  # the service says the same, and more
                continue
            if before.endswith(now):
                continue  # the service only repeats what the call said
        kept.append(part)
    return ": ".join(kept)


class ToolkitError(Exception):
    """Base of every toolkit error.

    ``method``/``url``/``status``/``body`` describe the HTTP exchange when there was one;
    ``order_id`` names the order the call was about, when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        method: str | None = None,
        url: object = None,
        status: int | None = None,
        body: str | None = None,
        order_id: str | None = None,
    ) -> None:
        message = say_once(message)
        self.message = message
        self.order_id = order_id
        self.method = method
        self.url = redact_url(url) if url is not None else None
        self.status = status
        self.body = body[:_BODY_LIMIT] if body is not None else None
        super().__init__(message)

    def prefix(self, context: str) -> None:
        """Put ``context`` (what the caller was doing, what it kept) before the message:
        the same error, told where it stopped."""
        self.message = f"{context}: {self.message}"
        self.args = (self.message,)

    def __str__(self) -> str:
        where = ""
        if self.method and self.url:
            where = f" ({self.method} {self.url}"
            where += f" -> {self.status})" if self.status is not None else ")"
        return f"{self.message}{where}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status!r})"


class InvalidRequest(ToolkitError, ValueError):
    """Bad input, refused before any request was sent."""


class PaginationLoop(ToolkitError):
    """The listing repeated a page already seen, repeated a token, or exceeded the page
    budget: continuing could never end (spec 4.2 rule 5)."""


class WriteError(ToolkitError, OSError):
    """A file could not be written because of where it goes: the disk is full, the
    filesystem read-only, the file too large for it (EFBIG), no permission. The message
    names the file and what to do; as an ``OSError`` it keeps ``errno`` and ``filename``
    (the file meant, never a temporary name), and chains the low-level error."""

    def __init__(self, message: str, *, errno: int | None = None, filename: str | None = None):
        super().__init__(message)
        self.errno = errno
        self.strerror = self.message
        self.filename = filename


class TransportError(ToolkitError):
    """The network failed (connection refused or reset, timeout) after every retry, or
    the service stopped answering altogether (the client's breaker: every request failed
    on the network for ``breaker_after_s``).

    ``partial`` holds what the call had done before it stopped when it keeps something
    (``load_orders``: the OrderFrames of the orders fetched so far); None otherwise."""

    partial: object = None


class ServiceError(ToolkitError):
    """The service answered with a status the call cannot accept."""


class InvalidResponse(ServiceError):
    """A success status whose body does not follow the contract."""


class BadRequest(ServiceError):
    """400 (or 422): the service refused the request's input; nothing was recorded."""


class AuthenticationError(ServiceError):
    """401: the API key/secret were refused, or a fresh token was refused again."""


class PermissionDenied(ServiceError):
    """403: the API key lacks the permission for this call."""


class OrderNotFound(ServiceError):
    """404 for an order: unknown, another account's, or not in the given profile."""


class RouteNotActive(ServiceError):
    """404 on a limit-order route: published but not active in this environment."""


class Conflict(ServiceError):
    """409 that the call does not turn into a result (cancel turns it into a CancelResult)."""


class RateLimited(ServiceError):
    """429 after every retry; ``retry_after`` is the server's last hint in seconds."""

    retry_after: float | None = None


class ServiceUnavailable(ServiceError):
    """503 (or another 5xx) after every retry."""


__all__ = [
    "AuthenticationError",
    "BadRequest",
    "Conflict",
    "InvalidRequest",
    "InvalidResponse",
    "OrderNotFound",
    "PaginationLoop",
    "PermissionDenied",
    "RateLimited",
    "RouteNotActive",
    "ServiceError",
    "ServiceUnavailable",
    "ToolkitError",
    "TransportError",
    "WriteError",
    "hide_secrets",
    "redact_url",
    "scrub",
]
