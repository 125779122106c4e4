"""``wallcast query``, ``whatif``, ``report`` and ``deck``: read a published forecast.

``query`` imports neither JAX nor xarray (h5py reads the one variable it needs).  Every command
finds its forecast the same way: ``--forecast`` (a file, a forecast folder or an outputs folder),
else ``latest`` of ``--outputs-dir``, else of WALLCAST_OUTPUTS_DIR, else of ``outputs/``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from forecast.cli.app import app, reports_errors
from forecast.cli.options import ForecastOpt, JsonOpt, OutDirOpt, OutputsDirOpt, Wall, What
from forecast.cli.tables import cost_line, query_line
from forecast.queries.answers import answer, json_ready
from forecast.queries.formatting import sci
from forecast.store.reader import resolve_forecast_path


def forecast_path(forecast: Path | None, outputs_dir: Path | None = None) -> Path:
    """The forecast file a reading command works on (see the module docstring)."""
    return resolve_forecast_path(forecast if forecast is not None else outputs_dir)


def _check_prob(value: float) -> float:
    """``--prob`` in [0.01, 0.99]; NaN and inf are named as such (not "should be <= 0.99")."""
    if not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number in [0.01, 0.99], got {value}")
    if not 0.01 <= value <= 0.99:
        raise typer.BadParameter(f"must be in [0.01, 0.99], got {value}")
    return value


ScenarioOpt = Annotated[str | None, typer.Option(help="Scenario; default: the first (baseline).")]
ProbOpt = Annotated[
    float,
    typer.Option(callback=_check_prob, help="Probability of the interval, in [0.01, 0.99]."),
]


@app.command()
@reports_errors
def query(
    wall: Annotated[Wall | None, typer.Option(help="Which wall (for --what year or flop).")] = None,
    what: Annotated[
        What,
        typer.Option(
            help="year: when the wall is hit; flop: at what training compute; cost: the cost "
            "multiplier, utilization and shortest run of the frontier run of --year."
        ),
    ] = What.year,
    year: Annotated[
        int | None, typer.Option(help="Year of the frontier run (for --what cost).")
    ] = None,
    forecast: ForecastOpt = None,
    outputs_dir: OutputsDirOpt = None,
    scenario: ScenarioOpt = None,
    prob: ProbOpt = 0.8,
    json_out: JsonOpt = False,
) -> None:
    """Median and credible interval of when / at what FLOP a wall is hit, or of what the walls
    cost the frontier run of a year (no JAX import)."""
    path = forecast_path(forecast, outputs_dir)
    out = answer(path, wall.value if wall else None, what.value, scenario, prob, year)
    if json_out:  # the same object as the API's GET /v1/query (forecast.queries.answers.query_json)
        typer.echo(json.dumps(json_ready(out), indent=2))
        return

    typer.echo(cost_line(out) if what is What.cost else query_line(out))


@app.command()
@reports_errors
def whatif(
    prior: Annotated[
        list[str],
        typer.Option(
            "--prior",
            help="A changed prior, KEY=VALUE (fixed) or KEY=P10,P50,P90 (its 10/50/90 % "
            "quantiles), e.g. scaling.batch_exponent=0.33,0.38,0.43. Repeatable.",
        ),
    ],
    forecast: ForecastOpt = None,
    outputs_dir: OutputsDirOpt = None,
    scenario: ScenarioOpt = None,
    prob: ProbOpt = 0.8,
    json_out: JsonOpt = False,
) -> None:
    """The hit year and hit FLOP of each wall under changed priors, by Pareto-smoothed importance
    reweighting of the forecast's stored draws (milliseconds, no JAX), with the Pareto k: above
    0.7 the answer is unreliable and a real run (the served what-if deployment) answers instead."""
    # why here: the reweighting loads SciPy and h5py; `wallcast --help` must not
    from forecast.queries.whatif import whatif_answer

    out = whatif_answer(prior, forecast_path(forecast, outputs_dir), scenario=scenario, prob=prob)
    if json_out:  # the same object as the API's GET /v1/whatif
        typer.echo(json.dumps(out, indent=2, allow_nan=False))
        return
    typer.echo(whatif_text(out))


def whatif_text(out: dict) -> str:
    """``wallcast whatif``: one line per wall and quantity, before -> after."""

    def iv(d: dict | None, fmt) -> str:
        if d is None:
            return "-"

        def one(v):
            return "not hit" if v is None else fmt(v)

        return f"{one(d['median'])} ({one(d['lower'])} – {one(d['upper'])}), P(hit) {d['hit_probability']:.0%}"

    lines = [
        f"What if, forecast {out['forecast_id']}, scenario {out['scenario']}: "
        + "; ".join(
            f"{c['key']} ({c['kind']}): prior {c['before']} -> {c['after']}; over the draws "
            f"median {c['input_median_before']:.3g} -> "
            + ("-" if c["input_median_after"] is None else f"{c['input_median_after']:.3g}")
            for c in out["changes"]
        ),
        "",
    ]
    for w in out["walls"]:
        after = w["after"] or {"hit_year": None, "hit_flop": None}
        lines += [
            f"{w['wall']} wall",
            f"  hit year   before {iv(w['before']['hit_year'], lambda v: f'{v:.1f}')}",
            f"             after  {iv(after['hit_year'], lambda v: f'{v:.1f}')}",
            f"  hit FLOP   before {iv(w['before']['hit_flop'], sci)}",
            f"             after  {iv(after['hit_flop'], sci)}",
        ]
    k = out["pareto_k"]
    lines += [
        "",
        f"median ({out['prob']:.0%} interval) over {out['draws']} draws; Pareto k "
        f"{'-' if k is None else f'{k:.2f}'}, effective draws {out['effective_draws']:.0f}. "
        + out["message"]
        + ".",
    ]
    return "\n".join(lines)


@app.command()
@reports_errors
def report(
    forecast: ForecastOpt = None,
    outputs_dir: OutputsDirOpt = None,
    out: OutDirOpt = None,
    accelerator: Annotated[
        list[str] | None,
        typer.Option(
            "--accelerator",
            "-a",
            help="Only these accelerators in the per-accelerator table (default: all). Repeatable.",
        ),
    ] = None,
) -> None:
    """Write report.html (self-contained) and report.md: headline, charts, per-accelerator
    walls (runs the plan search, the slow part), trend fits, changes, provenance."""
    # why here: matplotlib and the report modules load only when a report is written
    from forecast.report import write_report_files

    written = write_report_files(
        forecast_path(forecast, outputs_dir),
        out,
        accelerators=accelerator or True,
        curve_accelerators=accelerator or None,
    )
    typer.echo(f"wrote {written['report_html']}")
    typer.echo(f"wrote {written['report_md']}")


@app.command()
@reports_errors
def deck(
    forecast: ForecastOpt = None, outputs_dir: OutputsDirOpt = None, out: OutDirOpt = None
) -> None:
    """Write deck.pptx: the answer, fan chart, scenarios, uncertainty drivers, assumptions."""
    # why here: matplotlib and the report modules load only when a report is written
    from forecast.report import write_deck_file

    typer.echo(f"wrote {write_deck_file(forecast_path(forecast, outputs_dir), out)}")
