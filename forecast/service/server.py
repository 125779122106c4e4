"""Running the app with uvicorn: in the foreground (``wallcast api``) or in a thread beside the
Prefect serve loop (``wallcast serve``)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from forecast.config.errors import WallcastError
from forecast.service.app import create_app

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def _server(host: str, port: int, outputs_dir: str | Path | None, log_level: str):
    # why here: only `wallcast api` serves; other commands skip uvicorn
    import uvicorn

    config = uvicorn.Config(
        create_app(outputs_dir), host=host, port=port, log_level=log_level, access_log=False
    )
    return uvicorn.Server(config)


def run_api(
    host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, outputs_dir: str | Path | None = None
) -> None:
    """Serve until interrupted (Ctrl-C)."""
    server = _server(host, port, outputs_dir, "info")
    try:
        server.run()
    except SystemExit:  # uvicorn exits when it cannot bind; it has logged why
        raise WallcastError(f"the API could not listen on {host}:{port}") from None


def start_api_thread(
    host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, outputs_dir: str | Path | None = None
) -> threading.Thread:
    """Serve in a daemon thread (it ends with the process); returns the thread."""
    server = _server(host, port, outputs_dir, "warning")

    def serve() -> None:
        try:
            server.run()
        except SystemExit:  # cannot bind: uvicorn logged why; the Prefect loop keeps running
            print(f"warning: the API could not listen on {host}:{port}", file=sys.stderr)

    thread = threading.Thread(target=serve, name=f"wallcast-api-{port}", daemon=True)
    thread.start()
    return thread
