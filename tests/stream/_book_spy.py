"""A client whose fetchOrder calls are counted: what an order book's reconcile re-reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolkit.client._client import Client


class Counting:
    """The client, with its fetchOrder calls counted by order id (what a reconcile
    re-reads); everything else is the client's own."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.fetched: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def afetch_order(self, order_id: str) -> Mapping[str, Any]:
        self.fetched.append(order_id)
        return await self._client.afetch_order(order_id)
