"""A faithful local simulator of the trading service: REST, WebSocket and a control API on
one loopback port, with a seeded history and a live engine (``tk.Simulator``, ``toolkit sim``).

It serves the spec on its own; it imports the client only for ``Simulator.client()``, and
nothing but the CLI and the demo imports it, so the client never depends on the simulator."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.sim._control import SimControl, SimControlError
from toolkit.sim._knobs import Knobs

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._client import Client
    from toolkit.sim._server import ServerThread
    from toolkit.sim._state import SimState

__all__ = ["Knobs", "SimControl", "SimControlError", "Simulator"]


class Simulator:
    """The simulated service on ``host``:``port`` (0 = a free port), served by uvicorn in a
    background thread. ``start()`` returns once it accepts connections; ``stop()`` is
    idempotent; use it as a context manager. ``knobs`` are the fields of ``Knobs``.

    ``profile`` (default ``DEFAULT_PROFILE``) answers every point the spec leaves unshown:
    routes, sign-in, identity, list items, payloads, texts, codes; the knobs that duplicate
    one of its points (page sizes, connection limits, limit events, status case) start
    from it and stay settable, and so do the knobs of its ``[simulator]`` table.

    ``served`` (default: ``profile``) is the profile the simulator serves when a client
    should take another one: ``profile`` is then only what ``client()`` (and a test's
    clients, through ``sim.profile``) use, e.g. the profile ``toolkit doctor`` wrote for a
    simulator serving ``profiles/stranger.toml``."""

    def __init__(
        self,
        seed: int = 7,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        profile: ServiceProfile = DEFAULT_PROFILE,
        served: ServiceProfile | None = None,
        **knobs: Any,
    ) -> None:
        served = profile if served is None else served
        for name, given in (("profile", profile), ("served", served)):
            if not isinstance(given, ServiceProfile):
                raise TypeError(f"{name} must be a ServiceProfile, not {type(given).__name__}")
        #: what a client of this simulator should take
        self.profile = profile
        #: what the simulator serves
        self.served = served
        self.knobs = Knobs.from_profile(served, seed=seed)
        self.knobs.update(**knobs)
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._server: ServerThread | None = None
        self._control: SimControl | None = None
        self.state: SimState | None = None

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "not started"
        shown = "" if self.profile is DEFAULT_PROFILE else f", profile={self.profile.name!r}"
        if self.served is not self.profile:
            shown += f", served={self.served.name!r}"
        return f"Simulator(seed={self.knobs.seed}{shown}, {where})"

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the simulator is not started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self._netloc()}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self._netloc()}"

    def _netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def control(self) -> SimControl:
        if self._control is None:
            self._control = SimControl(self.base_url)
        return self._control

    @property
    def running(self) -> bool:
        return self._server is not None and self._server.alive

    def start(self) -> Simulator:
        if self._server is not None:
            return self
        from toolkit.sim._server import ServerThread, bind, build_app
        from toolkit.sim._state import SimState

        self.state = SimState(self.knobs, profile=self.served)
        sock = bind(self.host, self._requested_port)
        self._port = int(sock.getsockname()[1])
        server = ServerThread(build_app(self.state), sock)
        try:
            server.start()
        except BaseException:
            server.stop()
            raise
        self._server = server
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()
        control, self._control = self._control, None
        if control is not None:
            control.close()

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def client(
        self, api_key: str = "demo", api_secret: str = "demo-secret", **settings: Any
    ) -> Client:
        """A ``toolkit.Client`` for this simulator (profile ``P1`` unless given), under the
        simulator's service profile."""
        from toolkit.client._client import Client

        settings.setdefault("profile_id", "P1")
        settings.setdefault("profile", self.profile)
        return Client(
            self.base_url, ws_url=self.ws_url, api_key=api_key, api_secret=api_secret, **settings
        )
