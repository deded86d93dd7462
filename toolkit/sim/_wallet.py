"""The simulator's balances: the funds an active limit order locks, the money a fill
moves when it settles, and the watchBalance message published after each change."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from toolkit.sim._bus import Bus
from toolkit.sim._orders import Order, crypto, fiat
from toolkit.sim._shape import Shape

INITIAL_BALANCES: dict[str, dict[str, Decimal]] = {
    "A1": {
        "BRL": Decimal("2000000"),
        "BTC": Decimal("10"),
        "ETH": Decimal("100"),
        "SOL": Decimal("2000"),
        "USDT": Decimal("300000"),
    },
    "A2": {
        "BRL": Decimal("50000"),
        "BTC": Decimal("0.5"),
        "ETH": Decimal("5"),
        "SOL": Decimal("100"),
        "USDT": Decimal("10000"),
    },
}


class WalletMixin:
    """The balances part of :class:`~toolkit.sim._state.SimState`:
    ``balances[account][asset]`` is ``[free, locked]``."""

    balances: dict[str, dict[str, list[Decimal]]]
    bus: Bus
    shape: Shape

    if TYPE_CHECKING:

        @staticmethod
        def now_ms() -> int: ...

    # ---------------------------------------------------------------- balances
    def _lock_need(self, order: Order) -> tuple[str, Decimal]:
        base, quote = order.symbol.split("/")
        if order.side == "buy":
            return quote, order.quote_amount_original
        return base, order.amount

    def _lock(self, order: Order, *, force: bool = False) -> bool:
        asset, need = self._lock_need(order)
        wallet = self.balances.setdefault(order.account, {})
        free, locked = wallet.setdefault(asset, [Decimal(0), Decimal(0)])
        if not force and free < need:
            return False
        if not force:
            free -= need
        wallet[asset] = [free, locked + need]
        order.lock = (asset, need)
        return True

    def _unlock(self, order: Order) -> None:
        if order.lock is None:
            return
        asset, amt = order.lock
        order.lock = None
        wallet = self.balances[order.account]
        free, locked = wallet[asset]
        wallet[asset] = [free + amt, max(locked - amt, Decimal(0))]

    def _can_afford(
        self, account: str, symbol: str, side: str, amount: Decimal, quote: Decimal
    ) -> bool:
        base, quote_asset = symbol.split("/")
        wallet = self.balances.get(account, {})
        if side == "buy":
            return wallet.get(quote_asset, [Decimal(0)])[0] >= quote
        return wallet.get(base, [Decimal(0)])[0] >= amount

    def _settle(self, order: Order) -> None:
        """Move the fill's money: release the lock, then pay and receive."""
        self._unlock(order)
        order.materialize()
        fill = order.fill
        if fill is None:
            return
        base, quote = order.symbol.split("/")
        wallet = self.balances.setdefault(order.account, {})
        for asset in (base, quote):
            wallet.setdefault(asset, [Decimal(0), Decimal(0)])
        if order.side == "buy":
            wallet[quote][0] -= fill.cost + fill.fee_cost + order.operational_fees
            wallet[base][0] += fill.filled
        else:
            wallet[base][0] -= fill.filled
            wallet[quote][0] += fill.cost - fill.fee_cost - order.operational_fees
        self.publish_balance(order.account)

    def balance_message(self, account: str) -> dict[str, Any]:
        """The canonical balances of ``account`` (the control API shows these)."""
        rows = []
        for asset, (free, locked) in sorted(self.balances.get(account, {}).items()):
            fmt = fiat if asset == "BRL" else crypto
            rows.append(
                {
                    "asset": asset,
                    "free": fmt(free),
                    "locked": fmt(locked),
                    "total": fmt(free + locked),
                }
            )
        return {"balances": rows, "timestamp": self.now_ms()}

    def publish_balance(self, account: str) -> None:
        message = self.shape.balance(self.balance_message(account))
        self.bus.publish(("watchbalance", account), message, account=account)
