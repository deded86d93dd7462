"""ServiceProfile: the default is PRODUCT.md's table, files round-trip, bad files and
settings fail loudly naming the setting, and the alternative profile differs everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import InvalidRequest
from toolkit.profile import (
    DEFAULT_PROFILE,
    ServiceProfile,
    dump_profile,
    dumps_profile,
    get_path,
    load_profile,
    profile_from_env,
)

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def test_default_file_is_the_default_profile() -> None:
    assert load_profile(PROFILES / "default.toml") == DEFAULT_PROFILE


def test_default_file_documents_every_setting() -> None:
    text = (PROFILES / "default.toml").read_text()
    lines = text.splitlines()
    for dotted, _value in DEFAULT_PROFILE.settings():
        name = dotted.split(".", 1)[1]
        idx = next(i for i, line in enumerate(lines) if line.startswith(f"{name} = "))
        assert lines[idx - 1].startswith("# "), f"{dotted} has no comment in default.toml"


def test_alt_profile_changes_the_unshown_points() -> None:
    alt = load_profile(PROFILES / "alt.toml")
    changed = {k for k, _a, _b in DEFAULT_PROFILE.diff(alt)}
    # what the spec states stays the same (routes it names, the confirmation with a symbol)
    stated = {
        "rest.fetch_order_path",
        "rest.limit_orders_path",
        "rest.cancel_path",
        "stream.subscribed_text",
        "stream.refusal_http_statuses",
        "stream.keepalive_reply_field",
    }
    unchanged = {k for k, _v in DEFAULT_PROFILE.settings()} - changed
    assert unchanged <= stated | {"stream.keepalive_reply_field"}, sorted(unchanged - stated)
    assert len(changed) >= 50


def test_dump_and_load_round_trip(tmp_path: Path) -> None:
    alt = load_profile(PROFILES / "alt.toml")
    path = dump_profile(alt, tmp_path / "p.toml")
    assert load_profile(path) == alt
    assert not [p for p in tmp_path.iterdir() if p.name != "p.toml"], "no temporary left"


def test_dump_writes_through_a_temporary_and_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    calls: list[str] = []
    real_replace, real_fsync = os.replace, os.fsync

    def spy_replace(src: str, dst: str) -> None:
        calls.append(f"replace {Path(src).name} -> {Path(dst).name}")
        real_replace(src, dst)

    def spy_fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    monkeypatch.setattr(os, "replace", spy_replace)
    monkeypatch.setattr(os, "fsync", spy_fsync)
    dump_profile(DEFAULT_PROFILE, tmp_path / "out.toml")
    assert calls[0] == "fsync"
    assert calls[1].startswith("replace .out.toml.") and calls[1].endswith(".tmp -> out.toml")


def test_replace_by_dotted_name_and_diff() -> None:
    p = DEFAULT_PROFILE.replace({"rest.fetch_order_param": "id", "listing.page_max": 60})
    assert p.rest.fetch_order_param == "id"
    assert DEFAULT_PROFILE.diff(p) == [
        ("rest.fetch_order_param", "orderId", "id"),
        ("listing.page_max", 100, 60),
    ]


@pytest.mark.parametrize(
    ("changes", "names"),
    [
        ({"rest.nope": 1}, "nope"),
        ({"nosection.x": 1}, "nosection.x"),
        ({"listing.page_max": "100"}, "listing.page_max must be an integer"),
        ({"listing.page_default": 500}, "page_default"),
        ({"signin.expiry_kind": "relative"}, "signin.expiry_kind"),
        ({"rest.cancel_path": "/cancel"}, "rest.cancel_path"),
        ({"stream.keepalive_interval_s": 900.0}, "stream.keepalive_interval_s"),
        ({"listing.active_statuses": ["open"]}, "statuses"),
        ({"signin.bad_credentials_statuses": [True]}, "signin.bad_credentials_statuses"),
        ({"stream.subscribed_text_no_symbol": "ok"}, "stream.subscribed_text_no_symbol"),
        # a route is joined to base_url as is: "auth/signin" would give host:8765auth
        ({"signin.path": "auth/signin"}, "signin.path must start with '/'"),
        ({"rest.fetch_order_path": "orders/fetchOrder"}, "rest.fetch_order_path must start"),
        ({"rest.limit_orders_path": ""}, "rest.limit_orders_path must start"),
        ({"rest.batch_cancel_path": "/cancel?all=1"}, "rest.batch_cancel_path must be a path"),
        ({"rest.fetch_order_path": "/orders#x"}, "rest.fetch_order_path must be a path"),
        ({"rest.cancel_path": "orders/{order_id}/cancel"}, "rest.cancel_path must start"),
        # str.format would raise KeyError/IndexError/ValueError at the first cancel
        ({"rest.cancel_path": "/o/{order_id}/cancel/{orderId}"}, "rest.cancel_path"),
        ({"rest.cancel_path": "/o/{order_id}/{}"}, "rest.cancel_path"),
        ({"rest.cancel_path": "/o/{order_id}}"}, "rest.cancel_path"),
        ({"rest.cancel_path": "/o/{order_id!r}"}, "rest.cancel_path"),
        ({"rest.cancel_path": "/o/{order_id.x}"}, "rest.cancel_path"),
    ],
)
def test_bad_settings_name_the_setting(changes: dict[str, object], names: str) -> None:
    with pytest.raises(InvalidRequest, match=names.replace(".", r"\.")):
        DEFAULT_PROFILE.replace(changes)


def test_bad_files_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[rest\n")
    with pytest.raises(InvalidRequest, match="not valid TOML"):
        load_profile(bad)
    bad.write_text("[rest]\nfetch_order_parm = 'id'\n")
    with pytest.raises(
        InvalidRequest, match=r"bad\.toml, line 2 \(rest\.fetch_order_parm\): unknown setting"
    ):
        load_profile(bad)
    with pytest.raises(InvalidRequest, match="not found"):
        load_profile(tmp_path / "missing.toml")


def test_profile_from_env(tmp_path: Path) -> None:
    assert profile_from_env({}) is DEFAULT_PROFILE
    path = tmp_path / "p.toml"
    path.write_text('name = "mine"\n[rest]\nauth_scheme = "Token"\n')
    p = profile_from_env({"TOOLKIT_PROFILE": str(path)})
    assert (p.name, p.rest.auth_scheme, p.rest.auth_header) == ("mine", "Token", "Authorization")


def test_dumps_is_valid_toml_for_awkward_strings() -> None:
    import tomllib

    p = DEFAULT_PROFILE.replace({"stream.keepalive_reply_value": 'a "quoted"\\ \u00e9 value'})
    assert ServiceProfile.from_dict(tomllib.loads(dumps_profile(p))) == p


def test_route_paths_that_format_cleanly_are_accepted() -> None:
    p = DEFAULT_PROFILE.replace(
        {"rest.cancel_path": "/o/{{literal}}/{order_id}/cancel", "signin.path": "/v2/session"}
    )
    assert p.rest.cancel_path.format(order_id="a") == "/o/{literal}/a/cancel"


AWKWARD = "pong\x7f \x1b[31m \x00\x01\x1f \x85\x9f \u2028 \t end"


def test_dumps_escapes_control_characters_and_del() -> None:
    import tomllib

    p = DEFAULT_PROFILE.replace({"stream.keepalive_reply_value": AWKWARD, "name": "n\x7f"})
    text = dumps_profile(p)
    assert "\x7f" not in text and "\x1b" not in text and "\x85" not in text
    assert ServiceProfile.from_dict(tomllib.loads(text)) == p


def test_comments_with_control_characters_load_back(tmp_path: Path) -> None:
    notes = {"listing.id_field": "doctor: observed; fields: \x1b[31mid\x7f\x00\nnext\x85line\x9b"}
    path = dump_profile(DEFAULT_PROFILE, tmp_path / "p.toml", comments=notes)
    assert load_profile(path) == DEFAULT_PROFILE
    assert "# doctor: observed; fields: \\u001B[31mid\\u007F\\u0000" in path.read_text()


def test_a_value_toml_cannot_hold_is_refused_naming_the_setting(tmp_path: Path) -> None:
    p = DEFAULT_PROFILE.replace({"stream.keepalive_reply_value": "pong\ud800"})
    with pytest.raises(InvalidRequest, match=r"stream\.keepalive_reply_value: a lone surrogate"):
        dump_profile(p, tmp_path / "p.toml")
    assert list(tmp_path.iterdir()) == []


def test_dump_refuses_text_that_would_not_load_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.profile import _toml

    target = tmp_path / "p.toml"
    target.write_text("kept = 1\n")
    good = _toml.dumps_profile
    monkeypatch.setattr(_toml, "dumps_profile", lambda p, **kw: good(p, **kw) + "bad\x7f\n")
    with pytest.raises(InvalidRequest, match="would not be valid TOML"):
        dump_profile(DEFAULT_PROFILE, target)
    monkeypatch.setattr(
        _toml, "dumps_profile", lambda p, **kw: good(p, **kw).replace('"orderId"', '"id"')
    )
    with pytest.raises(
        InvalidRequest, match=r"would not read back the same: rest\.fetch_order_param"
    ):
        dump_profile(DEFAULT_PROFILE, target)
    assert target.read_text() == "kept = 1\n"  # the file before stays whole
    assert [p.name for p in tmp_path.iterdir()] == ["p.toml"]


def test_get_path() -> None:
    payload = {"a": {"b": 1}, "c": 2}
    assert get_path(payload, "a.b") == 1
    assert get_path(payload, "c") == 2
    assert get_path(payload, "a.x") is None
    assert get_path(payload, "") is payload
