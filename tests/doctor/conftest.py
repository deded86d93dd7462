"""Fixtures of the doctor tests: simulators under the default and the alt profile, and an
activity driver (the test's own orders and prices, through the simulator's control API) so
every channel has a first payload while the doctor listens."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from toolkit.profile import ServiceProfile, load_profile
from toolkit.sim import Simulator

ROOT = Path(__file__).resolve().parents[2]
ALT = load_profile(ROOT / "profiles" / "alt.toml")
SIM_TAKES_PROFILE = "profile" in inspect.signature(Simulator).parameters
needs_profiled_sim = pytest.mark.skipif(
    not SIM_TAKES_PROFILE, reason="toolkit.sim.Simulator does not take profile= yet"
)


@contextmanager
def activity(sim: Simulator, every: float = 0.1) -> Iterator[None]:
    """Move prices and place market orders (the test's writes, not the doctor's) until the
    block ends, so watchTicker(s), watchBalance and watchOrders publish something."""
    stop = threading.Event()
    state = sim.state
    symbols = list(getattr(state, "symbols", None) or ["BTC/BRL"])
    bases = {s: _price(state, s) for s in symbols}

    def drive() -> None:
        step = 0
        while not stop.is_set():
            with suppress(Exception):
                for symbol in symbols:
                    sim.control.move_price(symbol, bases[symbol] * (1 + 0.0001 * (step % 5)))
                if step % 3 == 0:
                    sim.control.market_order(symbol="BTC/BRL", side="buy", quoteAmount="50")
            step += 1
            stop.wait(every)

    thread = threading.Thread(target=drive, name="doctor-test-activity", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


def _price(state: object, symbol: str) -> float:
    """The simulator's current price of ``symbol`` (a nearby value when not readable)."""
    with suppress(Exception):
        ticker = state.market.ticker(symbol, 0)  # type: ignore[attr-defined]
        return float(ticker.last if hasattr(ticker, "last") else ticker["last"])
    return 100.0


def _sim(profile: ServiceProfile | None) -> Simulator:
    if profile is None:
        return Simulator(seed=5, engine=False, history_orders=60)
    return Simulator(seed=5, engine=False, history_orders=60, profile=profile)  # type: ignore[call-arg]


@pytest.fixture(scope="module")
def default_sim() -> Iterator[Simulator]:
    with _sim(None) as sim:
        yield sim


@pytest.fixture(scope="module")
def alt_sim() -> Iterator[Simulator]:
    if not SIM_TAKES_PROFILE:
        pytest.skip("toolkit.sim.Simulator does not take profile= yet")
    with _sim(ALT) as sim:
        yield sim
