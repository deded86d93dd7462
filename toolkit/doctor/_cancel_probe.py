"""The doctor's one write-shaped probe, run only when asked (``toolkit doctor
--probe-cancel``): where a cancel's ``profileId`` travels (spec 4.3: not shown), learnt
from cancels of an order id that cannot exist, first with ``profileId`` in the body, then
in the query (``TOOLKIT_PROFILE_ID``'s profileId, else a made-up one that no account has).
A cancel of no order changes nothing in the account; a validation refusal
(400/422) of one placement and "not found" (404) for the other tell them apart. The row's
note says exactly what was sent and what came back."""

from __future__ import annotations

import secrets
from urllib.parse import quote

from toolkit.doctor._probe import Probe

#: the id cancelled: no service issues it (a random suffix, checked absent first)
_NO_ORDER = "toolkit-doctor-no-such-order-"
#: the profileId sent when the user gave none: no account has it
_NO_PROFILE = "toolkit-doctor-no-such-profile-"
_REFUSED = (400, 422)


def probe_profile_id(pr: Probe) -> tuple[str, str]:
    """The profileId a write-shaped probe sends, and how its notes say it: the client's
    (``TOOLKIT_PROFILE_ID``), else a made-up one (no account has it: still nothing to
    change, and the answers still tell a refusal from "not found")."""
    if pr.profile_id:
        return pr.profile_id, ""
    made_up = _NO_PROFILE + secrets.token_hex(4)
    return made_up, f"profileId {made_up!r} (made up: TOOLKIT_PROFILE_ID is not set); "


async def probe_cancel_placement(pr: Probe) -> None:
    """Cancel an order that does not exist with ``profileId`` in each place; the place
    answered "not found" (rather than refused) is where the service reads it."""
    f, rest = pr.findings, pr.assumed.rest
    if not pr.token:
        raise RuntimeError("no token (sign-in failed)")
    profile_id, whose = probe_profile_id(pr)
    oid = _NO_ORDER + secrets.token_hex(6)
    fetched = await pr.get(rest.fetch_order_path, {rest.fetch_order_param: oid})
    if fetched.ok:  # never cancel anything that exists
        raise RuntimeError(f"the probe's order id {oid!r} exists; nothing was cancelled")
    path = rest.cancel_path.format(order_id=quote(oid, safe=""))
    answers: dict[str, int] = {}
    for place in ("body", "query"):
        a = await pr.request(
            "PATCH",
            path,
            params={"profileId": profile_id} if place == "query" else None,
            json_body={"profileId": profile_id} if place == "body" else {},
            headers=pr.headers(),
            retries=0,
        )
        answers[place] = a.status
    sent = whose + "; ".join(
        f"PATCH {path} with profileId in the {place} -> {status or 'no answer'}"
        for place, status in answers.items()
    )
    taken = [p for p, status in answers.items() if status == 404]
    refused = [p for p, status in answers.items() if status in _REFUSED]
    if len(taken) == 1 and len(refused) == 1:
        f.set("rest.cancel_profile_in", taken[0], note=f"sent (no such order): {sent}")
    elif len(taken) == 2:
        f.set(
            "rest.cancel_profile_in",
            rest.cancel_profile_in,
            ok=True,
            note=f"the service takes either place; sent (no such order): {sent}",
        )
    else:
        f.unknown(
            "rest.cancel_profile_in",
            f"the answers do not tell the place apart; sent (no such order): {sent}",
        )
