"""The observed profile stays valid when the page bounds seen leave out the assumed
``listing.page_default`` and the default itself was not seen (too few orders to fill a
page): the default is clamped into the bounds, the comment says so, never an exception."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.doctor import Diagnosis, Row
from toolkit.profile import DEFAULT_PROFILE, dump_profile, load_profile

UNSEEN = "the account has too few orders (3) to fill one"


def _diagnosis(setting: str, observed: int) -> Diagnosis:
    assumed = DEFAULT_PROFILE.get(setting)
    rows = [
        Row(setting, assumed, observed, "differs", observed),
        Row("listing.page_default", 50, None, "unknown", 50, UNSEEN),
    ]
    return Diagnosis(assumed=DEFAULT_PROFILE, rows=rows)


@pytest.mark.parametrize(
    ("setting", "observed", "default", "bounds"),
    [
        ("listing.page_max", 20, 20, "[1, 20]"),
        ("listing.page_min", 60, 60, "[60, 100]"),
    ],
)
def test_an_unseen_page_default_is_clamped_into_the_bounds_seen(
    setting: str, observed: int, default: int, bounds: str, tmp_path: Path
) -> None:
    assert DEFAULT_PROFILE.listing.page_default == 50
    d = _diagnosis(setting, observed)
    profile = d.profile()
    assert profile.get(setting) == observed
    assert profile.listing.page_default == default
    note = d.comments()["listing.page_default"]
    assert note.startswith(f"doctor: not observed; {UNSEEN}")
    assert f"50 lies outside the page bounds {bounds}: clamped to {default}" in note
    written = dump_profile(profile, tmp_path / "observed.toml", comments=d.comments())
    assert load_profile(written).listing.page_default == default
    assert "clamped to" in written.read_text()


def test_a_page_default_inside_the_bounds_is_kept_without_a_note() -> None:
    d = _diagnosis("listing.page_max", 80)
    assert d.profile().listing.page_default == 50
    assert "clamped" not in d.comments()["listing.page_default"]
