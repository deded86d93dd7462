"""What a client learnt about the service at run time, where the profile guessed wrong and
the service's answer showed the right value (an unshown point of the spec), kept for the
client's session, logged once and counted, so the user can write it into the profile."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

logger = logging.getLogger("toolkit.learned")


@dataclass(frozen=True)
class LearnedSetting:
    """One profile setting the service showed to be other than the profile says.

    Attributes
    ----------
    setting : str
        The profile's dotted name (``"rest.cancel_profile_in"``).
    value : object
        The value that worked; the client uses it for the rest of its session.
    profile_value : object
        The profile's value, which the service refused.
    evidence : str
        What the service answered that taught it (no secrets: statuses and the setting).
    uses : int
        Requests sent with ``value`` since it was learnt, the one that taught it included.
    """

    setting: str
    value: object
    profile_value: object
    evidence: str
    uses: int = 1

    @property
    def toml_line(self) -> str:
        """The line to write in the profile's section (``cancel_profile_in = "query"``)."""
        key = self.setting.rsplit(".", 1)[-1]
        value = f'"{self.value}"' if isinstance(self.value, str) else repr(self.value)
        return f"{key} = {value}"


class Learned(Mapping[str, LearnedSetting]):
    """The settings a client learnt, by dotted name (read-only for users; thread-safe,
    since the sync twins run on the client's loop thread)."""

    def __init__(self) -> None:
        self._items: dict[str, LearnedSetting] = {}
        self._lock = threading.Lock()

    def __getitem__(self, setting: str) -> LearnedSetting:
        return self._items[setting]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        inner = ", ".join(f"{s.setting}={s.value!r} (uses {s.uses})" for s in self.values())
        return f"<Learned {inner or 'nothing'}>"

    def value(self, setting: str, default: object) -> object:
        """The learnt value of ``setting`` (one more use counted), else ``default``."""
        with self._lock:
            item = self._items.get(setting)
            if item is None:
                return default
            self._items[setting] = replace(item, uses=item.uses + 1)
            return item.value

    def learn(self, setting: str, value: object, profile_value: object, evidence: str) -> None:
        """Keep ``value`` for ``setting`` and say so once (a warning naming the line to
        write in the profile)."""
        with self._lock:
            if setting in self._items and self._items[setting].value == value:
                return
            item = LearnedSetting(setting, value, profile_value, evidence)
            self._items[setting] = item
        section = setting.rsplit(".", 1)[0]
        logger.warning(
            "learnt %s = %r (the profile says %r): %s; this client uses it for the rest of "
            "its session: write `%s` in the profile's [%s] section",
            setting,
            value,
            profile_value,
            evidence,
            item.toml_line,
            section,
        )
