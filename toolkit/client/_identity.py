"""Which account of which service a client reads: the service's address and a
fingerprint of the API key (never the key or its secret). An order store is bound to
one; a recording names the one it was made with, so a store can tell its own account's
recordings from another's."""

from __future__ import annotations

import hashlib
from typing import Any


def key_fingerprint(api_key: str | None) -> str | None:
    """``sha256:`` and 16 hex digits of the API key's hash; None without a key."""
    if not api_key:
        return None
    return f"sha256:{hashlib.sha256(api_key.encode()).hexdigest()[:16]}"


def account_of(client: Any) -> dict[str, str | None] | None:
    """``{"base_url", "api_key"}`` (the fingerprint) of ``client``'s settings; None for
    an object without settings (a fake client, a replay)."""
    settings = getattr(client, "settings", None)
    base_url = getattr(settings, "base_url", None)
    if not isinstance(base_url, str):
        return None
    api_key = getattr(settings, "api_key", None)
    return {
        "base_url": base_url,
        "api_key": key_fingerprint(api_key if isinstance(api_key, str) else None),
    }


__all__ = ["account_of", "key_fingerprint"]
