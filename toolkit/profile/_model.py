"""``ServiceProfile``: every choice the spec leaves unshown, as one declarative object that
both the client and the simulator take. The default is PRODUCT.md's table of decisions."""

from __future__ import annotations

import dataclasses
import os
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.errors import InvalidRequest
from toolkit.profile._sections import Listing, Orders, Payloads, Rest, Signin, Stream

_LIMIT = ("OPEN", "TRIGGERED", "PROCESSING", "CANCELLING", "EXECUTED", "CLOSED")
_LIMIT_ALL = (*_LIMIT, "EXPIRED", "CANCELLED", "REJECTED")


class SettingError(InvalidRequest):
    """An :class:`InvalidRequest` about a profile's settings: ``settings`` names them
    (dotted, or a section's name) so that a loader can point at their line in its file;
    ``bare`` is the message without the file."""

    def __init__(self, message: str, *settings: str, bare: str | None = None) -> None:
        super().__init__(message)
        self.settings = settings
        self.bare = message if bare is None else bare


def located(exc: SettingError, source: str, at: tuple[int, str] | None = None) -> SettingError:
    """``exc`` said of ``source`` (a file name), at ``at`` (line number, setting) in it
    when known."""
    bare = exc.bare.removeprefix("profile ")
    where = source if at is None else f"{source}, line {at[0]} ({at[1]})"
    return SettingError(f"{where}: {bare}", *exc.settings, bare=exc.bare)


SECTIONS: dict[str, type] = {
    "signin": Signin,
    "rest": Rest,
    "listing": Listing,
    "orders": Orders,
    "stream": Stream,
    "payloads": Payloads,
}


@dataclass(frozen=True)
class ServiceProfile:
    """Every choice the spec leaves unshown, grouped by where it shows.

    The default instance holds PRODUCT.md's decisions. Load another from TOML with
    ``ServiceProfile.load(path)`` (or ``TOOLKIT_PROFILE=path``), change single points with
    ``profile.replace({"rest.fetch_order_param": "id"})``, compare two with ``diff``, and
    write one with ``dump``. ``Client(..., profile=p)`` and ``Simulator(profile=p)`` take
    the same object, so a test suite can run both sides under another profile.

    Sections: ``signin``, ``rest``, ``listing``, ``orders``, ``stream``, ``payloads``; the
    fields of each are documented on their classes and in ``profiles/default.toml``.

    Parameters
    ----------
    name : str, default "default"
        The profile's name, written with it to TOML.
    signin : Signin, optional
        The sign-in (default: ``Signin()``).
    rest : Rest, optional
        Identity header and routes (default: ``Rest()``).
    listing : Listing, optional
        Page bounds, list-item fields and filter shortcuts (default: ``Listing()``).
    orders : Orders, optional
        Order bodies (default: ``Orders()``).
    stream : Stream, optional
        The WebSocket (default: ``Stream()``).
    payloads : Payloads, optional
        Ticker and balance payloads (default: ``Payloads()``).
    simulator : mapping of str to Any, optional
        The ``[simulator]`` table: knobs of ``toolkit.sim`` for what a simulator serving
        this profile does beyond it (``validation_status = 422``,
        ``payload_time_format = "iso"``...). The client ignores it; the simulator checks
        the names and values when it starts (default: none).
    origin : str, default ""
        The file the profile was loaded from (``load`` sets it), so that a knob of the
        ``[simulator]`` table the simulator refuses later is said with its file and line;
        not compared.

    Raises
    ------
    InvalidRequest
        A setting outside its choices, page bounds that do not hold
        ``1 <= page_min <= page_default <= page_max``, a listing status that is no limit
        status, a route that is not an absolute path without query, a ``cancel_path``
        whose only ``{...}`` field is not ``{order_id}``, a confirmation text without its
        ``{channel}``/``{symbol}`` fields, a keep-alive interval not below the idle limit,
        or an empty setting that must have a value; the message names the setting.
    """

    name: str = "default"
    signin: Signin = field(default_factory=Signin)
    rest: Rest = field(default_factory=Rest)
    listing: Listing = field(default_factory=Listing)
    orders: Orders = field(default_factory=Orders)
    stream: Stream = field(default_factory=Stream)
    payloads: Payloads = field(default_factory=Payloads)
    simulator: Mapping[str, Any] = field(default_factory=dict)
    #: the file this profile was loaded from ("" otherwise), for errors found later
    origin: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        _check(self)

    # -- files ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ServiceProfile:
        """The profile in a TOML file (see ``profiles/default.toml``).

        Parameters
        ----------
        path : str or os.PathLike
            The TOML file; settings it leaves out keep their defaults.

        Returns
        -------
        ServiceProfile

        Raises
        ------
        InvalidRequest
            The file is missing, unreadable or not TOML, or a setting is unknown, of the
            wrong type or refused by the checks (see the class); the message names the
            setting, and the file unless a check refused the value.
        """
        from toolkit.profile._toml import load_profile

        return load_profile(path)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServiceProfile:
        """The profile of the TOML file named by ``TOOLKIT_PROFILE``, or the default.

        Parameters
        ----------
        environ : mapping of str to str, optional
            The variables to read (default: ``os.environ``).

        Returns
        -------
        ServiceProfile
            ``DEFAULT_PROFILE`` when ``TOOLKIT_PROFILE`` is unset or empty.

        Raises
        ------
        InvalidRequest
            As ``load``, for the file the variable names.
        """
        from toolkit.profile._toml import profile_from_env

        return profile_from_env(environ)

    def dump(self, path: str | os.PathLike[str]) -> Path:
        """Write this profile as TOML, whole or not at all.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (replaced if it exists).

        Returns
        -------
        pathlib.Path
            The file written.

        Raises
        ------
        InvalidRequest
            ``path`` is empty or a directory, or a value cannot be written as TOML that
            reads back the same (a number that is not finite, a lone surrogate); nothing
            is written then.
        WriteError
            The disk refused the file (full, read-only, no permission), naming it.
        OSError
            The file cannot be written otherwise (its folder missing).
        """
        from toolkit.profile._toml import dump_profile

        return dump_profile(self, path)

    def to_toml(self) -> str:
        """This profile as TOML text."""
        from toolkit.profile._toml import dumps_profile

        return dumps_profile(self)

    # -- building ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "profile") -> ServiceProfile:
        """A profile from nested tables (as TOML gives); unknown names are errors, missing
        ones keep the default.

        Parameters
        ----------
        data : mapping of str to Any
            ``name`` and one table per section, e.g. ``{"rest": {"auth_scheme": "Token"}}``;
            lists are accepted for tuples, integers for floats.
        source : str, default "profile"
            Where ``data`` came from (a file name), to start each error message.

        Returns
        -------
        ServiceProfile

        Raises
        ------
        InvalidRequest
            An unknown section or setting, a section that is not a table, a value of the
            wrong type, a ``name`` that is not a string, or a profile the checks refuse
            (see the class).
        """
        try:
            return cls(**_parts(data))
        except SettingError as exc:
            raise located(exc, source) from None

    def to_dict(self) -> dict[str, Any]:
        """Nested plain values (tuples as lists), the inverse of ``from_dict``; the
        ``simulator`` table only when it holds a knob."""
        out: dict[str, Any] = {"name": self.name}
        for section in SECTIONS:
            table = dataclasses.asdict(getattr(self, section))
            out[section] = {k: list(v) if isinstance(v, tuple) else v for k, v in table.items()}
        if self.simulator:
            out["simulator"] = dict(self.simulator)
        return out

    def replace(self, changes: Mapping[str, Any] | None = None, **kw: Any) -> ServiceProfile:
        """A copy with dotted changes applied: ``replace({"rest.auth_scheme": "Token"})``.

        Parameters
        ----------
        changes : mapping of str to Any, optional
            Dotted setting (``section.field``, or ``name``) -> new value.
        **kw : Any
            More changes by keyword, applied after ``changes``; as dotted names are no
            keywords, in practice ``name=``.

        Returns
        -------
        ServiceProfile
            A new profile; this one is unchanged.

        Raises
        ------
        InvalidRequest
            A name that is not ``section.field`` of a known section, an unknown field, a
            value of the wrong type, or a profile the checks refuse.
        """
        data = self.to_dict()
        for dotted, value in {**(changes or {}), **kw}.items():
            if dotted == "name":
                data["name"] = value
                continue
            section, _, name = dotted.partition(".")
            if section not in SECTIONS or not name:
                raise InvalidRequest(
                    f"unknown profile setting {dotted!r}; use section.field, e.g. "
                    "'rest.fetch_order_param'"
                )
            data[section][name] = value
        return ServiceProfile.from_dict(data, source="profile.replace")

    def settings(self) -> list[tuple[str, Any]]:
        """Every setting as (dotted name, value), in declaration order."""
        out: list[tuple[str, Any]] = []
        for section in SECTIONS:
            for f in dataclasses.fields(getattr(self, section)):
                out.append((f"{section}.{f.name}", getattr(getattr(self, section), f.name)))
        return out

    def get(self, dotted: str) -> Any:
        """The value of one setting by its dotted name.

        Parameters
        ----------
        dotted : str
            ``section.field``, e.g. ``"rest.fetch_order_param"``.

        Returns
        -------
        Any

        Raises
        ------
        KeyError
            The section is unknown.
        AttributeError
            The section has no such field.
        """
        section, _, name = dotted.partition(".")
        if section not in SECTIONS:
            raise KeyError(dotted)
        return getattr(getattr(self, section), name)

    def diff(self, other: ServiceProfile) -> list[tuple[str, Any, Any]]:
        """(setting, this value, other value) for every setting that differs.

        Parameters
        ----------
        other : ServiceProfile
            The profile to compare with (the ``name`` is not compared).

        Returns
        -------
        list of (str, Any, Any)
            In declaration order; empty when every setting is the same.
        """
        theirs = dict(other.settings())
        return [(k, v, theirs[k]) for k, v in self.settings() if theirs[k] != v]


def _parts(data: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords of ``ServiceProfile`` for nested tables; SettingError (no file named)
    for an unknown or badly typed setting."""
    unknown = sorted(set(data) - {"name", "simulator", *SECTIONS})
    if unknown:
        raise SettingError(
            f"unknown section(s) {', '.join(unknown)}; known: name, {', '.join(SECTIONS)}, "
            "simulator",
            *unknown,
        )
    parts: dict[str, Any] = {}
    for section, klass in SECTIONS.items():
        table = data.get(section, {})
        if not isinstance(table, Mapping):
            raise SettingError(f"[{section}] must be a table", section)
        parts[section] = _build_section(klass, section, table)
    name = data.get("name", "default")
    if not isinstance(name, str):
        raise SettingError("name must be a string", "name")
    return {"name": name, **parts, "simulator": _simulator_table(data.get("simulator", {}))}


def _simulator_table(table: Any) -> dict[str, Any]:
    """The ``[simulator]`` table as plain values (its knobs are checked by the simulator,
    which the client never imports): a table of TOML values that are no tables."""
    if not isinstance(table, Mapping):
        raise SettingError("[simulator] must be a table", "simulator")
    for key, value in table.items():
        if isinstance(value, Mapping):
            raise SettingError(f"simulator.{key} must be a value, not a table", f"simulator.{key}")
    return {str(k): list(v) if isinstance(v, tuple) else v for k, v in table.items()}


def _build_section(klass: type, section: str, table: Mapping[str, Any]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(klass)}
    unknown = sorted(set(table) - set(fields))
    if unknown:
        raise SettingError(
            f"unknown setting(s) in [{section}]: {', '.join(unknown)}; known: {', '.join(fields)}",
            *(f"{section}.{name}" for name in unknown),
        )
    defaults = klass()
    values: dict[str, Any] = {}
    for name, value in table.items():
        default = getattr(defaults, name)
        values[name] = _coerce(value, default, f"{section}.{name}")
    return klass(**values)


def _coerce(value: Any, default: Any, dotted: str) -> Any:
    def bad(kind: str) -> SettingError:
        return SettingError(f"{dotted} must be {kind}, not {value!r}", dotted)

    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if isinstance(default, tuple):
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            raise bad("a list")
        kind = type(default[0]) if default else None
        items = tuple(value)
        if kind is not None and not all(
            isinstance(v, kind) and not isinstance(v, bool) for v in items
        ):
            raise bad(f"a list of {kind.__name__}")
        return items
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad("a number")
        return float(value)
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        return value
    if isinstance(default, str):
        if not isinstance(value, str):
            raise bad("a string")
        return value
    return value


_CHOICES: dict[str, tuple[str, ...]] = {
    "signin.expiry_kind": ("absolute", "ttl"),
    "signin.expiry_unit": ("auto", "s", "ms"),
    "rest.cancel_profile_in": ("body", "query"),
    "orders.timestamp_unit": ("auto", "s", "ms"),
    "orders.status_case": ("mixed", "upper", "lower"),
    "stream.refusal_kind": ("http", "close"),
    "stream.limit_events": ("all", "outcome_only"),
    "stream.only_priority_type": ("bool", "int", "str"),
}


def _check(p: ServiceProfile) -> None:
    for dotted, choices in _CHOICES.items():
        if p.get(dotted) not in choices:
            raise SettingError(
                f"profile {dotted} must be one of {', '.join(choices)}, not {p.get(dotted)!r}",
                dotted,
            )
    lst = p.listing
    if not 1 <= lst.page_min <= lst.page_default <= lst.page_max:
        raise SettingError(
            "profile listing needs 1 <= page_min <= page_default <= page_max, not "
            f"{lst.page_min}, {lst.page_default}, {lst.page_max}",
            "listing.page_min",
            "listing.page_default",
            "listing.page_max",
        )
    statuses = set(lst.active_statuses) | set(lst.finalized_statuses)
    if not statuses <= set(_LIMIT_ALL):
        raise SettingError(
            f"profile listing statuses must be among {', '.join(_LIMIT_ALL)}: "
            f"{sorted(statuses - set(_LIMIT_ALL))}",
            "listing.active_statuses",
            "listing.finalized_statuses",
        )
    for dotted, value in p.settings():
        if dotted.endswith("path") and isinstance(value, str):
            _check_path(dotted, value)
    _check_cancel_path(p.rest.cancel_path)
    _check_each(p)
    for dotted in ("stream.subscribed_text", "stream.unsubscribed_text"):
        if "{channel}" not in p.get(dotted) or "{symbol}" not in p.get(dotted):
            raise SettingError(f"profile {dotted} must contain {{channel}} and {{symbol}}", dotted)
    for dotted in ("stream.subscribed_text_no_symbol", "stream.unsubscribed_text_no_symbol"):
        if "{channel}" not in p.get(dotted):
            raise SettingError(f"profile {dotted} must contain {{channel}}", dotted)
    s = p.stream
    if s.keepalive_action and not 0 < s.keepalive_interval_s < s.idle_limit_s:
        raise SettingError(
            "profile stream.keepalive_interval_s must be > 0 and below stream.idle_limit_s",
            "stream.keepalive_interval_s",
            "stream.idle_limit_s",
        )
    if not p.signin.bad_credentials_statuses:
        raise SettingError(
            "profile signin.bad_credentials_statuses must not be empty",
            "signin.bad_credentials_statuses",
        )
    for dotted in (
        "signin.token_field",
        "signin.expiry_field",
        "rest.fetch_order_param",
        "listing.id_field",
    ):
        if not p.get(dotted):
            raise SettingError(f"profile {dotted} must not be empty", dotted)


#: the payload settings ``*`` may end (a list keyed by symbol or asset) or be (the key)
_EACH_LISTS = ("payloads.tickers_list", "payloads.balance_list")
_EACH_KEYS = ("payloads.ticker_symbol", "payloads.balance_asset")


def _check_each(p: ServiceProfile) -> None:
    """``*`` (each value of a keyed object; the key) only where it means something."""
    for dotted, value in p.settings():
        if not dotted.startswith("payloads.") or not isinstance(value, str):
            continue
        steps = value.split(".")
        if "*" not in steps:
            continue
        if dotted in _EACH_KEYS and value == "*":
            continue
        if dotted in _EACH_LISTS and steps.index("*") == len(steps) - 1:
            continue
        raise SettingError(
            f"profile {dotted}: '*' may only end payloads.tickers_list or "
            "payloads.balance_list (an object keyed by pair or asset, e.g. 'wallet.*') or be "
            f"the whole of payloads.ticker_symbol or payloads.balance_asset, not {value!r}",
            dotted,
        )


def _check_path(dotted: str, path: str) -> None:
    """A route setting is joined to ``base_url`` as is: it must be an absolute path."""
    if not path.startswith("/"):
        raise SettingError(f"profile {dotted} must start with '/', not {path!r}", dotted)
    if "?" in path or "#" in path:
        raise SettingError(
            f"profile {dotted} must be a path without a query or fragment ('?', '#'): {path!r}",
            dotted,
        )


def _check_cancel_path(path: str) -> None:
    """``rest.cancel_path`` is formatted with the order id: ``{order_id}`` must be its one
    field (no other name, conversion or format spec), and its braces balanced."""
    bad = "profile rest.cancel_path must contain {order_id} as its only {...} field"
    try:
        fields = [(f, conv, spec) for _, f, spec, conv in string.Formatter().parse(path)]
    except ValueError as exc:
        raise SettingError(
            f"{bad} ({exc}; write a literal brace as {{{{ or }}}}): {path!r}", "rest.cancel_path"
        ) from None
    named = [(f, conv, spec) for f, conv, spec in fields if f is not None]
    if not named or any(f != "order_id" or conv or spec for f, conv, spec in named):
        raise SettingError(f"{bad}: {path!r}", "rest.cancel_path")


DEFAULT_PROFILE = ServiceProfile()
