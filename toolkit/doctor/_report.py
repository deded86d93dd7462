"""The doctor's findings as rows (setting, assumed, observed, status, profile line), the
:class:`Diagnosis` that holds them, and the redaction every text goes through."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from toolkit.errors import hide_secrets
from toolkit.profile import ServiceProfile
from toolkit.profile._toml import toml_string

Status = Literal["match", "differs", "unknown"]


class Redactor:
    """Replaces every secret (token, API secret, the deliberately wrong ones) in a text, as
    is or in any common encoding (JSON-escaped, URL-quoted: a service's error body echoes
    what it was sent through its own encoder)."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets: list[str] = []
        for s in secrets:
            self.add(s)

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets.append(secret)
            self._secrets.sort(key=len, reverse=True)

    def __call__(self, text: str) -> str:
        return hide_secrets(text, self._secrets)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self(value)
        if isinstance(value, tuple | list):
            return type(value)(self.value(v) for v in value)
        return value


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    try:
        return toml_string(str(value))
    except ValueError:  # a lone surrogate: shown, never written (dump_profile refuses it)
        return repr(str(value))


def _show(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value) if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class Row:
    """One line of the diagnosis. ``setting`` is a profile setting (``rest.auth_header``)
    or, for a check that is not one (``check: limit routes``), a label. ``observed`` is
    what the service showed (None: not observed); ``value`` what the profile should hold
    (the assumed value when what was seen is compatible with it, or when nothing was
    observed, unless the service was seen to refuse the assumed value).

    Attributes
    ----------
    setting : str
        The profile setting (``section.field``), or ``check: <label>`` for a check.
    assumed : Any
        The profile's value of the setting (None for a check).
    observed : Any
        What the service showed, secrets redacted; None: not observed.
    status : {"match", "differs", "unknown"}
        Whether ``observed`` agrees with ``assumed``; ``unknown``: not observed (for a
        check: it could not be made).
    value : Any, optional
        What the profile should hold (None for a check).
    note : str, default ""
        How it was observed, or why it was not; secrets redacted.
    """

    setting: str
    assumed: Any
    observed: Any
    status: Status
    value: Any = None
    note: str = ""

    @property
    def is_setting(self) -> bool:
        """True for a profile setting, False for a check (``check: ...``)."""
        return not self.setting.startswith("check:")

    @property
    def line(self) -> str:
        """The profile line to change, e.g. ``[rest] fetch_order_param = "id"`` (empty
        unless the row differs)."""
        if self.status != "differs" or not self.is_setting:
            return ""
        section, _, name = self.setting.partition(".")
        return f"[{section}] {name} = {_toml(self.value)}"


@dataclass
class Diagnosis:
    """What ``toolkit doctor`` / ``tk.diagnose(client)`` found: one :class:`Row` per profile
    setting (in profile order, then the checks), the profile the client assumed, and
    ``profile()``: the profile observed (assumed values where nothing was observed).

    ``diagnosis["rest.auth_header"]`` is the row of a setting, and iterating gives the rows.

    Attributes
    ----------
    assumed : ServiceProfile
        The profile the check was made against.
    rows : list of Row, optional
        One row per profile setting, in profile order, then one per check (default: none).
    target : str, default ""
        The service's base URL, credentials redacted (empty: not said).
    steps_failed : list of str, optional
        The steps (``sign-in``, ``listing``, ``WebSocket``...) that failed, were stopped
        by the deadline or did not run: their settings could not be checked.
    """

    assumed: ServiceProfile
    rows: list[Row] = field(default_factory=list)
    target: str = ""
    steps_failed: list[str] = field(default_factory=list)

    def __iter__(self) -> Any:
        return iter(self.rows)

    def __getitem__(self, setting: str) -> Row:
        for row in self.rows:
            if row.setting == setting:
                return row
        raise KeyError(setting)

    def with_status(self, status: Status) -> list[Row]:
        """The rows, checks included, that have ``status``.

        Parameters
        ----------
        status : {"match", "differs", "unknown"}
            The status to select.

        Returns
        -------
        list of Row
            In the diagnosis' order.
        """
        return [r for r in self.rows if r.status == status]

    @property
    def differs(self) -> list[str]:
        """The settings whose observed value differs from the assumed one."""
        return [r.setting for r in self.rows if r.status == "differs" and r.is_setting]

    @property
    def ok(self) -> bool:
        """True when nothing differs and every step ran to its end (unknown rows of steps
        that ran do not count: some settings cannot be seen read-only)."""
        return not self.steps_failed and not any(r.status == "differs" for r in self.rows)

    def profile(self, name: str | None = None) -> ServiceProfile:
        """The observed profile: every differing setting changed to what was seen, and
        every unknown one whose assumed value the service refused changed to the safe
        value its note names. A ``listing.page_default`` outside the page bounds seen is
        clamped into them (:meth:`comments` says so).

        Parameters
        ----------
        name : str, optional
            The new profile's name (default: the assumed profile's name + ``-observed``).

        Returns
        -------
        ServiceProfile
            Ready for :func:`~toolkit.profile.dump_profile` (with :meth:`comments`).
        """
        changes, _ = self._changes()
        return self.assumed.replace(changes, name=name or f"{self.assumed.name}-observed")

    def _changes(self) -> tuple[dict[str, Any], str]:
        """The settings :meth:`profile` changes, and a note when ``listing.page_default``
        had to be clamped into the page bounds (the profile checks refuse a default
        outside them, e.g. bounds seen and the default not: too few orders)."""
        changes = {
            r.setting: r.value
            for r in self.rows
            if r.is_setting
            and (r.status == "differs" or (r.status == "unknown" and r.value != r.assumed))
        }
        lst = self.assumed.listing
        low = changes.get("listing.page_min", lst.page_min)
        high = changes.get("listing.page_max", lst.page_max)
        default = changes.get("listing.page_default", lst.page_default)
        if not all(isinstance(v, int) for v in (low, high, default)) or not low <= high:
            return changes, ""  # nothing to clamp into: the profile checks say why
        if low <= default <= high:
            return changes, ""
        clamped = min(max(default, low), high)
        changes["listing.page_default"] = clamped
        return changes, (
            f"{default} lies outside the page bounds [{low}, {high}]: clamped to {clamped}"
        )

    def comments(self) -> dict[str, str]:
        """Setting -> a note for ``dump_profile(..., comments=...)``."""
        out: dict[str, str] = {}
        _, clamped = self._changes()
        for r in self.rows:
            if r.is_setting:
                what = {"match": "matches", "differs": "observed", "unknown": "not observed"}
                out[r.setting] = f"doctor: {what[r.status]}" + (f"; {r.note}" if r.note else "")
        if clamped:
            head = out.get("listing.page_default", "doctor: not observed")
            out["listing.page_default"] = f"{head}; {clamped}"
        return out

    # -- views -------------------------------------------------------------------------

    def _cells(self) -> list[tuple[str, str, str, str, str]]:
        return [
            (
                r.setting,
                _show(r.assumed),
                _show(r.observed),
                r.status,
                f"{r.line}  ({r.note})" if r.line and r.note else r.line or r.note,
            )
            for r in self.rows
        ]

    def summary(self) -> str:
        """One line: the service's address and how many rows (checks included) match,
        differ and are unknown."""
        counts = {s: len(self.with_status(s)) for s in ("match", "differs", "unknown")}
        where = f" at {self.target}" if self.target else ""
        failed = (
            f"; INCOMPLETE: {', '.join(self.steps_failed)} failed (see its check row)"
            if self.steps_failed
            else ""
        )
        return (
            f"service{where}: {counts['match']} match, {counts['differs']} differ, "
            f"{counts['unknown']} unknown{failed}"
        )

    def to_text(self, width: int = 48) -> str:
        """A plain-text table: setting, assumed, observed, status, line to change / note.

        No text is lost: the last column (the line to change, or why a row is unknown and
        what to do) is shown whole, and an assumed or observed value longer than
        ``width`` is cut in the table with a ``[n]`` mark whose whole text follows under
        "details".

        Parameters
        ----------
        width : int, default 48
            Longest assumed/observed cell in the table itself.

        Returns
        -------
        str
            The table, the details of the cut cells (if any), a blank line and the
            :meth:`summary`.
        """
        head = ("setting", "assumed", "observed", "status", "change / note")
        details: list[str] = []

        def cell(row: str, column: str, text: str) -> str:
            if len(text) <= width:
                return text
            if not details or not details[-1].endswith(f": {text}"):
                details.append(f"[{len(details) + 1}] {row} {column}: {text}")
            mark = f"...[{len(details)}]"
            return text[: max(width - len(mark), 1)] + mark

        rows = [head]
        for setting, assumed, observed, status, note in self._cells():
            shown = cell(setting, "assumed", assumed)
            rows.append(
                (
                    setting,
                    shown,
                    # the same text once under details
                    shown if observed == assumed else cell(setting, "observed", observed),
                    status,
                    note,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = []
        for i, r in enumerate(rows):
            lines.append("  ".join(r[k].ljust(widths[k]) for k in range(4)) + "  " + r[4])
            if i == 0:
                lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 13)
        if details:
            lines += ["", "details:", *details]
        return "\n".join([*lines, "", self.summary()])

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<Diagnosis: {self.summary()}>"

    def _repr_html_(self) -> str:
        esc = html.escape
        colour = {"match": "#1a7f37", "differs": "#cf222e", "unknown": "#9a6700"}
        body = "".join(
            "<tr>"
            + "".join(f"<td><code>{esc(c)}</code></td>" for c in cells[:3])
            + f"<td style='color:{colour[cells[3]]}'>{esc(cells[3])}</td>"
            + f"<td>{esc(cells[4])}</td></tr>"
            for cells in self._cells()
        )
        return (
            "<div class='toolkit-diagnosis'><strong>toolkit doctor</strong> "
            f"<span>{esc(self.summary())}</span><table><thead><tr><th>setting</th>"
            "<th>assumed</th><th>observed</th><th>status</th><th>change / note</th></tr>"
            f"</thead><tbody>{body}</tbody></table></div>"
        )


class Findings:
    """Collects observations while the probes run; ``rows()`` turns them into rows."""

    def __init__(self, assumed: ServiceProfile, redact: Redactor) -> None:
        self.assumed = assumed
        self.redact = redact
        self._rows: dict[str, Row] = {}
        self._checks: list[Row] = []
        self._notes: dict[str, str] = {}
        self._instead: dict[str, Any] = {}

    def set(
        self, setting: str, observed: Any, *, value: Any = None, note: str = "", ok: bool = False
    ) -> None:
        """``observed`` was seen for ``setting``; the profile should hold ``value``
        (default: ``observed``). ``ok``: compatible with the assumed value whatever it is."""
        assumed = self.assumed.get(setting)
        if observed is None:
            self.unknown(setting, note)
            return
        value = observed if value is None else value
        if isinstance(assumed, tuple) and isinstance(value, list):
            value = tuple(value)
        status: Status = "match" if ok or value == assumed else "differs"
        self._rows[setting] = Row(
            setting,
            assumed,
            self.redact.value(observed),
            status,
            assumed if status == "match" else self.redact.value(value),
            self.redact(note),
        )

    def unknown(self, setting: str, note: str, *, instead: Any = None) -> None:
        """``setting`` was not observed. ``instead``: the value the profile should hold in
        place of the assumed one, which the service was seen to refuse (None: keep the
        assumed value); the note must say so."""
        if setting in self._rows:  # a later failure does not erase what was seen
            return
        self._notes.setdefault(setting, self.redact(note))
        if instead is not None:
            self._instead.setdefault(setting, instead)

    def check(self, label: str, status: Status, observed: Any, note: str = "") -> None:
        self._checks.append(
            Row(
                f"check: {label}",
                None,
                self.redact.value(observed),
                status,
                None,
                self.redact(note),
            )
        )

    def seen(self, setting: str) -> Row | None:
        return self._rows.get(setting)

    def rows(self, settings: Sequence[tuple[str, Any]], unobservable: dict[str, str]) -> list[Row]:
        out: list[Row] = []
        for setting, assumed in settings:
            row = self._rows.get(setting)
            if row is None:
                note = self._notes.get(setting) or unobservable.get(setting, "not observed")
                value = self._instead.get(setting, assumed)
                row = Row(
                    setting, assumed, None, "unknown", value, f"{note}; {what_to_do(setting)}"
                )
            out.append(row)
        return out + self._checks


#: what a user can do about an unknown setting, by the first part of its name
_TO_DO: dict[str, str] = {
    "signin.": "check TOOLKIT_BASE_URL and the credentials, or set [signin] path, key_field "
    "and secret_field from the sign-in route's documentation (POST /auth/signin)",
    "rest.cancel_profile_in": "the client learns it at run time from the first cancel "
    "(client.learned); or set it from the cancel route's documentation",
    "rest.cancel": "set it from the cancel route's documentation (PATCH "
    "/orders/limit/orders/:orderId/cancel)",
    "rest.batch": "set it from the batch-cancel route's documentation",
    "rest.": "set it from the documentation of the REST routes (how requests carry "
    "identity, fetchOrder's input)",
    "listing.": "needs an account with enough limit orders to fill a page; or set it from "
    "the listing route's documentation (GET /orders/limit/orders)",
    "orders.": "needs orders of that kind in the account; or set it from the order "
    "fields' documentation (GET /orders/fetchOrder)",
    "payloads.": "no payload arrived while the doctor waited: run again with a longer "
    "--wait when the channel is quiet, or set it from the channel's payload documentation",
    "stream.limit_events": "an order book learns it at run time when an order its client "
    "created is never notified (client.learned); or set it from the watchOrders channel's "
    "documentation",
    "stream.idle_limit_s": "the client learns it at run time from a close for idleness "
    "(client.learned); run the doctor with a --wait longer than the limit, or set it from "
    "the WebSocket documentation",
    "stream.max_duration_s": "the client learns it at run time from a close at that age "
    "(client.learned), or set it from the WebSocket documentation",
    "stream.": "set it from the WebSocket documentation (connection limits, keep-alive "
    "action); the client's streams log a close they did not expect",
    "signin": "check the credentials",
}


def what_to_do(setting: str) -> str:
    """What a user can do about ``setting`` being unknown: which option, or which part of
    the service's documentation says it."""
    for prefix, text in _TO_DO.items():
        if setting.startswith(prefix):
            return text
    return "set it by hand from the service's documentation"
