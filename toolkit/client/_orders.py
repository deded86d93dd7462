"""The ``Client``'s limit-order writes: create, cancel one and cancel a batch (each with
its sync twin), as a mixin so they stay ``Client`` methods with the same signatures."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from toolkit.client import _cancel
from toolkit.client._cancel import CancelResult
from toolkit.client._settings import Settings
from toolkit.client._transport import Route, decode_json
from toolkit.errors import (
    BadRequest,
    Conflict,
    InvalidRequest,
    InvalidResponse,
    OrderNotFound,
    RouteNotActive,
    ToolkitError,
)
from toolkit.profile import ID_CANDIDATES, find_field
from toolkit.profile._learned import Learned
from toolkit.protocol import (
    canonical_order_id,
    canonical_status,
    kind_of,
    order_id_path_segment,
    order_id_problem,
    validate_decimal,
    validate_order_id,
    validate_order_ids,
    validate_profile_id,
    validate_side,
    validate_symbol,
)

T = TypeVar("T")

#: the profile point a cancel's answer can show (spec 4.3: where profileId travels)
CANCEL_PLACEMENT = "rest.cancel_profile_in"

logger = logging.getLogger("toolkit.rest")


class LimitOrderWrites:
    """Create and cancel limit orders; mixed into :class:`~toolkit.client._client.Client`,
    whose settings, requests, loop thread and ``afetch_order`` these methods use."""

    _settings: Settings
    _learned: Learned

    if TYPE_CHECKING:  # defined by Client

        def _run(self, coro: Coroutine[Any, Any, T]) -> T: ...

        async def _request(
            self,
            method: str,
            path: str,
            *,
            route: Route,
            params: Mapping[str, str] | None = None,
            json_body: Any = None,
            idempotent: bool | None = None,
        ) -> httpx.Response: ...

        async def afetch_order(self, order_id: str) -> dict[str, Any]: ...

        def _own_order(self, order: dict[str, Any]) -> None: ...

    def _profile_id(self, given: str | None) -> str:
        """The profile id to send: the one given (even an empty one, which is refused
        rather than replaced), else the client's."""
        return validate_profile_id(self._settings.profile_id if given is None else given)

    async def acreate_limit_order(
        self,
        symbol: str,
        side: str,
        limit_price: object,
        *,
        amount: object = None,
        quote_amount: object = None,
        expires_at: datetime | int | None = None,
        profile_id: str | None = None,
        client_order_id: str | None = None,
    ) -> dict[str, Any]:
        """Create a limit order; returns the whole order (OPEN, or REJECTED with its
        ``statusReason``). Give exactly one of ``amount`` (crypto) and ``quote_amount``
        (fiat). ``expires_at``: aware datetime or Unix ms; default 24 h from now; sent in
        Unix seconds when the profile's ``orders.timestamp_unit`` is ``s``, else in ms.
        Never retried on 503 or a network error (it is not idempotent)."""
        body: dict[str, Any] = {
            "profileId": self._profile_id(profile_id),
            "symbol": validate_symbol(symbol),
            "side": validate_side(side),
            "limitPrice": validate_decimal(limit_price, "limit_price"),
        }
        if (amount is None) == (quote_amount is None):
            raise InvalidRequest("give exactly one of amount= and quote_amount=")
        if amount is not None:
            body["amount"] = validate_decimal(amount, "amount")
        else:
            body["quoteAmount"] = validate_decimal(quote_amount, "quote_amount")
        expires_ms = _expires_ms(expires_at)
        seconds = self._settings.profile.orders.timestamp_unit == "s"
        body["expiresAt"] = expires_ms // 1000 if seconds else expires_ms
        if client_order_id is not None:
            body["clientOrderId"] = validate_order_id(client_order_id)
        response = await self._request(
            "POST",
            self._settings.profile.rest.limit_orders_path,
            route=Route.CREATE_LIMIT,
            json_body=body,
            idempotent=False,
        )
        order = _as_order(decode_json(response), response)
        self._own_order(order)
        return order

    def create_limit_order(
        self,
        symbol: str,
        side: str,
        limit_price: object,
        *,
        amount: object = None,
        quote_amount: object = None,
        expires_at: datetime | int | None = None,
        profile_id: str | None = None,
        client_order_id: str | None = None,
    ) -> dict[str, Any]:
        return self._run(
            self.acreate_limit_order(
                symbol,
                side,
                limit_price,
                amount=amount,
                quote_amount=quote_amount,
                expires_at=expires_at,
                profile_id=profile_id,
                client_order_id=client_order_id,
            )
        )

    async def acancel_limit_order(
        self, order_id: str, *, profile_id: str | None = None, reason: str | None = None
    ) -> CancelResult:
        """Cancel one limit order (spec 4.3) and say what that achieved.

        A 2xx whose body is a JSON object with a ``status`` of CANCELLING (or CANCELLED)
        -> ACCEPTED (route ``rest.cancel_path``; ``profileId`` in the body or the query per
        ``rest.cancel_profile_in``). A 2xx whose body is not empty and not a JSON object
        (an HTML page of a proxy or firewall, text, an array), or whose order id is another
        order's, raises InvalidResponse: the cancel may not have reached the service. A 2xx
        without a clear acceptance (an empty body, no such ``status``) is confirmed with
        fetchOrder: ACCEPTED when the order reads CANCELLING or CANCELLED, ALREADY_FINAL
        when it ended otherwise, else NOT_APPLIED (``should_resend``: the cancel did not
        take effect). 409 is never retried: the order is read with
        fetchOrder and the result says DEFERRED (executing: recorded, do not resend),
        ALREADY_FINAL or ALREADY_CANCELLING; a fetched order without a string ``status``,
        or with one that is not a limit-order status, raises InvalidResponse naming the
        order and the field. 404 raises RouteNotActive when the limit routes are not
        active here, else OrderNotFound (unknown order, or not in that profile; also when
        the listing probe that tells the two apart fails otherwise). Every error carries
        ``order_id``.
        """
        try:
            return await self._cancel_one(order_id, profile_id, reason)
        except ToolkitError as exc:
            if exc.order_id is None and isinstance(order_id, str):
                exc.order_id = order_id  # the order the call was about, even a refused id
            raise

    async def _cancel_one(
        self, order_id: str, profile_id: str | None, reason: str | None
    ) -> CancelResult:
        oid = validate_order_id(order_id)
        profile = self._settings.profile
        path = profile.rest.cancel_path.format(order_id=order_id_path_segment(oid))
        pid = self._profile_id(profile_id)
        body: dict[str, Any] = {}
        if reason is not None:
            if not isinstance(reason, str):
                raise InvalidRequest(f"reason must be a string, not {reason!r}")
            body["reason"] = reason
        try:
            response = await self._send_cancel(path, pid, body)
        except Conflict:
            # the 409 body is not relied on: the order's state says which 409 this was
            order = await self.afetch_order(oid)
            return _cancel.refused(oid, order, 409, self._finalized(), self._active())
        except OrderNotFound as exc:
            await self._raise_if_routes_inactive(exc)
            raise
        # a 2xx is the acceptance only when it says so, about this order (spec 4.3: the
        # order is CANCELLING): a proxy's page or another order's answer is no acceptance
        unit = profile.orders.timestamp_unit
        payload = _acceptance(response, "the cancel", "rest.cancel_path")
        _check_answer_id(payload, oid, response)
        raw = payload.get("status")
        if isinstance(raw, str) and canonical_status(raw) in ("CANCELLING", "CANCELLED"):
            return _cancel.accepted(oid, payload, response.status_code, unit)
        logger.info(
            "the cancel of order %r was answered %d without a CANCELLING status; reading "
            "the order with fetchOrder to see whether it took effect",
            oid,
            response.status_code,
        )
        try:
            order = await self.afetch_order(oid)
        except ToolkitError as exc:
            _add_to_message(
                exc,
                f"the cancel of order {oid!r} was answered {response.status_code} without "
                "a clear acceptance (no CANCELLING status) and reading the order to confirm "
                "it failed; read the order (fetchOrder) before resending",
            )
            raise
        return _cancel.confirmed(
            oid, payload, order, response.status_code, unit, self._finalized(), self._active()
        )

    async def _send_cancel(self, path: str, pid: str, body: dict[str, Any]) -> httpx.Response:
        """The cancel request with ``profileId`` where the profile says, or where this
        client learnt the service wants it. A 400/422 (a validation refusal: nothing was
        recorded) is sent once more with ``profileId`` in the other place; when the
        service takes that one (any answer but another refusal), the placement is learnt
        for the session (:attr:`Client.learned`, one warning naming the profile line)."""
        said = self._settings.profile.rest.cancel_profile_in
        placement = str(self._learned.value(CANCEL_PLACEMENT, said))
        try:
            return await self._patch_cancel(path, pid, body, placement)
        except BadRequest as refused:
            if CANCEL_PLACEMENT in self._learned:
                raise  # learnt from this service already: no second guess
            other = "query" if placement == "body" else "body"
            logger.info(
                "the cancel was refused %s with profileId in the %s; trying once with "
                "profileId in the %s (rest.cancel_profile_in is not shown by the spec)",
                refused.status,
                placement,
                other,
            )
            try:
                response = await self._patch_cancel(path, pid, body, other)
            except BadRequest as again:
                _add_to_message(
                    refused,
                    f"also refused ({again.status}) with profileId in the {other}",
                )
                raise refused from None
            except (Conflict, OrderNotFound):
                self._learn_placement(other, said, refused.status)
                raise
            self._learn_placement(other, said, refused.status)
            return response

    def _learn_placement(self, value: str, said: str, status: int | None) -> None:
        self._learned.learn(
            CANCEL_PLACEMENT,
            value,
            said,
            f"the cancel was refused {status} with profileId in the {said} and taken "
            f"with it in the {value}",
        )

    async def _patch_cancel(
        self, path: str, pid: str, body: dict[str, Any], placement: str
    ) -> httpx.Response:
        params = {"profileId": pid} if placement == "query" else None
        payload = body if placement == "query" else {**body, "profileId": pid}
        return await self._request(
            "PATCH",
            path,
            route=Route.CANCEL_LIMIT,
            params=params,
            json_body=payload,
            idempotent=False,
        )

    def _finalized(self) -> frozenset[str]:
        return frozenset(self._settings.profile.listing.finalized_statuses)

    def _active(self) -> frozenset[str]:
        return frozenset(self._settings.profile.listing.active_statuses)

    def cancel_limit_order(
        self, order_id: str, *, profile_id: str | None = None, reason: str | None = None
    ) -> CancelResult:
        return self._run(self.acancel_limit_order(order_id, profile_id=profile_id, reason=reason))

    async def _raise_if_routes_inactive(self, exc: OrderNotFound) -> None:
        """A 404 on cancel means either no such order or an inactive route; the listing
        (which has no order to miss) tells which. When that probe fails otherwise, it
        returns and the caller re-raises the original OrderNotFound."""
        try:
            await self._request(
                "GET",
                self._settings.profile.rest.limit_orders_path,
                route=Route.LIST_LIMIT,
                params={"limit": str(self._settings.profile.listing.page_min)},
                idempotent=True,
            )
        except RouteNotActive as probe:
            raise RouteNotActive(
                probe.message,
                method=exc.method,
                url=exc.url,
                status=exc.status,
                body=exc.body,
                order_id=exc.order_id,
            ) from exc
        except ToolkitError:
            # the probe could not tell (a 503, a key that may cancel but not list...): the
            # cancel's own answer stands
            return

    async def acancel_limit_orders(
        self,
        order_ids: Iterable[str],
        *,
        profile_id: str | None = None,
        reason: str | None = None,
    ) -> list[CancelResult]:
        """Cancel many limit orders in one request; one result per distinct id, in order.

        Sent to ``rest.batch_cancel_path`` with the ids under ``rest.batch_ids_field``,
        at most ``rest.batch_cancel_max`` ids per request. Accepted items come from the
        batch response's ``orders`` array (items of orders not asked for are ignored, with
        a warning); for the others (every order, when a 2xx has no such array: its shape
        is not shown, spec 4.4) the order is read with fetchOrder to decide (as for a
        single 409, except that an order still OPEN is NOT_APPLIED: the cancel did not
        take effect, ``should_resend``). Not found -> NOT_FOUND. A 2xx whose body is not
        JSON (a proxy's HTML page: the cancels may not have reached the service) is logged
        as a warning, and every order is read with fetchOrder. A 404 on the route raises
        RouteNotActive naming both causes: the route is not active here, or
        ``rest.batch_cancel_path`` is not the service's (its path is a profile guess); a 400
        names ``rest.batch_cancel_path``, ``rest.batch_ids_field`` and
        ``rest.batch_cancel_max``. An error after the service accepted some of the requests
        says so: its message names the orders whose cancels were accepted.
        """
        ids = validate_order_ids(order_ids)
        pid = self._profile_id(profile_id)
        if reason is not None and not isinstance(reason, str):
            raise InvalidRequest(f"reason must be a string, not {reason!r}")
        if not ids:
            return []
        by_id: dict[str, dict[str, Any]] = {}
        http_status: int | None = None
        rest = self._settings.profile.rest
        unit = self._settings.profile.orders.timestamp_unit
        size = max(1, rest.batch_cancel_max)
        chunks = [ids[start : start + size] for start in range(0, len(ids), size)]
        sent: list[str] = []  # the ids of the requests the service accepted
        for number, chunk in enumerate(chunks, 1):
            body: dict[str, Any] = {"profileId": pid, rest.batch_ids_field: chunk}
            if reason is not None:
                body["reason"] = reason
            try:
                response = await self._request(
                    "POST",
                    rest.batch_cancel_path,
                    route=Route.BATCH_CANCEL,
                    json_body=body,
                    idempotent=False,
                )
                items = _batch_items(response, chunk)
            except ToolkitError as exc:
                if sent:
                    refused = exc.status is not None and 400 <= exc.status < 500
                    later = number < len(chunks)
                    _say_accepted(
                        exc,
                        sent,
                        f"batch cancel request {number} of {len(chunks)} failed after the "
                        f"service had accepted the {number - 1} before it",
                        f"request {number} was "
                        + ("refused" if refused else "perhaps applied, perhaps not")
                        + (" and later ones were not sent" if later else "")
                        + "; read the orders with fetchOrder",
                    )
                raise
            http_status = response.status_code
            sent.extend(chunk)
            by_id.update(items)

        async def decide(oid: str) -> CancelResult:
            item = by_id.get(oid)
            if item is not None and item.get("accepted") is True:
                return _cancel.accepted(oid, item, http_status, unit)
            # the item's status is not relied on: the order's own state decides
            try:
                order = await self.afetch_order(oid)
            except OrderNotFound:
                return _cancel.not_found(oid, http_status)
            return _cancel.after_batch(oid, order, http_status, self._finalized(), self._active())

        results = await asyncio.gather(*(decide(oid) for oid in ids), return_exceptions=True)
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if isinstance(failed, ToolkitError):
            _say_accepted(
                failed,
                sent,
                "the service had accepted every batch cancel request, then reading the "
                "orders to say what each cancel achieved failed",
                "read the orders with fetchOrder",
            )
        if failed is not None:
            raise failed
        return [r for r in results if isinstance(r, CancelResult)]

    def cancel_limit_orders(
        self,
        order_ids: Iterable[str],
        *,
        profile_id: str | None = None,
        reason: str | None = None,
    ) -> list[CancelResult]:
        return self._run(self.acancel_limit_orders(order_ids, profile_id=profile_id, reason=reason))


def _batch_items(response: httpx.Response, asked: list[str]) -> dict[str, dict[str, Any]]:
    """The per-order items of a 2xx batch-cancel answer to the request for ``asked``, by
    id. The answer's shape is not shown (spec 4.4): an ``orders`` array of objects, or a
    JSON array of objects, gives items; anything else (an empty 202, another object, an
    array of ids, text, a proxy's HTML page) gives none, and every order is then read
    with fetchOrder, which decides (an order still OPEN: NOT_APPLIED, resend). Items of
    orders not asked for are ignored with a warning."""
    items: object = None
    if response.content.strip():
        try:
            payload = decode_json(response)
        except InvalidResponse as exc:
            kind = response.headers.get("content-type", "").split(";")[0].strip() or "?"
            logger.warning(
                "batch cancel (rest.batch_cancel_path) answered %d with a body that is not "
                "JSON (%s, %s): it may not come from the service; each order is read with "
                "fetchOrder to decide",
                response.status_code,
                kind,
                exc.message,
            )
            return {}
        items = payload.get("orders") if isinstance(payload, dict) else payload
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        logger.info(
            "batch cancel answered %d without an array of order items; each order is read "
            "with fetchOrder instead",
            response.status_code,
        )
        return {}
    wanted = set(asked)
    by_id: dict[str, dict[str, Any]] = {}
    strangers: list[str] = []
    for item in items:
        key = find_field(item, "id", ID_CANDIDATES) if isinstance(item, dict) else None
        got = item[key] if key is not None else None
        oid = canonical_order_id(got)  # 123 answers the cancel of "123"
        if oid is not None and oid in wanted:
            by_id[oid] = item
        else:
            strangers.append(repr(got)[:40] if got is not None else "(no id)")
    if strangers:
        logger.warning(
            "batch cancel answered %d with %d item(s) of orders it was not asked to cancel "
            "(%s): ignored; the orders asked for that no item accepts are read with "
            "fetchOrder",
            response.status_code,
            len(strangers),
            ", ".join(strangers[:10]) + (" ..." if len(strangers) > 10 else ""),
        )
    return by_id


def _say_accepted(exc: ToolkitError, accepted: list[str], what: str, then: str) -> None:
    """Add to ``exc``'s message the orders whose batch cancel the service had already
    accepted, so that a later failure does not hide cancels that were made."""
    shown = ", ".join(accepted[:20]) + (" ..." if len(accepted) > 20 else "")
    _add_to_message(
        exc, f"{what}: cancels of {len(accepted)} order(s) were accepted ({shown}); {then}"
    )


def _add_to_message(exc: ToolkitError, text: str) -> None:
    exc.message = f"{exc.message}; {text}"
    exc.args = (exc.message,)


def _acceptance(response: httpx.Response, what: str, setting: str) -> dict[str, Any]:
    """The JSON object of a 2xx cancel answer; {} for an empty body. Anything else (a
    proxy's or firewall's HTML page, text, an array) raises InvalidResponse naming the
    route (``setting``): such a 2xx may not come from the service at all."""
    if not response.content.strip():
        return {}
    cause: InvalidResponse | None = None
    try:
        payload = decode_json(response)
    except InvalidResponse as exc:
        problem, body, cause = exc.message, exc.body, exc
    else:
        if isinstance(payload, dict):
            return payload
        problem, body, cause = f"response body is {kind_of(payload)}", None, None
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    raise InvalidResponse(
        f"{what} route ({setting}) answered {response.status_code}"
        f"{f' ({kind})' if kind else ''} with a body that is not a JSON object ({problem}): "
        "the cancel may not have reached the service; read the order (fetchOrder) before "
        "resending",
        method=response.request.method,
        url=response.request.url,
        status=response.status_code,
        body=body,
    ) from cause


def _check_answer_id(payload: Mapping[str, Any], asked: str, response: httpx.Response) -> None:
    """InvalidResponse when a cancel's 2xx body names another order than ``asked`` (its id
    read as list items' are: ``id`` or a usual alias); a body without an id passes (its
    other fields are not shown, spec 2.6)."""
    key = find_field(payload, "id", ID_CANDIDATES)
    if key is None or canonical_order_id(payload[key]) == asked:
        return
    raise InvalidResponse(
        f"the cancel of order {asked!r} was answered {response.status_code} with the "
        f"answer about another order ({key!r}: {payload[key]!r}): the cancel may not have "
        "reached the service; read the order (fetchOrder) before resending",
        method=response.request.method,
        url=response.request.url,
        status=response.status_code,
        order_id=asked,
    )


def _as_order(
    payload: object, response: httpx.Response, asked: str | None = None
) -> dict[str, Any]:
    """``payload`` as an order body: an object with a string ``id`` (spec 2.4), equal to
    ``asked`` when the call asked for one order (fetchOrder must not answer another)."""
    where: dict[str, Any] = {
        "method": response.request.method,
        "url": response.request.url,
        "status": response.status_code,
        "order_id": asked,
    }
    if not isinstance(payload, dict):
        raise InvalidResponse(f"order response is {kind_of(payload)}, not an object", **where)
    if "id" not in payload:
        raise InvalidResponse("order response has no 'id' (spec 2.4)", **where)
    got = canonical_order_id(payload["id"])
    if got is None:
        raise InvalidResponse(
            f"order response's 'id' (spec 2.4) {order_id_problem(payload['id'])}; an order "
            "id must be text or an integer",
            **where,
        )
    if asked is not None and got != asked:
        raise InvalidResponse(
            f"fetchOrder for {asked!r} answered the body of another order ({got!r})", **where
        )
    # one form whatever the JSON type: 123 and "123" are the same order everywhere
    payload["id"] = got
    return payload


def checked_order(response: httpx.Response, asked: str) -> dict[str, Any]:
    """The fetchOrder body of ``response`` for order ``asked``, or InvalidResponse naming
    the order, the URL and what was wrong (not JSON, nested too deep, not an object, no
    id, another order's id)."""
    return _as_order(decode_json(response, order_id=asked), response, asked)


def _expires_ms(expires_at: datetime | int | None) -> int:
    if expires_at is None:
        return int(time.time() * 1000) + 24 * 3600 * 1000
    if isinstance(expires_at, datetime):
        if expires_at.tzinfo is None:
            raise InvalidRequest("expires_at must be timezone-aware (e.g. tzinfo=UTC)")
        ms = int(expires_at.astimezone(UTC).timestamp() * 1000)
    elif isinstance(expires_at, int) and not isinstance(expires_at, bool):
        ms = expires_at
    else:
        raise InvalidRequest(f"expires_at must be a datetime or Unix ms, not {expires_at!r}")
    if ms <= int(time.time() * 1000):
        raise InvalidRequest("expires_at is in the past")
    return ms
