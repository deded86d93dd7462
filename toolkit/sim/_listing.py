"""The simulator's listing side: the lagging replica read page by page with signed
pagination tokens, the injected 503s, and the per-API-key rate limit (429 + Retry-After)."""

from __future__ import annotations

import base64
import bisect
import hashlib
import hmac
import json
import math
import random
import secrets
import time
from typing import TYPE_CHECKING, Any

from toolkit.sim._knobs import Knobs
from toolkit.sim._orders import Order, list_item

_TOKEN_MAGIC = b"\xfb\xff"  # base64 of these starts with "+/": every token carries both


class RateLimiter:
    """A token bucket per API key: ``rate`` requests per second, bursts up to ``rate``."""

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}

    def check(self, key: str, rate: float | None) -> float | None:
        """None when allowed; otherwise the seconds to wait before the next request."""
        if rate is None or rate <= 0:
            return None
        now = time.monotonic()
        capacity = max(rate, 1.0)
        tokens, last = self._buckets.get(key, (capacity, now))
        tokens = min(capacity, tokens + (now - last) * rate)
        if tokens >= 1.0:
            self._buckets[key] = (tokens - 1.0, now)
            return None
        self._buckets[key] = (tokens, now)
        return (1.0 - tokens) / rate


class _Index:
    """One account's limit orders in listing order: keys (createdAt, id) ascending."""

    def __init__(self) -> None:
        self.keys: list[tuple[int, str]] = []
        self.orders: list[Order] = []

    def add(self, order: Order) -> None:
        key = (order.created_at, order.id)
        i = bisect.bisect_left(self.keys, key)
        self.keys.insert(i, key)
        self.orders.insert(i, order)


class ListingMixin:
    """The listing part of :class:`~toolkit.sim._state.SimState`: pages of the replica
    that ``SimState._transition`` records in each limit order's ``versions``."""

    knobs: Knobs
    _rng503: random.Random
    _token_key: bytes
    _index: dict[str, _Index]

    if TYPE_CHECKING:

        @staticmethod
        def now_ms() -> int: ...

    # ---------------------------------------------------------------- listing
    def should_fail_listing(self) -> bool:
        rate = float(self.knobs.listing_503_rate)
        return rate > 0 and self._rng503.random() < rate

    def list_limit_orders(
        self, account: str, statuses: frozenset[str] | None, limit: int, token: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of the replica, newest first. A token that does not verify (tampered,
        rebuilt, other filter) silently restarts at page one, as spec 4.2 rule 5 says."""
        sig = _signature(statuses)
        found = self._decode_token(token, sig) if token else None
        cursor, page = (found[:2], found[2]) if found else (None, 1)
        index = self._index.get(account) or _Index()
        horizon = self.now_ms() - int(float(self.knobs.listing_lag_s) * 1000)
        start = bisect.bisect_left(index.keys, cursor) if cursor else len(index.keys)
        items: list[dict[str, Any]] = []
        for i in range(start - 1, -1, -1):
            item = _visible(index.orders[i], horizon)
            if item is None or (statuses and item["status"] not in statuses):
                continue
            items.append(item)
            if len(items) == limit:
                break
        next_token = None
        if len(items) == limit and items:
            last = items[-1]
            next_token = self._encode_token((last["createdAt"], last["id"], page + 1), sig)
        return items, next_token

    def listing_fault(self, statuses: frozenset[str] | None, token: str | None) -> int | None:
        """The status to answer instead of this page (knobs ``listing_fault_page`` and
        ``listing_fault_status``: every call for that page of a listing fails), or None."""
        wanted = int(self.knobs.listing_fault_page)
        if not wanted:
            return None
        found = self._decode_token(token, _signature(statuses)) if token else None
        page = found[2] if found else 1  # a token that does not verify restarts
        return int(self.knobs.listing_fault_status) if page == wanted else None

    def _encode_token(self, cursor: tuple[int, str, int], sig: str) -> str:
        """A signed token for the page after ``cursor`` (createdAt, id of the last item,
        number of the next page)."""
        payload = json.dumps([1, *cursor, sig], separators=(",", ":")).encode()
        # rebuild mode: signed with a throwaway key, so the next call cannot verify it
        key = secrets.token_bytes(32) if self.knobs.rebuild_pagination_tokens else self._token_key
        mac = hmac.new(key, payload, hashlib.sha256).digest()[:12]
        raw = _TOKEN_MAGIC + len(payload).to_bytes(2, "big") + payload + mac
        if len(raw) % 3 == 0:
            raw += b"\x00"  # a length not divisible by 3 means "=" padding
        return base64.b64encode(raw).decode()

    def _decode_token(self, token: str, sig: str) -> tuple[int, str, int] | None:
        try:
            raw = base64.b64decode(token, validate=True)
            if not raw.startswith(_TOKEN_MAGIC):
                return None
            n = int.from_bytes(raw[2:4], "big")
            payload, mac = raw[4 : 4 + n], raw[4 + n : 4 + n + 12]
            want = hmac.new(self._token_key, payload, hashlib.sha256).digest()[:12]
            if len(mac) != 12 or not hmac.compare_digest(mac, want):
                return None
            version, created, oid, page, token_sig = json.loads(payload)
            if version != 1 or token_sig != sig or not isinstance(oid, str):
                return None
            return int(created), oid, int(page)
        except (ValueError, TypeError):
            return None


def _signature(statuses: frozenset[str] | None) -> str:
    """The filter a token is bound to (a token of another filter restarts the listing)."""
    return ",".join(sorted(statuses)) if statuses else "*"


def _visible(order: Order, horizon_ms: int) -> dict[str, Any] | None:
    """The order as the replica knew it at ``horizon_ms``; None when it did not exist yet."""
    if order.versions is None:
        return list_item(order)
    for at, item in reversed(order.versions):
        if at <= horizon_ms:
            return item
    return None


def retry_after_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
