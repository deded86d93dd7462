"""What the service's closes tell of its connection limits (spec 8: a maximum duration and
an idle limit exist; their values are not shown), sans-I/O: a close after a silence of
ours is the idle limit, two closes at one age although kept alive are the maximum
duration. The doctor reads a run's closes with :func:`read_limits`; a session adapts as it
goes with :class:`LimitLearner` (a shorter keep-alive, a rotation before the duration),
each adaptation logged once and kept in the client's ``learned``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from toolkit.profile import ServiceProfile
from toolkit.profile._learned import Learned

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.stream._keepalive import ConnectionPolicy

#: a close this long (or longer) after our last message can be the idle limit; a shorter
#: silence cannot tell it apart from any other close
MIN_SILENCE_S = 0.5
#: two closes at ages within this share of each other are one maximum duration
SAME_AGE = 0.25
#: rotation happens this long before a learnt maximum duration (at most a tenth of it),
#: as for the profile's (``toolkit.stream._keepalive``)
_ROTATE_MARGIN_S = 300.0


@dataclass(frozen=True)
class Close:
    """A connection the service closed: its close code (None: no close frame), reason,
    age (seconds since it opened), our silence (seconds since our last message), and
    whether keep-alives were being sent on time then."""

    code: int | None
    reason: str
    age: float
    silence: float
    kept_alive: bool

    def said(self) -> str:
        code = "no close frame" if self.code is None else f"code {self.code}"
        reason = f" {self.reason!r}" if self.reason else ""
        return f"{code}{reason} after {self.age:.1f} s open, {self.silence:.1f} s of our silence"


@dataclass(frozen=True)
class Limits:
    """What a run's closes tell: the idle limit (seconds of our silence the service
    allowed) and the maximum duration (seconds open), each with the close that showed it,
    and whether a connection kept alive since confirmed the idle limit."""

    idle_s: float | None = None
    idle_close: Close | None = None
    idle_confirmed: bool = False
    max_duration_s: float | None = None
    duration_close: Close | None = None


def _same_age(a: Close, b: Close) -> bool:
    return abs(a.age - b.age) <= SAME_AGE * max(a.age, b.age)


def read_limits(closes: list[Close], survived_s: float | None) -> Limits:
    """The limits the service's ``closes`` show. A close after a silence of ours with no
    keep-alive being sent is the idle limit, unless a connection kept alive was closed
    again at the same age (then both were the maximum duration). ``survived_s``: how
    long the last connection, kept alive, stayed open without a close (None: it was
    closed), which confirms an idle limit it outlived."""
    idle = [c for c in closes if not c.kept_alive and c.silence >= MIN_SILENCE_S]
    alive = [c for c in closes if c.kept_alive]
    duration: Close | None = None
    for c in alive:
        twin = next((i for i in idle if _same_age(i, c)), None)
        if twin is not None or c.silence < c.age * 0.5:
            duration = c
            idle = [i for i in idle if not _same_age(i, c)]
    if not idle:
        return Limits(
            max_duration_s=None if duration is None else duration.age, duration_close=duration
        )
    first = min(idle, key=lambda c: c.silence)
    confirmed = survived_s is not None and survived_s > first.silence
    return Limits(
        idle_s=first.silence,
        idle_close=first,
        idle_confirmed=confirmed or any(a.age > first.silence for a in alive),
        max_duration_s=None if duration is None else duration.age,
        duration_close=duration,
    )


class LimitLearner:
    """A session's reading of the service's closes, one at a time: the policy to use next.

    A close after our silence, before our next keep-alive was due, shows an idle limit
    shorter than our cadence: keep-alives are then sent at half that silence. A close at
    the age of an earlier one although we were not silent shows the maximum duration:
    connections are then rotated before it. Settings the user gave explicitly
    (``ping_interval=``, ``rotate_after=``) are never changed."""

    def __init__(self, profile: ServiceProfile, learned: Learned) -> None:
        self._profile = profile
        self._learned = learned
        self.closes: list[Close] = []

    def after_end(
        self,
        policy: ConnectionPolicy,
        exc: BaseException | None,
        opened_at: float,
        now: float,
        last_sent: float,
    ) -> ConnectionPolicy:
        """The policy after a connection ended with ``exc``: only a close the service
        started (its close frame first) is read; a cut, a refusal or our own close is not."""
        rcvd = getattr(exc, "rcvd", None)
        if rcvd is None or (getattr(exc, "sent", None) is not None and not exc.rcvd_then_sent):  # type: ignore[union-attr]
            return policy
        return self.after_close(
            policy, rcvd.code, rcvd.reason, now - opened_at, now - max(last_sent, opened_at)
        )

    def after_close(
        self,
        policy: ConnectionPolicy,
        code: int | None,
        reason: str,
        age: float,
        silence: float,
    ) -> ConnectionPolicy:
        """The policy after the service closed a connection (``code`` None: no close
        frame, which tells nothing)."""
        if code is None:
            return policy
        every = policy.keepalive_every if policy.keepalive else None
        on_time = every is not None and silence < every
        close = Close(code, reason, age, silence, kept_alive=on_time)
        earlier, self.closes = self.closes, [*self.closes, close]
        st = self._profile.stream
        if silence < age * 0.5:  # we were talking: not idleness
            if policy.learn_rotation and any(_same_age(c, close) for c in earlier):
                duration = min([close.age, *(c.age for c in earlier if _same_age(c, close))])
                rotate = duration - min(_ROTATE_MARGIN_S, duration * 0.1)
                if policy.rotate_after is None or rotate < policy.rotate_after:
                    self._learned.learn(
                        "stream.max_duration_s",
                        round(duration, 1),
                        st.max_duration_s,
                        f"connections were closed by the service at {duration:.1f} s of age "
                        f"although kept alive ({close.said()}); rotating at {rotate:.1f} s",
                    )
                    return replace(policy, rotate_after=rotate)
            return policy
        if (
            policy.learn_keepalive
            and policy.keepalive is not None
            and silence >= MIN_SILENCE_S
            and (every is None or silence <= every)
        ):
            shorter = round(max(silence / 2, 0.2), 1)
            if every is None or shorter < every:
                self._learned.learn(
                    "stream.keepalive_interval_s",
                    shorter,
                    st.keepalive_interval_s,
                    f"the service closed a connection after {silence:.1f} s of our silence "
                    f"({close.said()}): its idle limit is below the keep-alive interval; "
                    f"also set stream.idle_limit_s = {round(silence, 1)}",
                )
                return replace(policy, keepalive_every=shorter)
        return policy
