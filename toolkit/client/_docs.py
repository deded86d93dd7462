"""The numpydoc docstrings of the ``Client``'s calls (Parameters, Returns, Raises,
Examples), kept apart from the code so the facade stays short. ``with_sync_twins`` gives
each async method ``ax`` its text here and each sync twin ``x`` the same text, written for
a sync call; tests/client/test_sync_help.py checks that every call has one."""

from __future__ import annotations

DOCS: dict[str, str] = {
    "aclose": """Close every connection pool the client opened.

Closes the pools on this loop, on the private loop of the sync calls and on any
other running loop; the client cannot be used afterwards. Closing twice is
harmless.

Examples
--------
>>> await client.aclose()  # doctest: +SKIP
""",
    "atoken": """A valid operational token, signing in when needed.

The token authenticates REST calls and the WebSocket (``ws_url?token=...``). It
is a secret: never print or log it.

Returns
-------
str
    The current token, renewed before it expires.

Raises
------
AuthenticationError
    The API key and secret were refused.
InvalidRequest
    The client has no credentials nor an ``auth=`` that can make a token.

Examples
--------
>>> token = await client.atoken()  # doctest: +SKIP
""",
    "asignin": """Sign in now, replacing any token held.

Only with the default auth (``api_key``/``api_secret``); calls sign in by
themselves when needed, so this is for checking credentials early.

Raises
------
AuthenticationError
    The API key and secret were refused.
InvalidRequest
    The client uses another ``auth=``.

Examples
--------
>>> await client.asignin()  # doctest: +SKIP
""",
    "afetch_order_raw": """One order's fetchOrder response body, as the service sent it.

Parameters
----------
order_id : str
    The order's id (checked before sending: it can never change the path).

Returns
-------
bytes
    The JSON body, for archiving or for debugging a field.

Raises
------
OrderNotFound
    The order is unknown or belongs to another account (404).
InvalidRequest
    ``order_id`` is empty or not a valid id.

Examples
--------
>>> body = await client.afetch_order_raw("l-000123-ab12")  # doctest: +SKIP
""",
    "afetch_order": """One order's current state (``GET /orders/fetchOrder``), the source of truth.

Parameters
----------
order_id : str
    The order's id, market or limit.

Returns
-------
dict
    The order as the service sent it (``id``, ``status``, ``trades``, ``fee``,
    ``evaluatedTickers``, ...), its ``id`` as text (an integer id as its decimal
    digits); ``client.load_orders(ids=[...])`` gives DataFrames.

Raises
------
OrderNotFound
    The order is unknown or belongs to another account (404).
InvalidRequest
    ``order_id`` is empty or not a valid id (nothing is sent).
InvalidResponse
    The body is not this order's: another order's id, or an id that is neither text
    nor an integer (``1.5``, ``1e20``, a boolean, null).

Examples
--------
>>> order = await client.afetch_order("l-000123-ab12")  # doctest: +SKIP
>>> order["status"]  # doctest: +SKIP
'OPEN'
""",
    "aiter_limit_orders": """Every limit-order list item matching ``status``, page by page.

The arguments are checked now, before anything is sent. Items are the service's
own objects; their fields are read with the profile's ``listing.*_field`` mapping
(the id inferred from the usual names when ``listing.id_field`` is absent), and each
item's id is handed on as text: an integer id as its decimal digits, so ``123`` and
``"123"`` are one order (an id that cannot be an exact integer raises InvalidResponse
naming ``listing.id_field``). An order seen on an earlier page is not yielded
again; an item outside ``status`` (ACTIVE/FINALIZED as the profile defines them) is
left out, since the service ignores a filter it does not recognise. A 503 is retried
on the same token.

Parameters
----------
status : str or iterable of str, optional
    ``"ACTIVE"``, ``"FINALIZED"``, one status or several (upper case, e.g.
    ``["OPEN", "TRIGGERED"]``). None: no filter.
limit : int, optional
    Page size, within the profile's ``listing.page_min..page_max`` (default
    ``settings.page_size``).
max_pages : int, optional
    Most pages to read before raising PaginationLoop (default
    ``settings.max_pages``).

Returns
-------
AsyncIterator of dict
    The list items (``id, symbol, side, type, status, limitPrice, expiresAt,
    createdAt, updatedAt``), newest first.

Raises
------
InvalidRequest
    A bad ``status`` or ``limit`` (nothing is sent).
PaginationLoop
    The listing restarted (a rebuilt token) or exceeded ``max_pages``.
RouteNotActive
    The limit-order routes are not active in this environment (404).
ServiceUnavailable
    503 after every retry.

Examples
--------
>>> async for item in client.aiter_limit_orders("ACTIVE"):  # doctest: +SKIP
...     print(item["id"], item["status"])
""",
    "alist_limit_orders": """All limit-order list items matching ``status``, each order once.

Reads every page (see ``aiter_limit_orders``) and keeps, for each order, the item
with the newest ``updatedAt`` seen.

Parameters
----------
status : str or iterable of str, optional
    ``"ACTIVE"``, ``"FINALIZED"``, one status or several (upper case). None: no
    filter.
limit : int, optional
    Page size, within the profile's ``listing.page_min..page_max``.
max_pages : int, optional
    Most pages to read before raising PaginationLoop.

Returns
-------
list of dict
    The list items (nine fields each; fetch an order for the rest).

Raises
------
InvalidRequest
    A bad ``status`` or ``limit`` (nothing is sent).
PaginationLoop
    The listing restarted (a rebuilt token) or exceeded ``max_pages``.
RouteNotActive
    The limit-order routes are not active in this environment (404).

Examples
--------
>>> items = await client.alist_limit_orders("OPEN", limit=100)  # doctest: +SKIP
>>> len(items)  # doctest: +SKIP
42
""",
    "aload_orders": """Every order of the account (or the given ``ids``) as typed DataFrames.

Without ``ids``: every limit order of the listing that matches ``status`` (the
listing has no market orders: load those with ``ids=``, or keep them in a
``tk.OrderStore``). Each order is then read with fetchOrder, many at a time while
the listing still pages. Every argument is checked before any request.

Parameters
----------
status : str or iterable of str, optional
    ``"ACTIVE"``, ``"FINALIZED"``, one status or several (upper case). None: all
    nine limit statuses. Not allowed with ``ids``.
since, until : str, datetime, pandas.Timestamp or int, optional
    Creation time bounds, ``since`` inclusive and ``until`` exclusive (ISO text,
    aware datetime, or Unix ms). Naive values are UTC.
symbols : str or iterable of str, optional
    Pairs to keep, e.g. ``"BTC/BRL"``.
ids : iterable of str, optional
    Load exactly these orders (market or limit) instead of the listing.
exact : bool, default False
    Decimal columns as exact ``decimal128`` instead of float64.
progress : bool, default True
    Show a progress bar (``tqdm.auto``).
concurrency : int, optional
    Requests in flight to start from (default: the client's ``concurrency``); it
    adapts to the service, shrinking on 429 and growing latency, honouring
    ``Retry-After``.
page_rule : {"error", "warn"}, default "error"
    A listing page that breaks spec 4.2 rule 4 (a token with fewer than ``limit``
    items) or holds more than ``limit`` items raises InvalidResponse; ``"warn"``
    accepts it with one warning counting the orders concerned.
overlap_s : float, default 600
    With ``since``: paging stops once a whole page is older than ``since`` minus
    this many seconds (spec 4.2 rule 6, eventual consistency).

Returns
-------
OrderFrames
    ``orders``, ``trades``, ``fees``, ``evaluated_tickers`` and ``fills`` (see the
    column dictionary in the docs); an empty result has the full typed schema.
    Orders that vanished (404) while loading are in ``frames.missing``, with a
    ``MissingOrdersWarning``.

Raises
------
InvalidRequest
    A bad argument (unknown status, ``since`` after ``until``, ...); nothing is
    sent.
InvalidResponse
    The service's items lack a field a filter needs (the message names the
    profile setting), or a listing page has the wrong size.
PaginationLoop
    The listing restarted (a rebuilt token) and could never end.
RouteNotActive
    The limit-order routes are not active in this environment (404).
AuthenticationError
    The API key and secret were refused.
TransportError
    The network failed after every retry, or the service stopped answering (every
    request failed on the network for the ``breaker_after_s`` setting, by default
    twice ``timeout``): the message says how many orders were fetched, and
    ``exc.partial`` holds their frames. Cancelled (Ctrl-C on the sync twin), the
    interrupt carries the same count as a note.

Examples
--------
>>> frames = await client.aload_orders(
...     status="FINALIZED", since="2026-11-01"
... )  # doctest: +SKIP
>>> frames.fills.groupby("executedExchange")["cost"].sum()  # doctest: +SKIP
>>> frames = await client.aload_orders(ids=["m-000001-aa11"])  # doctest: +SKIP
""",
    "acreate_limit_order": """Create a limit order (spec 4.4).

Never retried on a 503 or a network error: creating is not idempotent (give
``client_order_id`` to make a duplicate detectable: the service rejects it).

Parameters
----------
symbol : str
    The pair, ``BASE/QUOTE`` (e.g. ``"BTC/BRL"``).
side : {"buy", "sell"}
    The order's side.
limit_price : str, Decimal, int or float
    The limit price, in the quote currency.
amount : str, Decimal, int or float, optional
    Quantity in the base (crypto) currency. Give exactly one of ``amount`` and
    ``quote_amount``.
quote_amount : str, Decimal, int or float, optional
    Quantity in the quote (fiat) currency.
expires_at : datetime or int, optional
    Deadline, an aware datetime or Unix ms; default 24 h from now. Sent in Unix
    seconds when the profile's ``orders.timestamp_unit`` is ``s``, else in ms.
profile_id : str, optional
    The trading profile; default the client's ``profile_id``.
client_order_id : str, optional
    Your own id for the order.

Returns
-------
dict
    The whole order: ``OPEN``, or ``REJECTED`` with its ``statusReason``.

Raises
------
InvalidRequest
    Bad input (symbol, side, a price or amount that is not a positive decimal, both or
    neither of ``amount``/``quote_amount``); nothing is sent.
BadRequest
    The service refused the input (400).
RouteNotActive
    The limit-order routes are not active in this environment (404).

Examples
--------
>>> order = await client.acreate_limit_order(
...     "BTC/BRL", "buy", "250000", amount="0.001"
... )  # doctest: +SKIP
>>> order["status"]  # doctest: +SKIP
'OPEN'
""",
    "acancel_limit_order": """Cancel one limit order (spec 4.3) and say what that achieved.

A 2xx whose JSON object names this order as ``CANCELLING`` or ``CANCELLED`` is an
acceptance (``CANCELLED`` follows). An empty or status-less 2xx is confirmed with
fetchOrder: an order still OPEN (or executing) was not cancelled, NOT_APPLIED (resend).
A 2xx that is not a JSON object (a proxy's or firewall's page) or that names another
order raises InvalidResponse: the cancel may not have reached the service. A 409 is
never retried: the order is read with fetchOrder and the result says why the cancel
could not be accepted now.

Parameters
----------
order_id : str
    The limit order's id.
profile_id : str, optional
    The profile that holds the order; default the client's ``profile_id``. Sent in the
    body or the query per the profile's ``rest.cancel_profile_in``.
reason : str, optional
    A reason recorded with the request (the service puts a default one otherwise).

Returns
-------
CancelResult
    ``outcome`` is ACCEPTED, NOT_APPLIED (a 2xx that did not cancel the order: it is
    still OPEN; resend), DEFERRED (the order is executing: the request is recorded and
    honoured if it returns to OPEN; do not resend), ALREADY_FINAL or
    ALREADY_CANCELLING; ``status`` is the order's status as last seen.

Raises
------
OrderNotFound
    The order is unknown, another account's, or not in that profile (404).
RouteNotActive
    The limit-order routes are not active in this environment (404).
InvalidRequest
    A bad ``order_id``, ``profile_id`` or ``reason``; nothing is sent.
InvalidResponse
    After a 409, the order read back has no ``status`` or one outside the nine of spec
    3.1/3.2: the outcome cannot be told, so none is guessed (never "deferred"). A 2xx
    that is not a JSON object, or that names another order.

Examples
--------
>>> result = await client.acancel_limit_order("l-000123-ab12")  # doctest: +SKIP
>>> result.outcome, result.status  # doctest: +SKIP
(<CancelOutcome.ACCEPTED: 'accepted'>, 'CANCELLING')
""",
    "acancel_limit_orders": """Cancel many limit orders in batches; say per order what that
achieved.

Sent to the profile's ``rest.batch_cancel_path``, at most ``rest.batch_cancel_max`` ids
per request. The service publishes one ``CANCELLED`` per accepted order (no
``CANCELLING`` events); for the orders it did not accept, and for every order when
the answer holds no array of order items (its shape is not shown, spec 4.4; a body
that is not JSON is logged as a warning), the order is read with fetchOrder to decide
(as for a single 409, except that an order still OPEN is NOT_APPLIED: resend).

Parameters
----------
order_ids : iterable of str
    The limit orders' ids (a repeated id is cancelled once).
profile_id : str, optional
    The profile that holds them; default the client's ``profile_id``.
reason : str, optional
    A reason recorded with the request.

Returns
-------
list of CancelResult
    One per distinct id, in the order given (an empty list for no ids); an order that
    is not there has the outcome NOT_FOUND.

Raises
------
RouteNotActive
    The limit-order routes are not active in this environment (404).
InvalidRequest
    A bad id, ``profile_id`` or ``reason``; nothing is sent.
ToolkitError
    A request of the batch failed: its message lists the orders earlier requests already
    had accepted, and says later requests were not sent (a cancel is never resent blindly).

Examples
--------
>>> results = await client.acancel_limit_orders(["l-1", "l-2"])  # doctest: +SKIP
>>> [r.outcome.value for r in results]  # doctest: +SKIP
['accepted', 'already_final']
""",
}
