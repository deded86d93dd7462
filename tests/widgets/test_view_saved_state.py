"""A notebook executed without a front end (nbclient, as the docs build does) saves the
widget state of a stopped view as the view last showed it, not as it was when its cell
ended: nbclient keeps only the messages of the cell it runs, and a view paints from its
task, between cells."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

CELLS = [
    """\
import asyncio
import toolkit as tk
from toolkit.stream._events import TickerEvent, TickersEvent

def tick(symbol, last):
    return TickerEvent("watchtickers", 0, "c1", 1, None, symbol, last - 1, last + 1, last, 1)

view = tk.TickerView([], autostart=False)
view""",
    # the view paints from a task of this cell's, after the cell has ended
    """\
async def feed():
    await asyncio.sleep(0.2)
    view.apply(TickersEvent("watchtickers", 0, "c1", 2, None, (tick("BTC/BRL", 350000.0),)))
    view.repaint(force=True)

task = asyncio.get_running_loop().create_task(feed())""",
    "await task",
    "view.stop()",
]


def test_a_stopped_view_saves_its_last_state_in_an_executed_notebook() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    saved = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    values = [str(m["state"].get("value", "")) for m in saved.values()]
    assert any("data-symbol='BTC/BRL'" in v for v in values), "the row painted by the task"
    assert any("data-state='stopped'" in v for v in values)
