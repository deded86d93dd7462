"""The six sections of a :class:`~toolkit.profile.ServiceProfile` (``signin``, ``rest``,
``listing``, ``orders``, ``stream``, ``payloads``): each a record of settings and defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TimeUnit = Literal["auto", "s", "ms"]


@dataclass(frozen=True)
class Signin:
    """``POST`` sign-in that yields the operational token (spec 4.4, 5.1: shape not shown).

    Parameters
    ----------
    path : str, default "/auth/signin"
        Route of the sign-in.
    key_field : str, default "apiKey"
        Request body field that carries the API key (dotted: a nested object).
    secret_field : str, default "apiSecret"
        Request body field that carries the API secret (dotted: a nested object).
    token_field : str, default "token"
        Response field of the token (dotted path for a nested one, e.g. ``data.token``).
    expiry_field : str, default "expiresAt"
        Response field of the token's expiry.
    expiry_kind : {"absolute", "ttl"}, default "absolute"
        ``absolute``: the field is a moment (Unix time); ``ttl``: a time to live.
    expiry_unit : {"auto", "s", "ms"}, default "auto"
        Unit of the expiry field; ``auto``: a moment by magnitude, a time to live by the
        field's name (``ttlMs``), else seconds unless longer than 30 days.
    bad_credentials_statuses : tuple of int, default (401,)
        HTTP statuses of the sign-in that mean "bad API key or secret"; not empty.
    """

    #: route of the sign-in
    path: str = "/auth/signin"
    #: request body field that carries the API key
    key_field: str = "apiKey"
    #: request body field that carries the API secret
    secret_field: str = "apiSecret"
    #: response field of the token (dotted path for a nested one, e.g. ``data.token``)
    token_field: str = "token"
    #: response field of the token's expiry
    expiry_field: str = "expiresAt"
    #: ``absolute``: the field is a moment (Unix time); ``ttl``: seconds/ms to live
    expiry_kind: Literal["absolute", "ttl"] = "absolute"
    #: unit of the expiry field; ``auto``: a moment by magnitude, a time to live by the
    #: field's name (``ttlMs``), else seconds unless longer than 30 days
    expiry_unit: TimeUnit = "auto"
    #: HTTP statuses of the sign-in that mean "bad API key or secret"
    bad_credentials_statuses: tuple[int, ...] = (401,)


@dataclass(frozen=True)
class Rest:
    """How REST requests carry identity, and the routes whose shapes are not shown.

    Routes are absolute paths joined to the client's ``base_url`` (no query or fragment).

    Parameters
    ----------
    auth_header : str, default "Authorization"
        Header that carries the token.
    auth_scheme : str, default "Bearer"
        Prefix of that header's value; empty for the bare token.
    fetch_order_path : str, default "/orders/fetchOrder"
        Route of one order (spec 4.4).
    fetch_order_param : str, default "orderId"
        Its query parameter.
    limit_orders_path : str, default "/orders/limit/orders"
        List (GET) and create (POST) of limit orders.
    cancel_path : str, default "/orders/limit/orders/{order_id}/cancel"
        Cancel one (PATCH); ``{order_id}``, its only ``{...}`` field, is replaced by the
        escaped id.
    cancel_profile_in : {"body", "query"}, default "body"
        Where ``profileId`` travels on cancel (spec 4.3: not shown).
    cancel_status : int, default 202
        Success status of an accepted cancel (the client accepts any 2xx).
    batch_cancel_path : str, default "/orders/limit/orders/cancel"
        Route of the batch cancel (POST).
    batch_ids_field : str, default "orderIds"
        Request body field of the batch cancel's id list.
    batch_cancel_max : int, default 100
        Ids per batch-cancel request.
    error_message_field : str, default "message"
        Field of the human-readable text in error bodies (the client never needs it).
    """

    #: header that carries the token
    auth_header: str = "Authorization"
    #: prefix of that header's value; empty for the bare token
    auth_scheme: str = "Bearer"
    #: route of one order (spec 4.4)
    fetch_order_path: str = "/orders/fetchOrder"
    #: its query parameter
    fetch_order_param: str = "orderId"
    #: list (GET) and create (POST) of limit orders
    limit_orders_path: str = "/orders/limit/orders"
    #: cancel one (PATCH); ``{order_id}`` is replaced by the escaped id
    cancel_path: str = "/orders/limit/orders/{order_id}/cancel"
    #: where ``profileId`` travels on cancel (spec 4.3: not shown)
    cancel_profile_in: Literal["body", "query"] = "body"
    #: success status of an accepted cancel (the client accepts any 2xx)
    cancel_status: int = 202
    #: batch cancel (POST): route
    batch_cancel_path: str = "/orders/limit/orders/cancel"
    #: batch cancel: request body field of the id list
    batch_ids_field: str = "orderIds"
    #: ids per batch-cancel request
    batch_cancel_max: int = 100
    #: field of the human-readable text in error bodies (the client never needs it)
    error_message_field: str = "message"


@dataclass(frozen=True)
class Listing:
    """``GET /orders/limit/orders``: page size and the nine list-item fields (spec 2.5, 8).

    Parameters
    ----------
    page_default : int, default 50
        Page size asked for when none is given.
    page_min : int, default 1
        Smallest page size the listing accepts (spec 4.2: a size out of bounds is a 400);
        ``1 <= page_min <= page_default <= page_max``.
    page_max : int, default 100
        Largest page size the listing accepts.
    id_field : str, default "id"
        Item field of the order id (dotted paths reach nested fields, as for every
        ``*_field``); not empty.
    symbol_field : str, default "symbol"
        Item field of the pair.
    side_field : str, default "side"
        Item field of the side.
    type_field : str, default "type"
        Item field of the order type.
    status_field : str, default "status"
        Item field of the status.
    limit_price_field : str, default "limitPrice"
        Item field of the limit price.
    expires_at_field : str, default "expiresAt"
        Item field of the expiry.
    created_at_field : str, default "createdAt"
        Item field of the creation time.
    updated_at_field : str, default "updatedAt"
        Item field of the last update's time.
    active_statuses : tuple of str, default ("OPEN", "TRIGGERED", "PROCESSING")
        Members of the ``ACTIVE`` filter shortcut (spec 4.2: not shown); limit statuses.
    finalized_statuses : tuple of str, default ("CANCELLING", ..., "REJECTED")
        Members of the ``FINALIZED`` filter shortcut: ``CANCELLING``, ``EXECUTED``,
        ``CLOSED``, ``EXPIRED``, ``CANCELLED``, ``REJECTED`` by default.
    """

    #: page size asked for when none is given, and the smallest and largest the listing
    #: accepts (spec 4.2: a size out of bounds is a 400)
    page_default: int = 50
    page_min: int = 1
    page_max: int = 100
    #: the item fields, by meaning; dotted paths reach nested fields
    id_field: str = "id"
    symbol_field: str = "symbol"
    side_field: str = "side"
    type_field: str = "type"
    status_field: str = "status"
    limit_price_field: str = "limitPrice"
    expires_at_field: str = "expiresAt"
    created_at_field: str = "createdAt"
    updated_at_field: str = "updatedAt"
    #: members of the filter shortcuts (spec 4.2: not shown)
    active_statuses: tuple[str, ...] = ("OPEN", "TRIGGERED", "PROCESSING")
    finalized_statuses: tuple[str, ...] = (
        "CANCELLING",
        "EXECUTED",
        "CLOSED",
        "EXPIRED",
        "CANCELLED",
        "REJECTED",
    )


@dataclass(frozen=True)
class Orders:
    """Order bodies (fetchOrder and watchOrders share them, spec 2.4).

    Parameters
    ----------
    timestamp_unit : {"auto", "s", "ms"}, default "auto"
        Unit of every Unix timestamp; ``auto`` infers s vs ms per value by magnitude.
    status_case : {"mixed", "upper", "lower"}, default "mixed"
        Case of limit statuses in payloads (market ones are lowercase, spec 3.1):
        ``mixed`` = upper except ``closed``; ``upper`` = all upper; ``lower`` = all lower.
    quote_venue_field : str, default "exchange"
        ``evaluatedTickers`` element field of the venue (spec 2.4: structure not shown).
    quote_price_field : str, default "price"
        ``evaluatedTickers`` element field of the price.
    quote_time_field : str, default "quotedAt"
        ``evaluatedTickers`` element field of the quote's time.
    quote_reason_field : str, default "reason"
        ``evaluatedTickers`` element field of the reason.
    """

    #: unit of every Unix timestamp; ``auto`` infers s vs ms per value by magnitude
    timestamp_unit: TimeUnit = "auto"
    #: case of limit statuses in payloads (market ones are lowercase, spec 3.1): ``mixed`` =
    #: upper except ``closed``; ``upper`` = all upper; ``lower`` = all lower
    status_case: Literal["mixed", "upper", "lower"] = "mixed"
    #: ``evaluatedTickers`` element fields (spec 2.4: structure not shown)
    quote_venue_field: str = "exchange"
    quote_price_field: str = "price"
    quote_time_field: str = "quotedAt"
    quote_reason_field: str = "reason"


@dataclass(frozen=True)
class Stream:
    """The WebSocket: refusal, keep-alive, limits, confirmations, which events exist.

    Parameters
    ----------
    refusal_http_statuses : tuple of int, default (401, 403)
        HTTP statuses before the upgrade that mean "token refused".
    refusal_close_codes : tuple of int, default (1008, 4001, 4003, 4401, 4403)
        Close codes after the upgrade that mean "token refused".
    refusal_kind : {"http", "close"}, default "http"
        How this service refuses (the simulator uses it; the client accepts both kinds).
    keepalive_action : str, default "ping"
        Keep-alive action as sent; empty: the service has none (the client then relies on
        data and WebSocket pings to stay within the idle limit).
    keepalive_reply_field : str, default "message"
        Field that recognises the keep-alive reply.
    keepalive_reply_value : str, default "pong"
        Its value in the keep-alive reply.
    keepalive_interval_s : float, default 60.0
        Seconds between keep-alives; with a ``keepalive_action``, above 0 and below
        ``idle_limit_s``.
    max_duration_s : float, default 7200.0
        Longest life of a connection (spec 8: value not shown).
    idle_limit_s : float, default 600.0
        Longest silence a connection survives (spec 8: value not shown).
    subscribed_text : str, default "Successfully subscribed to channel: {channel}#{symbol}"
        Subscription confirmation with a symbol (fixed by spec 2.2); must contain
        ``{channel}`` and ``{symbol}`` (lowercase, the symbol without slash).
    subscribed_text_no_symbol : str, default "Successfully subscribed to channel: {channel}"
        Subscription confirmation without a symbol (not shown); must contain
        ``{channel}``.
    unsubscribed_text : str, default "Successfully unsubscribed from channel: {channel}#{symbol}"
        Unsubscription confirmation with a symbol (not shown); must contain ``{channel}``
        and ``{symbol}``.
    unsubscribed_text_no_symbol : str, default "Successfully unsubscribed from channel: {channel}"
        Unsubscription confirmation without a symbol (not shown); must contain
        ``{channel}``.
    limit_events : {"all", "outcome_only"}, default "all"
        Which limit-order events watchOrders publishes (spec 6 contradiction).
    only_priority_type : {"bool", "int", "str"}, default "bool"
        Type of ``onlyPriority`` on watchTickers (spec 4.1: not shown).
    """

    #: HTTP statuses before the upgrade that mean "token refused"
    refusal_http_statuses: tuple[int, ...] = (401, 403)
    #: close codes after the upgrade that mean "token refused"
    refusal_close_codes: tuple[int, ...] = (1008, 4001, 4003, 4401, 4403)
    #: how this service refuses (the simulator uses it; the client accepts both kinds)
    refusal_kind: Literal["http", "close"] = "http"
    #: keep-alive action as sent; empty: the service has none (the client then relies on
    #: data and WebSocket pings to stay within the idle limit)
    keepalive_action: str = "ping"
    #: field/value that recognise the keep-alive reply (``message`` == ``pong``)
    keepalive_reply_field: str = "message"
    keepalive_reply_value: str = "pong"
    #: seconds between keep-alives; must stay below the idle limit
    keepalive_interval_s: float = 60.0
    #: connection limits (spec 8: values not shown)
    max_duration_s: float = 7200.0
    idle_limit_s: float = 600.0
    #: confirmation texts; ``{channel}`` and ``{symbol}`` are lowercase, symbol without slash.
    #: The one with a symbol is fixed by spec 2.2; the others are not shown.
    subscribed_text: str = "Successfully subscribed to channel: {channel}#{symbol}"
    subscribed_text_no_symbol: str = "Successfully subscribed to channel: {channel}"
    unsubscribed_text: str = "Successfully unsubscribed from channel: {channel}#{symbol}"
    unsubscribed_text_no_symbol: str = "Successfully unsubscribed from channel: {channel}"
    #: which limit-order events watchOrders publishes (spec 6 contradiction)
    limit_events: Literal["all", "outcome_only"] = "all"
    #: type of ``onlyPriority`` on watchTickers (spec 4.1: not shown)
    only_priority_type: Literal["bool", "int", "str"] = "bool"


@dataclass(frozen=True)
class Payloads:
    """Where the fields of the watchTicker, watchTickers and watchBalance payloads are
    (spec 6: not shown). Dotted paths reach nested fields (``errors[0].detail`` list
    elements); an empty list path means the payload itself is the list; a list path ending
    in ``*`` (``wallet.*``, or ``*`` alone) names an object keyed by pair or asset, and
    ``*`` as ``ticker_symbol``/``balance_asset`` is that key. Times may be Unix numbers or
    ISO-8601 text.

    Parameters
    ----------
    ticker_symbol : str, default "symbol"
        Pair of a watchTicker payload.
    ticker_bid : str, default "bid"
        Best bid of a ticker.
    ticker_ask : str, default "ask"
        Best ask of a ticker.
    ticker_last : str, default "last"
        Last traded price of a ticker.
    ticker_time : str, default "timestamp"
        Time of a ticker (Unix, ``orders.timestamp_unit``).
    tickers_list : str, default "tickers"
        The list of tickers in a watchTickers payload (empty: the payload is the list;
        ``data.*``: the values of an object keyed by pair).
    balance_list : str, default "balances"
        The list of balances in a watchBalance payload (empty: the payload is the list;
        ``wallet.*``: the values of an object keyed by asset).
    balance_asset : str, default "asset"
        Asset of one balance (``*``: the key it is under).
    balance_free : str, default "free"
        Amount free to trade.
    balance_locked : str, default "locked"
        Amount held by open orders.
    balance_total : str, default "total"
        Free + locked.
    balance_time : str, default "timestamp"
        Time of a balance (Unix, ``orders.timestamp_unit``).
    """

    #: pair of a watchTicker payload
    ticker_symbol: str = "symbol"
    #: best bid of a ticker
    ticker_bid: str = "bid"
    #: best ask of a ticker
    ticker_ask: str = "ask"
    #: last traded price of a ticker
    ticker_last: str = "last"
    #: time of a ticker (Unix, ``orders.timestamp_unit``)
    ticker_time: str = "timestamp"
    #: the list of tickers in a watchTickers payload (empty: the payload is the list)
    tickers_list: str = "tickers"
    #: the list of balances in a watchBalance payload (empty: the payload is the list)
    balance_list: str = "balances"
    #: asset of one balance
    balance_asset: str = "asset"
    #: amount free to trade
    balance_free: str = "free"
    #: amount held by open orders
    balance_locked: str = "locked"
    #: free + locked
    balance_total: str = "total"
    #: time of a balance (Unix, ``orders.timestamp_unit``)
    balance_time: str = "timestamp"
