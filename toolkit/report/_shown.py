"""The report's tables as a notebook shows them: each is a DataFrame whose HTML view is
the report's own (headers in words with units, cells formatted by what they hold, "none"
when empty), so ``report.summary`` never reads ``2.001000e+03``; any operation on it gives
a plain DataFrame again."""

from __future__ import annotations

from typing import Any, ClassVar

import pandas as pd

from toolkit.report._html import CSS
from toolkit.report._tables import table_html, table_title


class ReportTable(pd.DataFrame):
    """A table of the report: a plain DataFrame but for its notebook view (``_repr_html_``)."""

    _metadata: ClassVar[list[str]] = ["_tk_name"]
    _tk_name: str

    @property
    def _constructor(self) -> Any:
        return pd.DataFrame

    def _repr_html_(self) -> str:
        name = getattr(self, "_tk_name", "")
        currency = ""
        if "currency" in self.columns:
            found = {c for c in self["currency"].dropna() if isinstance(c, str) and c}
            currency = found.pop() if len(found) == 1 else ""
        table = table_html(pd.DataFrame(self), name, currency)
        return (
            f'<style>{CSS}</style><div class="tk-report"><h4>{table_title(name)}</h4>{table}</div>'
        )


def shown(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """``df`` as a :class:`ReportTable` named ``name`` (its data shared, not copied)."""
    if isinstance(df, ReportTable) and getattr(df, "_tk_name", "") == name:
        return df
    out = ReportTable(df)
    out._tk_name = name
    return out
