"""Tests of toolkit.client._auth: sign-in, bearer header, renewal before expiry (fake clock) and
once on a 401, bad credentials, and replacing the auth."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Generator

import httpx
import pytest

from toolkit.client._auth import SIGNIN_ATTEMPTS, SIGNIN_MAX_WAIT_S, TokenAuth, expiry_seconds
from toolkit.client._client import Client
from toolkit.errors import (
    AuthenticationError,
    InvalidRequest,
    RateLimited,
    ServiceError,
    ServiceUnavailable,
    ToolkitError,
)
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.sim import Simulator


class FakeClock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def paths_client(sim: Simulator, **kwargs: object) -> tuple[Client, list[tuple[str, int]]]:
    seen: list[tuple[str, int]] = []

    async def on_response(response: httpx.Response) -> None:
        seen.append((response.request.url.path, response.status_code))

    client = Client(
        sim.base_url,
        api_key="demo",
        api_secret="demo-secret",
        profile=sim.profile,
        event_hooks={"response": [on_response]},
        **kwargs,  # type: ignore[arg-type]
    )
    return client, seen


def test_signs_in_once_for_many_concurrent_requests(sim: Simulator) -> None:
    client, seen = paths_client(sim)
    ids = sim.control.order_ids()[:20]

    async def main() -> None:
        orders = await asyncio.gather(*(client.afetch_order(i) for i in ids))
        assert [o["id"] for o in orders] == ids
        await client.aclose()

    asyncio.run(main())
    assert [p for p, _ in seen].count(sim.profile.signin.path) == 1
    assert isinstance(client.auth, TokenAuth) and client.auth.signins == 1


def test_renews_before_expiry_with_a_fake_clock(fresh_sim: Simulator) -> None:
    import time

    clock = FakeClock(time.time())
    client, seen = paths_client(fresh_sim, clock=clock)
    order_id = fresh_sim.control.order_ids()[0]
    with client:
        client.fetch_order(order_id)
        clock.now += 3600 - 5  # within the renewal margin of the 1 h token
        client.fetch_order(order_id)
    signin, fetch = fresh_sim.profile.signin.path, fresh_sim.profile.rest.fetch_order_path
    assert seen == [
        (signin, 200),
        (fetch, 200),
        (signin, 200),
        (fetch, 200),
    ]


def test_margin_is_at_most_a_tenth_of_a_short_lifetime(fresh_sim: Simulator) -> None:
    import time

    fresh_sim.control.set_knobs(token_ttl_s=100.0)
    clock = FakeClock(time.time())
    client, seen = paths_client(fresh_sim, clock=clock)
    order_id = fresh_sim.control.order_ids()[0]
    with client:
        client.fetch_order(order_id)
        clock.now += 85  # 15 s left: more than a tenth, so no renewal yet
        client.fetch_order(order_id)
        clock.now += 6  # 9 s left
        client.fetch_order(order_id)
    assert [p for p, _ in seen].count(fresh_sim.profile.signin.path) == 2


def test_renews_once_on_a_401(fresh_sim: Simulator) -> None:
    client, seen = paths_client(fresh_sim)
    order_id = fresh_sim.control.order_ids()[0]
    with client:
        client.fetch_order(order_id)
        assert fresh_sim.state is not None
        fresh_sim.state.tokens.revoke_all()  # the service forgets every token
        assert client.fetch_order(order_id)["id"] == order_id
    signin, fetch = fresh_sim.profile.signin.path, fresh_sim.profile.rest.fetch_order_path
    assert seen == [
        (signin, 200),
        (fetch, 200),
        (fetch, 401),
        (signin, 200),
        (fetch, 200),
    ]


def test_a_second_401_is_an_authentication_error(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(token_ttl_s=0.0)  # every token is born expired
    client, seen = paths_client(fresh_sim)
    with client, pytest.raises(AuthenticationError) as info:
        client.fetch_order(fresh_sim.control.order_ids()[0])
    assert info.value.status == 401
    signin, fetch = fresh_sim.profile.signin.path, fresh_sim.profile.rest.fetch_order_path
    assert [p for p, _ in seen] == [signin, fetch, signin, fetch]


def test_bad_credentials(sim: Simulator) -> None:
    signin = sim.profile.signin
    client = Client(
        sim.base_url, api_key="demo", api_secret="wrong-secret-value", profile=sim.profile
    )
    with client, pytest.raises(AuthenticationError, match="sign-in refused") as info:
        client.fetch_order("m-000001-abcd")
    assert "wrong-secret-value" not in str(info.value) + repr(info.value)
    assert info.value.status in signin.bad_credentials_statuses
    assert info.value.url and info.value.url.endswith(signin.path)


def test_atoken_is_a_live_token_for_the_websocket(sim: Simulator) -> None:
    with sim.client() as client:
        token = client.token()
        assert token == client.token()  # reused, not signed in again
        assert sim.state is not None and sim.state.tokens.resolve(token) is not None


def test_no_credentials_means_no_token(sim: Simulator) -> None:
    with (
        Client(sim.base_url, profile=sim.profile) as client,
        pytest.raises(InvalidRequest, match="token"),
    ):
        client.token()


class StaticBearer(httpx.Auth):
    """A user's own auth: a token obtained elsewhere, sent the way the profile's service
    expects (``rest.auth_header``, ``rest.auth_scheme``)."""

    def __init__(self, token: str, profile: ServiceProfile) -> None:
        self.token = token
        self.header = profile.rest.auth_header
        self.value = f"{profile.rest.auth_scheme} {token}".strip()

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        request.headers[self.header] = self.value
        yield request

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        request.headers[self.header] = self.value
        yield request


def test_auth_is_replaceable(sim: Simulator) -> None:
    with sim.client() as signer:
        token = signer.token()
    order_id = sim.control.order_ids()[0]
    with Client(sim.base_url, auth=StaticBearer(token, sim.profile), profile=sim.profile) as client:
        assert client.fetch_order(order_id)["id"] == order_id
    with (
        Client(
            sim.base_url, auth=StaticBearer("tok_wrong", sim.profile), profile=sim.profile
        ) as client,
        pytest.raises(AuthenticationError),
    ):
        client.fetch_order(order_id)


def test_repr_never_shows_the_token(sim: Simulator) -> None:
    with sim.client() as client:
        token = client.token()
        assert isinstance(client.auth, TokenAuth)
        assert token not in repr(client.auth) and "demo-secret" not in repr(client.auth)
        assert "token=<set>" in repr(client.auth)


def test_profile_names_the_signin_fields(sim: Simulator) -> None:
    # a service that used other field names would be reached by changing the profile only
    assert sim.profile.signin.key_field != "accessKey"
    profile = sim.profile.replace({"signin.key_field": "accessKey"})
    client = Client(sim.base_url, api_key="demo", api_secret="demo-secret", profile=profile)
    with client, pytest.raises(ServiceError, match="sign-in failed") as info:
        client.token()
    assert info.value.status == sim.knobs.validation_status  # 400, or a gateway's 422
    assert "signin.key_field" in str(info.value)


def test_without_credentials_requests_are_refused_clearly(sim: Simulator) -> None:
    with (
        Client(sim.base_url, profile=sim.profile) as client,
        pytest.raises(AuthenticationError, match="no credentials"),
    ):
        client.fetch_order(sim.control.order_ids()[0])


def test_a_signin_url_httpx_refuses_is_refused_naming_signin_path(sim: Simulator) -> None:
    # a newline (a multi-line TOML string) is a path httpx refuses to put in a URL; before,
    # httpx.InvalidURL escaped the auth flow raw (a CLI traceback)
    profile = sim.profile.replace({"signin.path": "/auth/sign\nin"})
    with pytest.raises(InvalidRequest, match=r"sign-in URL .*signin\.path"):
        TokenAuth("demo", "demo-secret", sim.base_url, profile=profile)
    with pytest.raises(InvalidRequest, match=r"signin\.path"):
        Client(sim.base_url, api_key="demo", api_secret="demo-secret", profile=profile)


# -- the ``auto`` unit of a ttl ------------------------------------------------------------

TTL_MS = DEFAULT_PROFILE.replace(
    {"signin.expiry_kind": "ttl", "signin.expiry_unit": "ms", "signin.expiry_field": "ttlMs"}
)


@pytest.mark.parametrize(
    ("field", "ttl", "lifetime"),
    [
        ("ttlMs", 100_000, 100.0),  # the name says ms: the magnitude is not consulted
        ("session.expires_in_ms", 4000, 4.0),
        ("expiryMillis", 600, 0.6),
        ("ttl_s", 3_600_000, 3_600_000.0),  # the name says s, however long
        ("expiresInSeconds", 100_000, 100_000.0),
        ("ttl", 30 * 86_400, 30 * 86_400.0),  # 30 days in seconds: still plausible
        ("ttl", 3_600_000, 3600.0),  # 41.7 days in seconds is implausible: 1 h in ms
        ("expiresIn", 3600, 3600.0),
    ],
)
def test_auto_ttl_unit_from_the_field_name_then_a_plausible_lifetime(
    field: str, ttl: int, lifetime: float
) -> None:
    assert expiry_seconds(ttl, kind="ttl", unit="auto", now=0.0, field=field) == pytest.approx(
        lifetime
    )


def _signins_after(sim: Simulator, profile: ServiceProfile, advance: float) -> int:
    import time

    clock = FakeClock(time.time())
    client = Client(
        sim.base_url, api_key="demo", api_secret="demo-secret", profile=profile, clock=clock
    )
    order_id = sim.control.order_ids()[0]
    with client:
        client.fetch_order(order_id)
        clock.now += advance
        client.fetch_order(order_id)
    assert isinstance(client.auth, TokenAuth)
    return client.auth.signins


def test_auto_reads_a_ttl_named_in_ms_as_ms() -> None:
    # the service answers ttlMs: 100000 (100 s); auto read it as 100000 s (27.8 h), so the
    # token was never renewed ahead of time
    auto = TTL_MS.replace({"signin.expiry_unit": "auto"})
    with Simulator(profile=TTL_MS, token_ttl_s=100.0) as sim:
        assert _signins_after(sim, auto, 95.0) == 2  # 5 s left: renewed before use


def test_auto_reads_a_ttl_too_long_for_seconds_as_ms() -> None:
    # ttl: 3600000 (1 h in ms) under a name that says no unit; auto read it as 41.7 days
    served = TTL_MS.replace({"signin.expiry_field": "ttl"})
    auto = served.replace({"signin.expiry_unit": "auto"})
    with Simulator(profile=served, token_ttl_s=3600.0) as sim:
        assert _signins_after(sim, auto, 3600.0 - 5) == 2


# -- nested sign-in fields; transient sign-in refusals ------------------------------------


def test_dotted_signin_fields_are_sent_nested() -> None:
    profile = DEFAULT_PROFILE.replace(
        {"signin.key_field": "credentials.clientId", "signin.secret_field": "credentials.secret"}
    )
    auth = TokenAuth("k-1", "s-1", "http://127.0.0.1:9", profile=profile)
    body = auth.signin_request().read()
    assert json.loads(body) == {"credentials": {"clientId": "k-1", "secret": "s-1"}}


def test_a_service_that_nests_the_credentials_signs_in() -> None:
    profile = DEFAULT_PROFILE.replace(
        {
            "name": "nested",
            "signin.key_field": "credentials.clientId",
            "signin.secret_field": "credentials.clientSecret",
        }
    )
    with (
        Simulator(profile=profile, engine=False, history_orders=10) as sim,
        sim.client() as client,
    ):
        assert client.token()
        assert client.fetch_order(sim.control.order_ids()[0])["id"]


class SigninAnswers:
    """Sign-in answering the given (status, Retry-After) in turn, then a token; fetchOrder
    answering an order. Records the sign-in tries."""

    def __init__(self, *answers: tuple[int, str | None]) -> None:
        self.answers = list(answers)
        self.signins = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == DEFAULT_PROFILE.signin.path:
            self.signins += 1
            if self.answers:
                status, retry_after = self.answers.pop(0)
                headers = {"Retry-After": retry_after} if retry_after is not None else {}
                return httpx.Response(status, json={"message": "busy"}, headers=headers)
            return httpx.Response(200, json={"token": "t-1", "expiresAt": None})
        return httpx.Response(200, json={"id": request.url.params["orderId"]})


def fetch_with(service: SigninAnswers) -> tuple[list[float], object]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:  # a fake: records the wait, never waits
        waits.append(seconds)

    auth = TokenAuth("k", "s", "http://127.0.0.1:9", sleep=sleep)

    async def main() -> object:
        async with httpx.AsyncClient(
            base_url="http://127.0.0.1:9", auth=auth, transport=httpx.MockTransport(service)
        ) as http:
            try:
                return (await http.get("/orders/fetchOrder", params={"orderId": "o1"})).json()
            except ToolkitError as exc:
                return exc

    return waits, asyncio.run(main())


def test_a_busy_signin_is_tried_again_with_backoff_even_when_retry_after_says_0() -> None:
    service = SigninAnswers((503, None), (429, "0"), (502, "-5"))
    waits, result = fetch_with(service)
    assert result == {"id": "o1"}
    assert service.signins == 4
    # never zero, growing: a Retry-After of 0 or below is no reason to hammer the service
    assert len(waits) == 3 and all(w > 0 for w in waits) and waits[0] < waits[2]


def test_a_retry_after_is_honoured_up_to_a_bound() -> None:
    waits, result = fetch_with(SigninAnswers((429, "2"), (429, "3600")))
    assert result == {"id": "o1"} and waits[0] >= 2 and waits[1] == SIGNIN_MAX_WAIT_S


@pytest.mark.parametrize(
    ("status", "error", "tries"),
    [
        (429, RateLimited, SIGNIN_ATTEMPTS),
        (503, ServiceUnavailable, SIGNIN_ATTEMPTS),
        (500, ServiceUnavailable, 1),
    ],
)
def test_a_signin_still_refused_after_its_tries_is_the_matching_error(
    status: int, error: type[Exception], tries: int
) -> None:
    service = SigninAnswers(*[(status, None)] * 10)
    _, result = fetch_with(service)
    assert isinstance(result, error) and service.signins == tries
