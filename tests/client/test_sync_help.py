"""help() on the sync twins: each has its async method's signature and a numpydoc
docstring (Parameters/Returns/Raises/Examples) written for a sync call; errors from sync
calls end at the caller's call (no _sync or concurrent.futures frames) and say their
message once."""

from __future__ import annotations

import asyncio
import inspect
import pydoc
import traceback
from typing import Any

import pytest

from toolkit.client import Client
from toolkit.client._docs import DOCS
from toolkit.client._sync import sync_doc
from toolkit.errors import InvalidRequest, OrderNotFound, say_once
from toolkit.sim import Simulator

# every sync twin of the facade and its async method
TWINS = {
    name: "a" + name
    for name in dir(Client)
    if not name.startswith("_")
    and inspect.isfunction(getattr(Client, name))
    and inspect.isfunction(getattr(Client, "a" + name, None))
}
# what a newcomer reads in help(): one section per question
SECTIONS = ("Parameters\n----------", "Returns\n-------", "Raises\n------")


def test_the_twins_are_the_ones_people_use() -> None:
    assert {
        "load_orders",
        "fetch_order",
        "fetch_order_raw",
        "list_limit_orders",
        "iter_limit_orders",
        "create_limit_order",
        "cancel_limit_order",
        "cancel_limit_orders",
        "token",
        "signin",
        "close",
    } == set(TWINS)
    assert set(DOCS) == set(TWINS.values())


@pytest.mark.parametrize("name", sorted(TWINS))
def test_twin_has_the_async_signature(name: str) -> None:
    sync, coro = getattr(Client, name), getattr(Client, TWINS[name])
    s, a = inspect.signature(sync), inspect.signature(coro)
    assert list(s.parameters.values()) == list(a.parameters.values())
    if name == "iter_limit_orders":
        assert "Iterator" in str(s.return_annotation) and "Async" not in str(s.return_annotation)
    else:
        assert s.return_annotation == a.return_annotation


@pytest.mark.parametrize("name", sorted(TWINS))
def test_twin_docstring_is_numpydoc_and_sync(name: str) -> None:
    doc = inspect.getdoc(getattr(Client, name)) or ""
    async_doc = inspect.getdoc(getattr(Client, TWINS[name])) or ""
    assert "Sync twin of" not in doc and "_loaders" not in doc and "toolkit.client._" not in doc
    assert f"Blocking twin of ``{TWINS[name]}``" in doc
    assert "Examples\n--------\n>>> " in doc
    # the examples are sync calls, the async method's stay async
    examples = doc.split("Examples\n--------\n", 1)[1]
    assert "await " not in examples and "async for" not in examples
    assert "await client.a" in async_doc.split("Examples", 1)[1] or "async for" in async_doc
    has_parameters = len(inspect.signature(getattr(Client, name)).parameters) > 1
    for section in SECTIONS:
        needed = section.startswith("Parameters") and has_parameters
        needed |= section.startswith("Raises") and name not in ("close",)
        if needed:
            assert section in doc, (name, section)


def test_help_of_load_orders_documents_every_parameter() -> None:
    text = pydoc.render_doc(Client.load_orders, renderer=pydoc.plaintext)
    for param in inspect.signature(Client.aload_orders).parameters:
        if param != "self":
            assert f"{param}" in text
    assert "load_orders(self, status: 'str | Iterable[str] | None' = None" in text
    assert "Returns\n    -------\n    OrderFrames" in text


def test_sync_doc_rewrites_examples_and_keeps_the_twins_own_words() -> None:
    doc = sync_doc(
        "afoo",
        "Foo it.\n\nExamples\n--------\n>>> x = await client.afoo(1)\n"
        ">>> async for y in client.aiter_foo(): ...",
        "Sync twin of :meth:`afoo`. Inside a loop it waits for the loop thread.",
    )
    assert doc.startswith("Foo it.\n\nBlocking twin of ``afoo``")
    assert "Inside a loop it waits for the loop thread." in doc
    assert ">>> x = client.foo(1)" in doc and ">>> for y in client.iter_foo(): ..." in doc


def test_say_once() -> None:
    assert say_once("fetchOrder: order not found: order not found") == "fetchOrder: order not found"
    assert (
        say_once("cancel limit order: order not found: order not found in this profile")
        == "cancel limit order: order not found in this profile"
    )
    assert say_once("fetchOrder: conflict: order is executing") == (
        "fetchOrder: conflict: order is executing"
    )


def _frames(exc: BaseException) -> list[str]:
    return [f"{f.filename}:{f.name}" for f in traceback.extract_tb(exc.__traceback__)]


def test_sync_errors_end_at_the_call_and_say_it_once(sim: Simulator) -> None:
    with sim.client() as client:
        with pytest.raises(OrderNotFound) as caught:
            client.fetch_order("no-such-order-1")
        exc = caught.value
        message = str(exc)
        assert message.count("order not found") == 1, message
        assert message.startswith("fetchOrder: order not found")
        frames = _frames(exc)
        assert not any("concurrent" in f or "asyncio" in f for f in frames), frames
        # the test's own call, then at most the twin that re-raised it
        assert frames[0].endswith(":test_sync_errors_end_at_the_call_and_say_it_once")
        assert len(frames) <= 2, frames
        assert "Traceback" not in "".join(traceback.format_exception_only(exc))

        with pytest.raises(OrderNotFound) as cancel:
            client.cancel_limit_order("no-such-order-1")
        assert str(cancel.value).count("order not found") == 1, str(cancel.value)

        with pytest.raises(InvalidRequest) as bad:
            client.load_orders(status="open-ish", progress=False)
        assert len(_frames(bad.value)) <= 2, _frames(bad.value)


def test_sync_errors_inside_a_running_loop_are_short_too(sim: Simulator) -> None:
    async def cell() -> list[str]:
        client = sim.client()
        try:
            client.fetch_order("no-such-order-2")
        except OrderNotFound as exc:
            return _frames(exc)
        finally:
            await client.aclose()
        raise AssertionError("no error")

    frames = asyncio.run(cell())
    assert not any("concurrent" in f or "_sync.py:run" in f for f in frames), frames
    assert len(frames) <= 2, frames


def test_errors_while_iterating_hide_the_loop_frames(sim: Simulator) -> None:
    with sim.client() as client:
        iterator: Any = client.iter_limit_orders(limit=10, max_pages=1)
        with pytest.raises(Exception) as caught:
            list(iterator)
        frames = _frames(caught.value)
        assert not any("concurrent" in f for f in frames), frames
