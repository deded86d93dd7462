"""API keys, accounts, profiles and operational tokens of the simulator
(the fixed set of PRODUCT.md "The simulator")."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

#: permission each channel needs (spec 4.1); "*" grants all
CHANNEL_PERMISSION = {
    "watchorders": "orders:*",
    "watchticker": "market:*",
    "watchtickers": "market:*",
    "watchbalance": "wallet:*",
}


@dataclass(frozen=True)
class ApiKey:
    key: str
    secret: str = field(repr=False)
    permissions: frozenset[str]
    account: str

    def allows(self, permission: str) -> bool:
        return "*" in self.permissions or permission in self.permissions


API_KEYS: dict[str, ApiKey] = {
    k.key: k
    for k in (
        ApiKey("demo", "demo-secret", frozenset({"*"}), "A1"),
        ApiKey("market-only", "market-only-secret", frozenset({"market:*"}), "A1"),
        ApiKey("orders-only", "orders-only-secret", frozenset({"orders:*"}), "A1"),
        ApiKey("wallet-only", "wallet-only-secret", frozenset({"wallet:*"}), "A1"),
        ApiKey("other", "other-secret", frozenset({"*"}), "A2"),
    )
}

#: profiles of each account; the first is the default of its orders
PROFILES: dict[str, tuple[str, ...]] = {"A1": ("P1", "P2"), "A2": ("P9",)}


@dataclass(frozen=True)
class Principal:
    """Who a token or request belongs to."""

    api_key: ApiKey
    token: str = field(repr=False)
    expires_at_ms: int

    @property
    def account(self) -> str:
        return self.api_key.account


class TokenStore:
    """Issues operational tokens on signin and resolves them on REST and WebSocket."""

    def __init__(self, ttl_s: float = 3600.0) -> None:
        self.ttl_s = ttl_s
        self._tokens: dict[str, Principal] = {}

    def signin(self, key: str, secret: str) -> Principal | None:
        api_key = API_KEYS.get(key)
        if api_key is None or not secrets.compare_digest(api_key.secret, secret):
            return None
        token = "tok_" + secrets.token_urlsafe(24)
        expires = int((time.time() + self.ttl_s) * 1000)
        principal = Principal(api_key, token, expires)
        self._tokens[token] = principal
        return principal

    def resolve(self, token: str | None) -> Principal | None:
        """The principal of a live token; None when missing, unknown or expired."""
        if not token:
            return None
        principal = self._tokens.get(token)
        if principal is None:
            return None
        if principal.expires_at_ms <= int(time.time() * 1000):
            self._tokens.pop(token, None)
            return None
        return principal

    def revoke_all(self) -> None:
        self._tokens.clear()
