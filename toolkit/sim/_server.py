"""Assembly of the simulator's ASGI app (REST, control API and WebSocket on one port) and the
uvicorn server that runs it on its own event loop in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncIterator

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, WebSocketRoute

from toolkit.sim import _control, _rest
from toolkit.sim._state import SimState
from toolkit.sim._ws import ws_endpoint


async def _http_error(request: Request, exc: Exception) -> Response:
    """Unknown route, wrong method...: the service's error body, or the control API's."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    state: SimState = request.app.state.sim
    body = (
        {"message": detail} if request.url.path.startswith("/_sim/") else state.shape.error(detail)
    )
    return JSONResponse(body, status_code=status)


def build_app(state: SimState) -> Starlette:
    """One Starlette app: service routes, ``/_sim/`` control routes, WebSocket at "/"."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state.attach(asyncio.get_running_loop())
        try:
            yield
        finally:
            await state.close()

    routes: list[BaseRoute] = [*_rest.routes(state.profile), *_control.routes()]
    routes.append(WebSocketRoute("/", ws_endpoint))
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
    )
    app.state.sim = state
    return app


class _Server(uvicorn.Server):
    """uvicorn that tells another thread when it accepts connections."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket; port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose
    # proto says TCP, and without it every keep-alive response waits ~40 ms (Nagle +
    # delayed ACK) between its headers and its body
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        # name the address: "Address already in use" alone does not say which
        raise OSError(exc.errno, exc.strerror or str(exc), f"{host}:{port}") from exc
    sock.set_inheritable(True)
    return sock


class ServerThread:
    """Runs the app with uvicorn on a private loop in a daemon thread."""

    def __init__(self, app: Starlette, sock: socket.socket) -> None:
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
        self._server = _Server(config)
        self._sock = sock
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="toolkit-sim", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self._server.serve(sockets=[self._sock]))
        except BaseException as exc:  # reported to the thread that called start()
            self._error = exc
        finally:
            self._server.ready.set()

    def start(self, timeout: float = 60.0) -> None:
        self._thread.start()
        if not self._server.ready.wait(timeout):
            raise RuntimeError("the simulator did not start in time")
        if self._error is not None or not self._server.started:
            raise RuntimeError("the simulator failed to start") from self._error

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        with contextlib.suppress(OSError):
            self._sock.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()
