"""``adiagnose`` / ``diagnose``: run every probe of the doctor against a live service with a
client's settings and credentials, each step on its own (one failing does not stop the
others) within one deadline for the whole run, and gather what they saw into a
:class:`~toolkit.doctor._report.Diagnosis`."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import httpx

from toolkit.doctor._batch_probe import probe_batch_cancel
from toolkit.doctor._cancel_probe import probe_cancel_placement
from toolkit.doctor._probe import Probe
from toolkit.doctor._report import Diagnosis, Findings, Redactor
from toolkit.doctor._rest import (
    probe_fetch_order,
    probe_identity,
    probe_items,
    probe_listing,
    probe_signin,
)
from toolkit.doctor._ws import probe_ws
from toolkit.errors import InvalidRequest, TransportError, redact_url
from toolkit.profile import ServiceProfile
from toolkit.stream._keepalive import ConnectionPolicy

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._client import Client

_WRITES = "only a cancel would show it, and the doctor sends none unless asked (--probe-cancel)"
_BATCH = (
    "only a batch cancel would show it, and the doctor sends none unless asked "
    "(--probe-cancel: batches of order ids that do not exist)"
)
#: the settings a read-only check cannot see, and why
UNOBSERVABLE: dict[str, str] = {
    "rest.cancel_path": _WRITES,
    "rest.cancel_profile_in": _WRITES,
    "rest.cancel_status": _WRITES,
    "rest.batch_cancel_path": _BATCH,
    "rest.batch_ids_field": _BATCH,
    "rest.batch_cancel_max": _BATCH,
    "stream.limit_events": "only limit orders changing state would show it (no writes)",
    "stream.max_duration_s": "would need a connection held open for hours",
    "stream.idle_limit_s": "would need an idle connection held for minutes",
    "stream.keepalive_interval_s": "a client choice: keep it below the idle limit",
    "stream.refusal_http_statuses": "only seen when the service refuses by HTTP status",
    "stream.refusal_close_codes": "only seen when the service refuses by close code",
}

#: the run's deadline when none is given: this many seconds plus ``payload_timeout``
DEFAULT_DEADLINE_S = 120.0

Step = Callable[[Probe], Awaitable[None]]
STEPS: tuple[tuple[str, Step], ...] = (
    ("sign-in", probe_signin),
    ("REST identity", probe_identity),
    ("listing", probe_listing),
    ("list items", probe_items),
    ("fetchOrder", probe_fetch_order),
    ("WebSocket", probe_ws),
)


async def adiagnose(
    client: Client,
    *,
    profile: ServiceProfile | None = None,
    payload_timeout: float = 10.0,
    timeout: float | None = None,
    deadline: float | None = None,
    max_response_bytes: int | None = None,
    probe_cancel: bool = False,
) -> Diagnosis:
    """Check the live service behind ``client`` against ``profile`` (default: the
    client's), read-only: sign-in POSTs, GETs of the listing and fetchOrder, and a
    WebSocket that subscribes and unsubscribes. It never creates or cancels an order.

    ``payload_timeout``: seconds to wait for the first payload of each channel (a quiet
    channel leaves its payload settings unknown). Tokens and secrets never appear in the
    result.

    Each step (sign-in, REST identity, listing, list items, fetchOrder, WebSocket) runs
    on its own: one that fails leaves its settings unknown and adds a ``check:`` row
    saying why, and the others still run. Like the client, each HTTP answer must arrive
    whole within ``timeout`` (a gateway dripping bytes is cut there) and decode to at
    most ``max_response_bytes``, and a WebSocket message may be that large at most; the
    WebSocket never follows a redirect. A step that meets one of these limits stops
    with a ``check:`` row saying which (observed ``timed out``, ``too large``, or
    ``failed`` for a redirect). Once ``deadline`` seconds have passed, the step running
    stops (its row: ``stopped``) and those left are not run (``not run``); what was seen
    before is kept.

    Parameters
    ----------
    client : Client
        Where the service is (``base_url``, ``ws_url``) and the API key and secret to
        sign in with; the doctor makes its own connections.
    profile : ServiceProfile, optional
        The profile to check (default: ``client.profile``).
    payload_timeout : float, default 10.0
        Seconds to wait for the first payload of each channel.
    timeout : float, optional
        Seconds for each HTTP request's whole answer, for opening the WebSocket and for
        each of its answers (default: ``client.settings.timeout``).
    deadline : float, optional
        Seconds for the whole run (default: 120 plus ``payload_timeout``).
    max_response_bytes : int, optional
        The largest HTTP answer (decoded) and WebSocket message taken (default:
        ``client.settings.max_response_bytes``).
    probe_cancel : bool, default False
        Also learn where a cancel's ``profileId`` travels, from two cancels of an order
        id that does not exist (checked absent with fetchOrder first): ``profileId`` in
        the body, then in the query (the client's ``profile_id``, else a made-up one);
        and the batch
        cancel's route, id-list field and largest batch, from batch cancels of ids that
        do not exist. Nothing in the account can change; the rows' notes say what was
        sent.

    Returns
    -------
    Diagnosis
        One row per profile setting, then the checks.

    Raises
    ------
    InvalidRequest
        The client has no API key or secret, or a timeout, the deadline or the size cap
        is not a finite positive number (nothing is sent).
    TransportError
        The service gives the sign-in no usable answer: none at all, none complete within
        ``timeout``, or one over ``max_response_bytes``.
    """
    s = client.settings
    wait = _seconds("timeout", s.timeout if timeout is None else timeout)
    payload_wait = _seconds("payload_timeout", payload_timeout, zero=True)
    whole = _seconds(
        "deadline", DEFAULT_DEADLINE_S + payload_wait if deadline is None else deadline
    )
    cap = s.max_response_bytes if max_response_bytes is None else max_response_bytes
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise InvalidRequest(f"max_response_bytes must be an int >= 1, not {cap!r}")
    if not s.api_key or not s.api_secret:
        raise InvalidRequest(
            "the doctor needs credentials: set TOOLKIT_API_KEY and TOOLKIT_API_SECRET "
            "(or api_key=/api_secret=)"
        )
    assumed = profile or client.profile
    # the same largest message as the client's streams take
    policy = ConnectionPolicy.resolve(assumed, max_response_bytes=cap)
    redact = Redactor([s.api_secret])
    findings = Findings(assumed, redact)
    # no per-read timeout: the deadline of each request covers its whole answer
    async with httpx.AsyncClient(base_url=s.base_url, timeout=None, follow_redirects=False) as http:
        pr = Probe(
            base_url=s.base_url,
            ws_url=s.ws_url,
            api_key=s.api_key,
            api_secret=s.api_secret,
            assumed=assumed,
            http=http,
            findings=findings,
            redact=redact,
            timeout=wait,
            payload_timeout=payload_wait,
            max_bytes=cap,
            max_message_bytes=policy.max_message_bytes,
            profile_id=s.profile_id,
            probe_cancel=probe_cancel,
        )
        await _run_steps(pr, whole)
    for label, observed, why in pr.steps:
        findings.check(label, "unknown", observed, why)
    rows = findings.rows(assumed.settings(), UNOBSERVABLE)
    return Diagnosis(
        assumed=assumed,
        rows=rows,
        target=redact_url(s.base_url),
        steps_failed=[label for label, _, _ in pr.steps],
    )


async def _run_steps(pr: Probe, deadline: float) -> None:
    """Every step in turn, each on its own, all within ``deadline`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    why = f"the doctor's deadline (deadline={deadline}s for the whole run) passed"
    writes = (("cancel placement", probe_cancel_placement), ("batch cancel", probe_batch_cancel))
    steps = (*STEPS, *writes) if pr.probe_cancel else STEPS
    for name, step in steps:
        if loop.time() >= end:
            pr.stopped(name, "not run", f"{why} before this step")
            continue
        cut = asyncio.timeout_at(end)
        try:
            async with cut:
                await step(pr)
        except TimeoutError as exc:
            if cut.expired():
                pr.stopped(name, "stopped", f"{why} during this step; what it saw is kept")
            else:
                pr.failed(name, exc)
        except TransportError as exc:
            if step is probe_signin:  # the service does not answer at all: say so
                raise
            pr.failed(name, exc)
        except Exception as exc:  # one step failing never stops the others
            pr.failed(name, exc)


def _seconds(name: str, value: object, *, zero: bool = False) -> float:
    """``value`` as seconds, or InvalidRequest naming ``name`` (nothing sent yet)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not zero)
    ):
        bound = ">= 0" if zero else "> 0"
        raise InvalidRequest(f"{name} must be a finite number of seconds {bound}, not {value!r}")
    return float(value)


def diagnose(
    client: Client,
    *,
    profile: ServiceProfile | None = None,
    payload_timeout: float = 10.0,
    timeout: float | None = None,
    deadline: float | None = None,
    max_response_bytes: int | None = None,
    probe_cancel: bool = False,
) -> Diagnosis:
    """The sync twin of :func:`adiagnose` (works in a script and inside Jupyter).

    Check the live service behind ``client`` against ``profile``, read-only: sign-in
    POSTs, GETs of the listing and fetchOrder, and a WebSocket that subscribes and
    unsubscribes. It never creates or cancels an order, and tokens and secrets never
    appear in the result. Each HTTP answer must arrive whole within ``timeout`` and be
    at most ``max_response_bytes`` long, the WebSocket follows no redirect, and the run
    ends after ``deadline`` seconds; a step that meets one of these limits stops with a
    ``check:`` row saying which, and the others still run.

    Parameters
    ----------
    client : Client
        Where the service is (``base_url``, ``ws_url``) and the API key and secret to
        sign in with; the doctor makes its own connections.
    profile : ServiceProfile, optional
        The profile to check (default: ``client.profile``).
    payload_timeout : float, default 10.0
        Seconds to wait for the first payload of each channel (a quiet channel leaves its
        payload settings unknown).
    timeout : float, optional
        Seconds for each HTTP request's whole answer, for opening the WebSocket and for
        each of its answers (default: ``client.settings.timeout``).
    deadline : float, optional
        Seconds for the whole run (default: 120 plus ``payload_timeout``); the step
        running then stops and those left are not run.
    max_response_bytes : int, optional
        The largest HTTP answer (decoded) and WebSocket message taken (default:
        ``client.settings.max_response_bytes``).
    probe_cancel : bool, default False
        Also learn where a cancel's ``profileId`` travels, from two cancels of an order
        id that does not exist (checked absent with fetchOrder first): ``profileId`` in
        the body, then in the query (the client's ``profile_id``, else a made-up one);
        and the batch
        cancel's route, id-list field and largest batch, from batch cancels of ids that
        do not exist. Nothing in the account can change; the rows' notes say what was
        sent.

    Returns
    -------
    Diagnosis
        One row per profile setting, then the checks; ``print`` it for the table,
        ``.profile()`` for the profile observed.

    Raises
    ------
    InvalidRequest
        The client has no API key or secret, or a timeout, the deadline or the size cap
        is not a finite positive number (nothing is sent).
    TransportError
        The service gives the sign-in no usable answer: none at all, none complete within
        ``timeout``, or one over ``max_response_bytes``.

    Examples
    --------
    >>> diagnosis = tk.diagnose(client)  # doctest: +SKIP
    >>> diagnosis.differs  # the settings to change  # doctest: +SKIP
    >>> diagnosis.profile().dump("profiles/real.toml")  # doctest: +SKIP
    """
    from toolkit.client._sync import run_sync

    return run_sync(
        adiagnose(
            client,
            profile=profile,
            payload_timeout=payload_timeout,
            timeout=timeout,
            deadline=deadline,
            max_response_bytes=max_response_bytes,
            probe_cancel=probe_cancel,
        )
    )
