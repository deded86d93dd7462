"""A store belongs to one account of one service, read with one profile: the first sync
saves the service's address, a fingerprint of the API key and the profile (never a secret),
a client of another service or account is refused before any request (another profile of
the same account is taken, with a warning; a store holding nothing yet is bound anew), and
the profile is saved beside the data whoever chose it. Recordings are folders a recorder
wrote, nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from _recordings import write_order_recording

from toolkit.errors import InvalidRequest
from toolkit.sim import Simulator
from toolkit.store import OrderStore
from toolkit.store._files import StoreFiles


class Sent:
    """Every request a client sent."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    async def __call__(self, request: httpx.Request) -> None:
        self.urls.append(str(request.url))


def market_ids(sim: Simulator, n: int = 3) -> list[str]:
    return sorted(sim.control.order_ids(type="market"))[:n]


def synced(sim: Simulator, root: Path) -> OrderStore:
    store = OrderStore(root)
    with sim.client() as client:
        store.sync(client, ids=market_ids(sim), listing=False)
    return store


def test_the_first_sync_saves_who_the_store_belongs_to_without_secrets(
    fresh_sim: Simulator, tmp_path: Path
) -> None:
    synced(fresh_sim, tmp_path)
    identity = StoreFiles(tmp_path).read_state()["identity"]
    assert identity["base_url"] == fresh_sim.base_url
    assert identity["profile"] == fresh_sim.profile.name
    assert identity["api_key"].startswith("sha256:") and "demo" not in identity["api_key"]
    text = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    assert "demo-secret" not in text


@pytest.mark.parametrize("other", ["service", "account"])
def test_a_client_of_another_service_or_account_is_refused_before_any_request(
    fresh_sim: Simulator, sim: Simulator, tmp_path: Path, other: str
) -> None:
    store = synced(fresh_sim, tmp_path)
    before = sorted(store.frames().orders["id"])
    sent = Sent()
    hooks: dict[str, Any] = {"event_hooks": {"request": [sent]}}
    if other == "service":
        client = sim.client(**hooks)
    else:
        client = fresh_sim.client("other", "other-secret", profile_id="P9", **hooks)
    with client, pytest.raises(InvalidRequest) as info:
        store.sync(client)
    message = str(info.value)
    assert sent.urls == []
    assert f"order store {tmp_path} holds the orders of {fresh_sim.base_url}" in message
    assert "use another store folder" in message and "\n" not in message
    if other == "service":
        assert sim.base_url in message
    assert "other-secret" not in message and "demo-secret" not in message
    assert sorted(store.frames().orders["id"]) == before
    with fresh_sim.client() as same:
        store.sync(same)  # the store's own service still syncs


def test_another_profile_of_the_same_account_is_taken_with_a_warning(
    fresh_sim: Simulator, tmp_path: Path
) -> None:
    store = synced(fresh_sim, tmp_path)
    renamed = fresh_sim.profile.replace({"name": "renamed"})
    with fresh_sim.client(profile=renamed) as client:
        result = store.sync(client)
    assert any("synced with profile" in w and "'renamed'" in w for w in result.warnings)
    assert StoreFiles(tmp_path).read_state()["identity"]["profile"] == "renamed"
    assert OrderStore(tmp_path).profile.name == "renamed"


def test_a_store_a_failed_first_sync_left_empty_is_bound_anew(
    fresh_sim: Simulator, tmp_path: Path
) -> None:
    from toolkit.errors import AuthenticationError

    with fresh_sim.client("demo", "wrong-secret") as wrong, pytest.raises(AuthenticationError):
        OrderStore(tmp_path).sync(wrong)
    assert "identity" in StoreFiles(tmp_path).read_state()  # bound before the first request
    # nothing was written: another account (the right one, say) may take the folder
    with fresh_sim.client("other", "other-secret", profile_id="P9") as other:
        result = OrderStore(tmp_path).sync(other)
    assert not any("profile" in w for w in result.warnings)
    assert result.fetched > 0


def test_a_store_without_an_identity_is_bound_to_the_next_sync_with_a_warning(
    fresh_sim: Simulator, sim: Simulator, tmp_path: Path
) -> None:
    synced(fresh_sim, tmp_path)
    files = StoreFiles(tmp_path)
    state = files.read_state()
    del state["identity"]  # as an older toolkit wrote it
    files.write_state(state)
    with sim.client() as client:
        result = OrderStore(tmp_path).sync(client, ids=market_ids(sim), listing=False)
    assert any("no record of the service" in w and sim.base_url in w for w in result.warnings)
    assert files.read_state()["identity"]["base_url"] == sim.base_url
    with fresh_sim.client() as client, pytest.raises(InvalidRequest, match="holds the orders"):
        OrderStore(tmp_path).sync(client)


def test_an_explicit_profile_is_saved_before_the_bodies_and_read_back(
    fresh_sim: Simulator, tmp_path: Path, spy_durability: Any
) -> None:
    from toolkit import _atomic

    events = spy_durability(_atomic)
    with fresh_sim.client() as client:
        OrderStore(tmp_path, profile=fresh_sim.profile).sync(client, ids=market_ids(fresh_sim))
    assert (tmp_path / "_profile.toml").is_file()
    assert OrderStore(tmp_path).profile == fresh_sim.profile
    replaced = [name for kind, name in events if kind == "replace"]
    first_part = min(i for i, name in enumerate(replaced) if name.startswith("part-"))
    assert replaced.index("_profile.toml") < first_part


def test_a_store_whose_profile_file_is_gone_says_so(fresh_sim: Simulator, tmp_path: Path) -> None:
    synced(fresh_sim, tmp_path)
    assert not any("_profile.toml" in w for w in OrderStore(tmp_path).coverage()["warnings"])
    (tmp_path / "_profile.toml").unlink()
    warnings = OrderStore(tmp_path).coverage()["warnings"]
    assert any("no _profile.toml" in w and "default profile" in w for w in warnings)
    # a profile given explicitly is no guess
    explicit = OrderStore(tmp_path, profile=fresh_sim.profile).coverage()["warnings"]
    assert not any("_profile.toml" in w for w in explicit)


def test_a_folder_that_is_not_a_recording_is_refused_before_any_request(
    fresh_sim: Simulator, tmp_path: Path
) -> None:
    rec = tmp_path / "rec"
    write_order_recording(rec, market_ids(fresh_sim, 2), fresh_sim.profile)
    empty = tmp_path / "empty"
    empty.mkdir()
    store = OrderStore(tmp_path / "store")
    sent = Sent()
    with fresh_sim.client(event_hooks={"request": [sent]}) as client:
        for wrong in (empty, tmp_path):  # an empty folder, the recording's parent
            with pytest.raises(InvalidRequest, match="is not a recording"):
                store.sync(client, recordings=[wrong])
        with pytest.raises(InvalidRequest, match="not one path"):
            store.sync(client, recordings=rec)  # type: ignore[arg-type]
        assert sent.urls == [] and not (tmp_path / "store").exists()
        result = store.sync(client, recordings=[rec], listing=False)
    assert result.new_by_source == {"recording": 2}
