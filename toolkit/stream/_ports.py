"""What the stream needs from the REST side, as protocols: a token source for the session
and an order source for the order book. ``toolkit.client.Client`` satisfies both; the stream
never imports it, which keeps the client -> stream dependency one way."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.profile import ServiceProfile
    from toolkit.stream._session import StreamSession


class HasWsUrl(Protocol):
    """Settings that name the WebSocket base address."""

    @property
    def ws_url(self) -> str: ...


class TokenSource(Protocol):
    """Gives the operational token of ``?token=`` (signing in when needed)."""

    @property
    def settings(self) -> HasWsUrl: ...

    @property
    def profile(self) -> ServiceProfile:
        """The service profile the client was made with (what the stream expects)."""
        ...

    async def atoken(self) -> str: ...


class OrderSource(TokenSource, Protocol):
    """Reads orders over REST and opens streams: what ``OrderBook`` reconciles with."""

    def aiter_limit_orders(
        self,
        status: str | Iterable[str] | None = None,
        *,
        limit: int | None = None,
        max_pages: int | None = None,
    ) -> AsyncIterator[dict[str, Any]]: ...

    async def afetch_order(self, order_id: str) -> Mapping[str, Any]: ...

    def stream(self, **kwargs: Any) -> StreamSession: ...
