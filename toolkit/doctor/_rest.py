"""The REST probes of the doctor: sign-in (route, fields, token and expiry shape, the status
of bad credentials), how requests carry identity, the limit routes, page bounds, the list
item fields, fetchOrder's parameter, and what order bodies show. GET and sign-in only."""

from __future__ import annotations

import re
import time
from typing import Any

from toolkit.doctor import _shapes as sh
from toolkit.doctor._probe import Answer, LimitExceeded, Probe
from toolkit.errors import TransportError, redact_url
from toolkit.profile import get_path
from toolkit.protocol import canonical_order_id

SIGNIN_PATHS = (
    "/auth/signin",
    "/auth/login",
    "/auth/token",
    "/auth/session",
    "/api/v2/session",
    "/api/v1/session",
    "/session",
    "/signin",
    "/login",
    "/token",
)
SIGNIN_FIELDS = (
    ("apiKey", "apiSecret"),
    ("key", "secret"),
    ("api_key", "api_secret"),
    ("apiKey", "secret"),
    ("clientId", "clientSecret"),
    ("client_id", "client_secret"),
    ("accessKey", "secretKey"),
)
AUTH_HEADERS = (
    ("Authorization", "Bearer"),
    ("Authorization", ""),
    ("X-Auth-Token", ""),
    ("X-API-Token", ""),
    ("X-Access-Token", ""),
)
FETCH_PARAMS = ("orderId", "id", "order_id")
PAGE_TRIES = (100, 200, 500, 1000)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_NINE: tuple[str, ...] = ("OPEN", "TRIGGERED", "PROCESSING", "CANCELLING", "EXECUTED")
_NINE += ("CLOSED", "EXPIRED", "CANCELLED", "REJECTED")


def _nest(path: str, value: Any, into: dict[str, Any]) -> dict[str, Any]:
    node = into
    *heads, last = path.split(".")
    for h in heads:
        node = node.setdefault(h, {})
    node[last] = value
    return into


def _unique(items: Any) -> list[Any]:
    out: list[Any] = []
    for i in items:
        if i not in out:
            out.append(i)
    return out


def _fields_named_in(text: str) -> list[tuple[str, str]]:
    """(key, secret) field pairs an error text names (``key and secret are required``)."""
    words = _unique(_WORD.findall(text))
    keys = [w for w in words if "key" in w.lower() or w.lower() in ("username", "clientid")]
    secrets = [w for w in words if any(s in w.lower() for s in ("secret", "password"))]
    return [(k, s) for k in keys for s in secrets if k != s]


# ------------------------------------------------------------------ sign-in


async def _signin(pr: Probe, path: str, kf: str, sf: str, secret: str) -> Answer:
    body = _nest(sf, secret, _nest(kf, pr.api_key, {}))
    return await pr.request("POST", path, json_body=body, retries=1)


async def probe_signin(pr: Probe) -> None:
    """Find the sign-in route and fields that give a token; learn the token and expiry
    paths, the expiry kind and unit, and the status of a wrong secret."""
    f, si = pr.findings, pr.assumed.signin
    paths = _unique([si.path, *SIGNIN_PATHS])
    pairs: list[tuple[str, str]] = _unique([(si.key_field, si.secret_field), *SIGNIN_FIELDS])
    answer: Answer | None = None
    refused: list[str] = []
    for path in paths:
        try:
            first = await _signin(pr, path, *pairs[0], pr.api_secret)
        except LimitExceeded as exc:  # no usable sign-in answer: nothing else can be seen
            raise TransportError(
                f"no usable answer from {redact_url(pr.base_url)}: {pr.redact(str(exc))}"
            ) from None
        if first.status in (0, 404, 405):
            if first.status == 0:
                raise TransportError(f"no answer from {redact_url(pr.base_url)}: {first.error}")
            continue
        tries = _unique([pairs[0], *_fields_named_in(first.text), *pairs])
        a = first
        for kf, sf in tries:
            if (kf, sf) != pairs[0]:
                a = await _signin(pr, path, kf, sf, pr.api_secret)
            if a.ok and isinstance(a.body, dict):
                answer, pr.signin_path, pr.key_field, pr.secret_field = a, path, kf, sf
                break
            if a.status in (401, 403):
                refused.append(f"{path} {kf}/{sf}: {a.status}")
        if answer is not None or refused:
            break
    if answer is None:
        why = "; ".join(refused) or "no route answered (tried " + ", ".join(paths) + ")"
        for name in ("path", "key_field", "secret_field", "token_field", "expiry_field"):
            f.unknown(f"signin.{name}", f"sign-in failed: {why}")
        raise PermissionError(f"sign-in failed ({why}); check TOOLKIT_API_KEY / _SECRET")
    f.set("signin.path", pr.signin_path)
    f.set("signin.key_field", pr.key_field)
    f.set("signin.secret_field", pr.secret_field)
    token_path = sh.find_token(answer.body, si.token_field)
    if token_path is None:
        f.unknown("signin.token_field", "no token-like string in the sign-in answer")
    else:
        pr.token = str(get_path(answer.body, token_path))
        pr.redact.add(pr.token)
        f.set("signin.token_field", token_path)
    expiry_path = sh.find_expiry(answer.body, si.expiry_field)
    if expiry_path is None:
        f.unknown("signin.expiry_field", "no expiry-like field in the sign-in answer")
    else:
        value = get_path(answer.body, expiry_path)
        kind, unit = sh.expiry_shape(value, time.time(), expiry_path)
        f.set("signin.expiry_field", expiry_path)
        f.set("signin.expiry_kind", kind, note=f"{value!r}")
        _expiry_unit(pr, value, kind, unit, expiry_path)
    wrong = pr.api_secret + "-doctor-wrong"
    pr.redact.add(wrong)
    bad = await _signin(pr, pr.signin_path, pr.key_field, pr.secret_field, wrong)
    if bad.status:
        known = bad.status in si.bad_credentials_statuses
        f.set(
            "signin.bad_credentials_statuses",
            (bad.status,),
            value=si.bad_credentials_statuses if known else (bad.status,),
            note=f"a wrong secret answered {bad.status}",
        )
        _error_field(pr, bad)


def _expiry_unit(pr: Probe, value: Any, kind: str, unit: str | None, path: str) -> None:
    """The ``signin.expiry_unit`` row. An ambiguous ttl is not observed: the assumed unit,
    explicit or ``auto``, is kept and never advised against on a guess."""
    f, assumed = pr.findings, pr.assumed.signin.expiry_unit
    if unit is None:
        number = sh.as_float(value) or 0.0
        kept = "auto reads it as seconds" if assumed == "auto" else f"{assumed!r} kept"
        f.unknown(
            "signin.expiry_unit",
            f"ttl {value!r} at {path!r} is {_span(number)} in seconds or "
            f"{_span(number / 1000)} in milliseconds, and the field's name says neither; "
            f"{kept}; set signin.expiry_unit from the service's documentation",
        )
        return
    named = kind == "ttl" and sh.unit_in_name(path) is not None
    how = f"the field's name {path.rsplit('.', 1)[-1]!r} says it" if named else "by magnitude"
    note = f"{how}; auto reads it the same way" if assumed == "auto" else how
    f.set("signin.expiry_unit", unit, ok=assumed in ("auto", unit), note=note)


def _span(seconds: float) -> str:
    """A duration for people: ``3.6 s``, ``1 h``, ``41.7 days``."""
    for size, name in ((86400.0, "days"), (3600.0, "h"), (60.0, "min")):
        if seconds >= size:
            return f"{seconds / size:.3g} {name}"
    return f"{seconds:.3g} s"


def _error_field(pr: Probe, a: Answer) -> None:
    """The field of the human-readable text in an error body."""
    if pr.findings.seen("rest.error_message_field") or not isinstance(a.body, dict):
        return
    assumed = pr.assumed.rest.error_message_field
    said = get_path(a.body, assumed)
    if isinstance(said, str) and said.strip():
        name: str | None = assumed
    else:
        name = _text_path(a.body)
    if name is not None:
        pr.findings.set("rest.error_message_field", name, note=f"HTTP {a.status} body")


def _text_path(body: Any, depth: int = 3) -> str | None:
    """The path of the first text in an error body, nearest first: a field of it, or of
    an object in a list of it (``errors[0].detail``, ``detail[0].msg``)."""
    level: list[tuple[str, Any]] = [("", body)]
    for _ in range(depth):
        deeper: list[tuple[str, Any]] = []
        for path, node in level:
            items = node.items() if isinstance(node, dict) else ()
            for key, value in items:
                here = f"{path}.{key}" if path else str(key)
                if isinstance(value, str) and value.strip():
                    return here
                if isinstance(value, dict):
                    deeper.append((here, value))
                elif isinstance(value, list) and value and isinstance(value[0], dict):
                    deeper.append((f"{here}[0]", value[0]))
        level = deeper
    return None


# ------------------------------------------------------------------ identity and routes


async def probe_identity(pr: Probe) -> None:
    """Which header carries the token: the configured one, else the usual ones."""
    f, rest = pr.findings, pr.assumed.rest
    if not pr.token:
        raise RuntimeError("no token (sign-in failed)")
    path = rest.limit_orders_path
    tried = []
    for auth in _unique([(rest.auth_header, rest.auth_scheme), *AUTH_HEADERS]):
        a = await pr.get(path, headers=pr.headers(auth))
        if a.status == 404:  # the listing may be inactive: fetchOrder tells identity apart
            a = await pr.get(
                rest.fetch_order_path,
                {rest.fetch_order_param: "doctor-no-such-order"},
                headers=pr.headers(auth),
            )
        tried.append(f"{auth[0]}: {auth[1] or '<token>'} -> {a.status}")
        if a.status and a.status not in (401, 403):
            pr.auth = auth
            break
        _error_field(pr, a)
    if pr.auth is None:
        note = "every header was refused: " + "; ".join(tried)
        f.unknown("rest.auth_header", note)
        f.unknown("rest.auth_scheme", note)
        raise PermissionError(note)
    f.set("rest.auth_header", pr.auth[0], note="; ".join(tried))
    f.set("rest.auth_scheme", pr.auth[1])


async def probe_listing(pr: Probe) -> None:
    """Limit routes active or 404; page bounds; page default; a sample of items."""
    f, lst = pr.findings, pr.assumed.listing
    path = pr.assumed.rest.limit_orders_path
    plain = await pr.get(path)
    if plain.status == 404:
        pr.listing_active = False
        f.check("limit routes", "unknown", "404", "inactive (spec 9): listing settings unseen")
        raise LookupError(f"{path} answers 404: the limit routes are not active yet")
    if not plain.ok or not isinstance(plain.body, dict):
        raise RuntimeError(f"{path} answered {plain.status}: {plain.text[:200]}")
    pr.listing_active = True
    f.check("limit routes", "match", "active", f"GET {path} answered 200")
    f.set("rest.limit_orders_path", path)
    orders = plain.body.get("orders")
    if isinstance(orders, list) and plain.body.get("paginationToken"):
        f.set("listing.page_default", len(orders), note="a full page without limit")
    else:
        n = len(orders) if isinstance(orders, list) else 0
        f.unknown("listing.page_default", f"the account has too few orders ({n}) to fill one")

    async def accepts(limit: int) -> bool | None:
        a = await pr.get(path, {"limit": limit})
        if not a.ok:
            _error_field(pr, a)
        return True if a.ok else False if 400 <= a.status < 500 else None

    zero = await accepts(0)
    low = await _search_min(accepts, lst.page_min)
    high = await _search_max(accepts, lst.page_max, low or 1)
    pr.page_min, pr.page_max = low, high
    f.set("listing.page_min", low, note=f"limit=0 {'accepted' if zero else 'refused'}")
    if high is not None and high >= PAGE_TRIES[-1]:
        f.set("listing.page_max", high, note=f"limit={high} still accepted: at least that")
    else:
        f.set("listing.page_max", high)
    size = min(max(10, low or 1), high or 10)
    sample = await pr.get(path, {"limit": size})
    pr.items = _items(sample)
    closed = await pr.get(path, {"limit": size, "status": "CLOSED,EXECUTED"})
    pr.items += [i for i in _items(closed) if i not in pr.items]


def _items(a: Answer) -> list[dict[str, Any]]:
    body = a.body if a.ok and isinstance(a.body, dict) else {}
    return [i for i in body.get("orders") or [] if isinstance(i, dict)]


async def _search_min(accepts: Any, assumed: int) -> int | None:
    if await accepts(1):
        return 1
    if assumed > 1 and await accepts(assumed) and not await accepts(assumed - 1):
        return assumed
    bad, good = 1, None
    for k in (2, 5, 10, 20, 50, 100):
        ok = await accepts(k)
        if ok:
            good = k
            break
        bad = k
    if good is None:
        return None
    while good - bad > 1:
        mid = (good + bad) // 2
        ok = await accepts(mid)
        if ok:
            good = mid
        else:
            bad = mid
    return good


async def _search_max(accepts: Any, assumed: int, low: int) -> int | None:
    if await accepts(assumed) and await accepts(assumed + 1) is False:
        return assumed
    good, bad = low, None
    for k in sorted({assumed, *PAGE_TRIES}):
        if k <= good:
            continue
        ok = await accepts(k)
        if ok:
            good = k
        elif ok is False:
            bad = k
            break
    if bad is None:
        return good
    while bad - good > 1:
        mid = (good + bad) // 2
        ok = await accepts(mid)
        if ok:
            good = mid
        else:
            bad = mid
    return good


async def probe_items(pr: Probe) -> None:
    """The nine list-item fields by value shape; ACTIVE/FINALIZED membership."""
    f, lst = pr.findings, pr.assumed.listing
    if not pr.items:
        raise LookupError("the listing returned no orders: the item fields cannot be seen")
    names = (
        "id_field",
        "symbol_field",
        "side_field",
        "type_field",
        "status_field",
        "limit_price_field",
        "expires_at_field",
        "created_at_field",
        "updated_at_field",
    )
    assumed = {n: getattr(lst, n) for n in names}
    mapped = sh.map_list_items(pr.items, assumed)
    pr.item_fields = mapped
    seen = ", ".join(sorted(sh.leaves(pr.items[0])))
    for n in names:
        f.set(f"listing.{n}", mapped.get(n), note=f"item fields: {seen}")
    symbol_path = mapped.get("symbol_field")
    if symbol_path:
        pr.symbol = next(
            (str(get_path(i, symbol_path)) for i in pr.items if get_path(i, symbol_path)), None
        )
    await _membership(pr)


async def _membership(pr: Probe) -> None:
    f, lst = pr.findings, pr.assumed.listing
    status_path = pr.item_fields.get("status_field")
    if not status_path:
        return
    path, size = pr.assumed.rest.limit_orders_path, pr.page_max or lst.page_max

    async def statuses(flt: str) -> set[str]:
        seen: set[str] = set()
        token = None
        for _ in range(10):
            params: dict[str, Any] = {"status": flt, "limit": size}
            if token:
                params["paginationToken"] = token
            a = await pr.get(path, params)
            for item in _items(a):
                value = get_path(item, status_path)
                if isinstance(value, str):
                    seen.add(value.upper())
            token = a.body.get("paginationToken") if isinstance(a.body, dict) else None
            if not token:
                break
        return seen

    present = await statuses(",".join(_NINE))
    active, finalized = await statuses("ACTIVE"), await statuses("FINALIZED")
    for name, seen, assumed in (
        ("active_statuses", active, lst.active_statuses),
        ("finalized_statuses", finalized, lst.finalized_statuses),
    ):
        unseen = [s for s in _NINE if s not in present]
        observed = tuple(s for s in _NINE if s in seen or (s in unseen and s in assumed))
        note = f"statuses in the account: {', '.join(s for s in _NINE if s in present)}"
        if unseen:
            note += f"; assumed for {', '.join(unseen)}"
        f.set(f"listing.{name}", observed, ok=set(observed) == set(assumed), note=note)


# ------------------------------------------------------------------ fetchOrder


async def probe_fetch_order(pr: Probe) -> None:
    """fetchOrder of listed ids: the parameter name, then what the bodies show."""
    f, rest = pr.findings, pr.assumed.rest
    id_path = pr.item_fields.get("id_field") or pr.assumed.listing.id_field
    ids = _diverse_ids(pr.items, id_path, pr.item_fields.get("status_field"))
    if not ids:
        raise LookupError("no listed order id to fetch")
    param = None
    tried = []
    for candidate in _unique([rest.fetch_order_param, *FETCH_PARAMS]):
        a = await pr.get(rest.fetch_order_path, {candidate: ids[0]})
        tried.append(f"{candidate} -> {a.status}")
        if a.ok and isinstance(a.body, dict):
            param = candidate
            pr.orders.append(a.body)
            break
        _error_field(pr, a)
    if param is None:
        f.unknown("rest.fetch_order_param", "no parameter fetched a listed id: " + "; ".join(tried))
        raise LookupError("fetchOrder: " + "; ".join(tried))
    f.set("rest.fetch_order_param", param, note="; ".join(tried))
    f.set("rest.fetch_order_path", rest.fetch_order_path)
    for oid in ids[1:8]:
        a = await pr.get(rest.fetch_order_path, {param: oid})
        if a.ok and isinstance(a.body, dict):
            pr.orders.append(a.body)
    observe_orders(pr)


def _diverse_ids(items: list[dict[str, Any]], id_path: str, status_path: str | None) -> list[str]:
    """Listed ids, one per status first (closed ones lead: they carry evaluatedTickers)."""
    by_status: dict[str, list[str]] = {}
    for item in items:
        # its one form (123 -> "123"); a value no id can be (1.5, true) is not tried
        oid = canonical_order_id(get_path(item, id_path))
        if oid is None:
            continue
        status = str(get_path(item, status_path) if status_path else "").upper()
        by_status.setdefault(status, []).append(oid)
    order = sorted(by_status, key=lambda s: (s != "CLOSED", s != "EXECUTED", s))
    first = [by_status[s][0] for s in order]
    rest = [i for s in order for i in by_status[s][1:]]
    return first + rest


def observe_orders(pr: Probe) -> None:
    """Timestamp unit, status case and evaluatedTickers fields of the bodies seen so far
    (fetchOrder answers and watchOrders notifications)."""
    f, o = pr.findings, pr.assumed.orders
    bodies = [*pr.orders, *pr.notifications]
    units: set[str] = set()
    for body in bodies:
        units |= sh.order_time_units(body)
    if units:
        unit = units.pop() if len(units) == 1 else "auto"
        f.set(
            "orders.timestamp_unit",
            unit,
            ok=o.timestamp_unit in ("auto", unit),
            note="auto tells them apart per value" if o.timestamp_unit == "auto" else "",
        )
    pairs = [
        (b["status"], str(b.get("type", "")).lower())
        for b in bodies
        if isinstance(b.get("status"), str)
    ]
    case = sh.status_case(pairs)
    shown = ", ".join(sorted({p[0] for p in pairs}))
    if case is None:
        f.unknown("orders.status_case", f"statuses seen ({shown}) do not tell the case apart")
    else:
        f.set("orders.status_case", case, note=f"statuses seen: {shown}")
    elements = [e for b in bodies for e in (b.get("evaluatedTickers") or []) if isinstance(e, dict)]
    if not elements:
        note = "no fetched order had evaluatedTickers"
        for m in ("venue", "price", "time", "reason"):
            f.unknown(f"orders.quote_{m}_field", note)
        return
    quotes = sh.map_quotes(elements)
    fields = ", ".join(sorted({k for e in elements for k in sh.leaves(e)}))
    for m, path in quotes.items():
        note = f"element fields: {fields}"
        if path is None and m == "reason":
            note += "; no element carried a reason"
        f.set(f"orders.quote_{m}_field", path, note=note)
