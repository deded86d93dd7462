"""``adiagnose`` / ``diagnose``: run every probe of the doctor against a live service with a
client's settings and credentials, each step on its own (one failing does not stop the
others), and gather what they saw into a :class:`~toolkit.doctor._report.Diagnosis`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import httpx

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

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._client import Client

_WRITES = "only a cancel would show it, and the doctor never writes"
#: the settings a read-only check cannot see, and why
UNOBSERVABLE: dict[str, str] = {
    "rest.cancel_path": _WRITES,
    "rest.cancel_profile_in": _WRITES,
    "rest.cancel_status": _WRITES,
    "rest.batch_cancel_path": "only a batch cancel would show it; the doctor never writes",
    "rest.batch_ids_field": "only a batch cancel would show it; the doctor never writes",
    "rest.batch_cancel_max": "only batch cancels would show it; the doctor never writes",
    "stream.limit_events": "only limit orders changing state would show it (no writes)",
    "stream.max_duration_s": "would need a connection held open for hours",
    "stream.idle_limit_s": "would need an idle connection held for minutes",
    "stream.keepalive_interval_s": "a client choice: keep it below the idle limit",
    "stream.refusal_http_statuses": "only seen when the service refuses by HTTP status",
    "stream.refusal_close_codes": "only seen when the service refuses by close code",
}

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
) -> Diagnosis:
    """Check the live service behind ``client`` against ``profile`` (default: the
    client's), read-only: sign-in POSTs, GETs of the listing and fetchOrder, and a
    WebSocket that subscribes and unsubscribes. It never creates or cancels an order.

    ``payload_timeout``: seconds to wait for the first payload of each channel (a quiet
    channel leaves its payload settings unknown). Tokens and secrets never appear in the
    result.

    Each step (sign-in, REST identity, listing, list items, fetchOrder, WebSocket) runs
    on its own: one that fails leaves its settings unknown and adds a ``check:`` row
    saying why, and the others still run.

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
        Seconds for each HTTP request, for opening the WebSocket and for each of its
        answers (default: ``client.settings.timeout``).

    Returns
    -------
    Diagnosis
        One row per profile setting, then the checks.

    Raises
    ------
    InvalidRequest
        The client has no API key or secret (nothing is sent).
    TransportError
        The service does not answer the sign-in at all.
    """
    s = client.settings
    if not s.api_key or not s.api_secret:
        raise InvalidRequest(
            "the doctor needs credentials: set TOOLKIT_API_KEY and TOOLKIT_API_SECRET "
            "(or api_key=/api_secret=)"
        )
    assumed = profile or client.profile
    redact = Redactor([s.api_secret])
    findings = Findings(assumed, redact)
    wait = s.timeout if timeout is None else timeout
    async with httpx.AsyncClient(base_url=s.base_url, timeout=wait, follow_redirects=False) as http:
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
            payload_timeout=payload_timeout,
        )
        for name, step in STEPS:
            try:
                await step(pr)
            except TransportError as exc:
                if step is probe_signin:  # the service does not answer at all: say so
                    raise
                pr.failed(name, exc)
            except Exception as exc:  # one step failing never stops the others
                pr.failed(name, exc)
    for line in pr.steps:
        label, _, why = line.partition(": ")
        findings.check(label, "unknown", "failed", why)
    rows = findings.rows(assumed.settings(), UNOBSERVABLE)
    return Diagnosis(assumed=assumed, rows=rows, target=redact_url(s.base_url))


def diagnose(
    client: Client,
    *,
    profile: ServiceProfile | None = None,
    payload_timeout: float = 10.0,
    timeout: float | None = None,
) -> Diagnosis:
    """The sync twin of :func:`adiagnose` (works in a script and inside Jupyter).

    Check the live service behind ``client`` against ``profile``, read-only: sign-in
    POSTs, GETs of the listing and fetchOrder, and a WebSocket that subscribes and
    unsubscribes. It never creates or cancels an order, and tokens and secrets never
    appear in the result.

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
        Seconds for each HTTP request, for opening the WebSocket and for each of its
        answers (default: ``client.settings.timeout``).

    Returns
    -------
    Diagnosis
        One row per profile setting, then the checks; ``print`` it for the table,
        ``.profile()`` for the profile observed.

    Raises
    ------
    InvalidRequest
        The client has no API key or secret (nothing is sent).
    TransportError
        The service does not answer the sign-in at all.

    Examples
    --------
    >>> diagnosis = tk.diagnose(client)  # doctest: +SKIP
    >>> diagnosis.differs  # the settings to change  # doctest: +SKIP
    >>> diagnosis.profile().dump("profiles/real.toml")  # doctest: +SKIP
    """
    from toolkit.client._sync import run_sync

    return run_sync(
        adiagnose(client, profile=profile, payload_timeout=payload_timeout, timeout=timeout)
    )
