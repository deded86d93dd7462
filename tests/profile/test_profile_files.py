"""Profiles typed by hand: every refusal names the file, the line and the setting, and a
file saved with a byte-order mark (Notepad's "UTF-8") reads like one without."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import InvalidRequest
from toolkit.profile import load_profile, profile_from_env


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # a value the checks refuse (not only a type or a name): the fault report's case
        ("name = 'mine'\n\n[listing]\npage_default = 500\n", "line 4 (listing.page_default)"),
        ("[listing]\npage_max = 20\n", "line 2 (listing.page_max)"),
        ("[signin]\nexpiry_kind = 'relative'\n", "line 2 (signin.expiry_kind)"),
        ("[rest]\n# the route\ncancel_path = '/c'\n", "line 3 (rest.cancel_path)"),
        ("[stream]\nkeepalive_interval_s = 900.0\n", "line 2 (stream.keepalive_interval_s)"),
        ("[stream]\nsubscribed_text = '''\nok\n'''\n", "line 2 (stream.subscribed_text)"),
        ("[listing]\nactive_statuses = ['open']\n", "line 2 (listing.active_statuses)"),
        ("[rest]\nfetch_order_param = ''\n", "line 2 (rest.fetch_order_param)"),
        # wrong types, unknown names, dotted keys and inline tables
        ("listing.page_default = 'a'\n", "line 1 (listing.page_default)"),
        ("[rest]\n\nfetch_order_parm = 'id'\n", "line 3 (rest.fetch_order_parm)"),
        ("[bogus]\nx = 1\n", "line 1 (bogus)"),
        ("name = 'x'\nlisting = { page_max = 20 }\n", "line 2 (listing)"),
        ("name = 3\n", "line 1 (name)"),
    ],
)
def test_every_refusal_names_the_file_the_line_and_the_setting(
    tmp_path: Path, text: str, where: str
) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidRequest) as exc:
        load_profile(path)
    assert str(exc.value).startswith(f"{path}, {where}: "), str(exc.value)


def test_a_byte_order_mark_is_not_part_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "notepad.toml"
    path.write_bytes("\ufeff[listing]\npage_default = 20\n".encode())
    assert load_profile(path).listing.page_default == 20
    # and the lines counted after it are the editor's
    path.write_bytes("\ufeff[listing]\npage_default = 500\n".encode())
    with pytest.raises(InvalidRequest, match=r"line 2 \(listing\.page_default\)"):
        load_profile(path)


def test_a_file_that_is_not_utf8_or_is_a_folder_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes("name = 'caf\xe9'\n".encode("latin-1"))
    with pytest.raises(InvalidRequest, match=r"latin1\.toml: not UTF-8 text \(byte 11\)"):
        load_profile(path)
    with pytest.raises(InvalidRequest, match="is a folder"):
        load_profile(tmp_path)


@pytest.mark.parametrize("pasted", ["{}\n", " {}", "{}\r\n", "\t{} \n"])
def test_toolkit_profile_is_read_without_the_whitespace_around_it(
    tmp_path: Path, pasted: str
) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[listing]\npage_default = 20\n", encoding="utf-8")
    profile = profile_from_env({"TOOLKIT_PROFILE": pasted.format(path)})
    assert profile.listing.page_default == 20


def test_the_line_finder_prefers_the_setting_to_its_table() -> None:
    from toolkit.profile._toml import setting_line

    text = "listing = { page_max = 20 }\n[listing2]\n"
    assert setting_line(text, ["listing.page_min", "listing.page_max"]) == (1, "listing")
    text = "[listing]\npage_min = 1\npage_max = 20\n"
    assert setting_line(text, ["listing.page_default", "listing.page_max"]) == (
        3,
        "listing.page_max",
    )
    assert setting_line("[rest]\n", ["listing.page_max"]) is None


def test_a_profile_named_by_the_variable_says_so(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"^TOOLKIT_PROFILE: profile file not found: "):
        profile_from_env({"TOOLKIT_PROFILE": f"{tmp_path / 'missing.toml'}\n"})
