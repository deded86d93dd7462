"""The doctor's batch-cancel probe, run only when asked (``toolkit doctor --probe-cancel``):
the batch cancel's route, the body field of its id list and its largest batch (spec 4.4:
request and response shapes not shown), learnt from batch cancels of order ids that cannot
exist. A cancel of no order changes nothing in the account; the rows say what was sent."""

from __future__ import annotations

import re
import secrets
from typing import Any

from toolkit.doctor._cancel_probe import probe_profile_id
from toolkit.doctor._probe import Answer, Probe

#: usual routes of a batch cancel, tried after the profile's own
BATCH_PATHS = (
    "/orders/limit/orders/cancel",
    "/orders/limit/orders/batch-cancel",
    "/orders/limit/orders/cancel-batch",
    "/orders/limit/orders/cancel-many",
    "/orders/limit/orders/batch/cancel",
    "/orders/limit/orders/cancel/batch",
    "/orders/limit/cancel",
)
#: usual names of the id list, tried after the profile's own and those a refusal names
BATCH_FIELDS = ("orderIds", "ids", "orderIdList", "order_ids", "orders")
#: the largest batch tried when looking for the limit
MAX_TRIED = 1000
_ID_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*[Ii][Dd][A-Za-z0-9_]*\b")
_NO_ORDER = "toolkit-doctor-no-such-order-"


def _unique(items: Any) -> list[Any]:
    return list(dict.fromkeys(items))


def fields_named(text: str) -> list[str]:
    """The id-like words a refusal names (``orderIdList must be a non-empty list``)."""
    return _unique(w for w in _ID_WORD.findall(text) if w.lower() not in ("id", "ids", "profileid"))


class _Batch:
    """Batch cancels of made-up ids, each one said in ``sent``."""

    def __init__(self, pr: Probe) -> None:
        self.pr = pr
        self.prefix = _NO_ORDER + secrets.token_hex(6)
        self.profile_id, self.whose = probe_profile_id(pr)
        self.sent: list[str] = []

    def ids(self, n: int) -> list[str]:
        return [f"{self.prefix}-{i}" for i in range(n)]

    async def post(self, path: str, field: str, n: int = 1) -> Answer:
        body: dict[str, Any] = {field: self.ids(n), "profileId": self.profile_id}
        a = await self.pr.request(
            "POST", path, json_body=body, headers=self.pr.headers(), retries=0
        )
        self.sent.append(f"POST {path} {field}=[{n} id{'s' if n > 1 else ''}] -> {a.status}")
        return a

    def said(self) -> str:
        return f"sent (no such orders): {self.whose}" + "; ".join(self.sent)


async def probe_batch_cancel(pr: Probe) -> None:
    """Find the batch cancel's route and id field from a batch of one made-up id, then
    its largest batch from batches of made-up ids (a refusal of the batch's size is a
    400/422)."""
    f, rest = pr.findings, pr.assumed.rest
    if not pr.token:
        raise RuntimeError("no token (sign-in failed)")
    batch = _Batch(pr)
    probe = batch.ids(1)[0]
    fetched = await pr.get(rest.fetch_order_path, {rest.fetch_order_param: probe})
    if fetched.ok:  # never cancel anything that exists
        raise RuntimeError(f"the probe's order id {probe!r} exists; nothing was cancelled")
    path, answer = None, None
    for candidate in _unique([rest.batch_cancel_path, *BATCH_PATHS]):
        a = await batch.post(candidate, rest.batch_ids_field)
        if a.status not in (0, 404, 405):
            path, answer = candidate, a
            break
    if path is None or answer is None:
        for setting in ("rest.batch_cancel_path", "rest.batch_ids_field", "rest.batch_cancel_max"):
            f.unknown(setting, f"no batch-cancel route answered; {batch.said()}")
        return
    f.set("rest.batch_cancel_path", path, note=batch.said())
    field = rest.batch_ids_field if answer.ok else None
    if field is None:
        tried = [rest.batch_ids_field]
        for candidate in _unique([*fields_named(answer.text), *BATCH_FIELDS]):
            if candidate in tried:
                continue
            tried.append(candidate)
            if (await batch.post(path, candidate)).ok:
                field = candidate
                break
    if field is None:
        f.unknown("rest.batch_ids_field", f"no id-list field was taken; {batch.said()}")
        f.unknown("rest.batch_cancel_max", "the id-list field is unknown")
        return
    f.set("rest.batch_ids_field", field, note=batch.said())
    await _batch_max(pr, batch, path, field)


async def _batch_max(pr: Probe, batch: _Batch, path: str, field: str) -> None:
    """The largest batch taken: the assumed one when it is taken and one more is refused,
    else a search between a batch taken and one refused."""
    f, assumed = pr.findings, pr.assumed.rest.batch_cancel_max
    start = len(batch.sent)

    async def taken(n: int) -> bool | None:
        a = await batch.post(path, field, n)
        return True if a.ok else False if a.status in (400, 413, 422) else None

    def said() -> str:
        return f"sent (no such orders): {batch.whose}" + "; ".join(batch.sent[start:])

    first = await taken(assumed)
    if first and await taken(assumed + 1) is False:
        f.set("rest.batch_cancel_max", assumed, note=said())
        return
    good, bad = (assumed, None) if first else (1, assumed if first is False else None)
    while bad is None and good < MAX_TRIED:
        n = min(good * 2, MAX_TRIED)
        ok = await taken(n)
        if ok is None:
            f.unknown("rest.batch_cancel_max", f"a batch of {n} got no clear answer; {said()}")
            return
        good, bad = (n, None) if ok else (good, n)
    if bad is None:
        f.set("rest.batch_cancel_max", good, note=f"{good} still taken: at least that; {said()}")
        return
    while bad - good > 1:
        mid = (good + bad) // 2
        ok = await taken(mid)
        if ok is None:
            f.unknown("rest.batch_cancel_max", f"a batch of {mid} got no clear answer; {said()}")
            return
        good, bad = (mid, bad) if ok else (good, mid)
    f.set("rest.batch_cancel_max", good, note=f"{bad} refused; {said()}")
