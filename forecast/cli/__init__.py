"""Command-line interface: ``wallcast`` (console script) and ``python -m forecast``.

One module per command group, all registering on the one Typer app of :mod:`forecast.cli.app`:

* :mod:`forecast.cli.walls` - ``walls``, ``latency-wall``, ``curve``;
* :mod:`forecast.cli.plan` - ``plan`` (one given plan, evaluated), ``runs`` (published runs);
* :mod:`forecast.cli.refresh` - ``run``, ``ingest``, ``serve`` (the Prefect flows);
* :mod:`forecast.cli.query` - ``query``, ``report``, ``deck``;
* :mod:`forecast.cli.analysis` - ``sensitivity``, ``backtest``, ``analyse``;
* :mod:`forecast.cli.api` - ``api`` (the HTTP API and dashboard).

Shared option types and the one set of refresh options are in :mod:`forecast.cli.options`,
every printed table in :mod:`forecast.cli.tables`.

Start-up must stay fast: these modules import only typer and the standard library at module
level.  JAX, numpyro, pandas, matplotlib, xarray and ``forecast.model`` are imported inside the
commands that need them (a test checks that ``import forecast.cli`` leaves ``jax`` unimported).
"""

from forecast.cli import analysis, api, plan, query, refresh, walls  # noqa: F401  (register)
from forecast.cli.app import EXIT_USER_ERROR, app, main

__all__ = ["EXIT_USER_ERROR", "app", "main"]
