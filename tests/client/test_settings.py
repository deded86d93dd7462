"""Tests of toolkit.client._settings: environments, from_env, URL checks and secret-free reprs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from toolkit.client._settings import (
    DEFAULT_LOCAL_URL,
    MOVED_TO_PROFILE,
    Environment,
    Settings,
    derive_ws_url,
    mask_key,
)
from toolkit.errors import InvalidRequest
from toolkit.profile import DEFAULT_PROFILE


def test_local_defaults_to_the_simulator_address() -> None:
    s = Settings.from_env({"TOOLKIT_ENV": "local"})
    assert s.environment is Environment.LOCAL
    assert s.base_url == DEFAULT_LOCAL_URL
    assert s.ws_url == "ws://127.0.0.1:8765"


def test_from_env_reads_every_variable() -> None:
    env = {
        "TOOLKIT_ENV": "sandbox",
        "TOOLKIT_BASE_URL": "https://sandbox.example.com/api/",
        "TOOLKIT_WS_URL": "wss://ws.sandbox.example.com",
        "TOOLKIT_API_KEY": "key-12345678",
        "TOOLKIT_API_SECRET": "s3cr3t-value",
        "TOOLKIT_PROFILE_ID": "P7",
    }
    s = Settings.from_env(env)
    assert s.environment is Environment.SANDBOX
    assert s.base_url == "https://sandbox.example.com/api"
    assert s.ws_url == "wss://ws.sandbox.example.com"
    assert (s.api_key, s.api_secret, s.profile_id) == ("key-12345678", "s3cr3t-value", "P7")


@pytest.mark.parametrize("env", ["sandbox", "production", "PRODUCTION"])
def test_remote_environments_need_urls(env: str) -> None:
    with pytest.raises(InvalidRequest, match="TOOLKIT_BASE_URL"):
        Settings.from_env({"TOOLKIT_ENV": env})
    with pytest.raises(InvalidRequest, match="TOOLKIT_WS_URL"):
        Settings.from_env({"TOOLKIT_ENV": env, "TOOLKIT_BASE_URL": "https://x.example"})


def test_unknown_environment_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="local, sandbox, production"):
        Settings.from_env({"TOOLKIT_ENV": "staging"})


def test_overrides_win_and_unknown_settings_are_refused() -> None:
    s = Settings.from_env({"TOOLKIT_BASE_URL": "http://a:1"}, base_url="http://b:2", page_size=7)
    assert s.base_url == "http://b:2" and s.page_size == 7
    with pytest.raises(InvalidRequest, match="unknown setting"):
        Settings.from_env({"TOOLKIT_ENV": "local"}, page_sise=7)


@pytest.mark.parametrize(
    "url", ["", "127.0.0.1:8765", "ftp://host", "http://", "http://u:pw@host", "http://h/?a=1"]
)
def test_bad_base_urls_are_refused(url: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        Settings(base_url=url)
    assert "pw" not in str(info.value)


def test_ws_url_is_derived_from_http_and_https() -> None:
    assert derive_ws_url("http://h:1/x") == "ws://h:1/x"
    assert derive_ws_url("https://h") == "wss://h"


def test_repr_hides_the_secret_and_most_of_the_key() -> None:
    s = Settings(base_url="http://h", api_key="abcdefgh-KEY9", api_secret="the-secret-value")
    text = repr(s)
    assert "the-secret-value" not in text and "abcdefgh" not in text
    assert "…KEY9" in text and "<hidden>" in text
    assert mask_key("demo") == "…"  # a short key shows nothing
    assert mask_key(None) is None


def test_assumptions_live_in_the_profile_not_in_settings() -> None:
    names = {f.name for f in dataclasses.fields(Settings)}
    for old, dotted in MOVED_TO_PROFILE.items():
        assert old not in names
        DEFAULT_PROFILE.get(dotted)  # the setting exists
    assert {"profile", "page_size", "max_pages", "token_renew_margin_s"} <= names
    doc = Settings.__doc__ or ""
    for name in ("page_size", "max_pages", "token_renew_margin_s", "concurrency"):
        assert f"``{name}``" in doc


def test_from_env_reads_toolkit_profile(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "mine"\n[rest]\nfetch_order_param = "id"\n')
    s = Settings.from_env({"TOOLKIT_ENV": "local", "TOOLKIT_PROFILE": str(path)})
    assert s.profile.name == "mine" and s.profile.rest.fetch_order_param == "id"
    # a profile given wins over the variable
    local = {"TOOLKIT_ENV": "local"}
    assert Settings.from_env(
        {**local, "TOOLKIT_PROFILE": str(path)}, profile=DEFAULT_PROFILE
    ).profile is (DEFAULT_PROFILE)
    assert Settings.from_env(local).profile is DEFAULT_PROFILE


def test_nothing_set_is_an_error_naming_the_variables() -> None:
    # before: a client for 127.0.0.1:8765 without credentials, failing later elsewhere
    with pytest.raises(InvalidRequest, match="TOOLKIT_BASE_URL") as info:
        Settings.from_env({})
    assert "TOOLKIT_ENV=local" in str(info.value) and "TOOLKIT_API_KEY" in str(info.value)


@pytest.mark.parametrize(
    "changes",
    [
        {"concurrency": 0},
        {"timeout": 0},
        {"max_retries": -1},
        {"max_retries": "3"},
        {"max_retries": 2.5},
        {"backoff_base_s": float("nan")},
        {"backoff_max_s": -1},
        {"retry_after_max_s": float("inf")},
        {"rate_limit_budget_s": "300"},
        {"rate_limit_budget_s": -5},
        {"page_size": 101},
        {"page_size": 0},
        {"page_size": True},
        {"profile": "profiles/alt.toml"},
    ],
)
def test_invalid_settings_are_refused(changes: dict[str, object]) -> None:
    with pytest.raises(InvalidRequest):
        Settings(base_url="http://h", **changes)  # type: ignore[arg-type]


def test_the_rate_limit_budget_is_a_setting_the_transport_uses() -> None:
    """The total a request waits on Retry-After can be set where every other transport
    setting is (Client(...), Settings, replace), not only on ``client.rest``."""
    from toolkit.client import Client

    assert Settings(base_url="http://h").rate_limit_budget_s == 300.0
    assert Settings(base_url="http://h", rate_limit_budget_s=0).rate_limit_budget_s == 0
    client = Client(base_url="http://127.0.0.1:9", rate_limit_budget_s=12.5)
    try:
        assert client.settings.rate_limit_budget_s == 12.5
        assert client.rest.rate_limit_budget_s == 12.5
    finally:
        client.close()
