"""``wallcast api``: the read-only HTTP API and dashboard over the published forecasts."""

from __future__ import annotations

from typing import Annotated

import typer

from forecast.cli.app import app, reports_errors
from forecast.cli.options import ApiHostOpt, OutputsDirOpt


@app.command()
@reports_errors
def api(
    host: ApiHostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8000,
    outputs_dir: OutputsDirOpt = None,
) -> None:
    """Serve the read-only HTTP API and the dashboard over the published forecasts.

    Open http://HOST:PORT/ for the dashboard, /docs for the API; a newly published forecast is
    served without a restart.  Stop with Ctrl-C.
    """
    # why here: FastAPI and uvicorn load only when the API is served, not for every command
    from forecast.service.server import run_api

    run_api(host, port, outputs_dir)
