"""``wallcast walls``, ``wallcast latency-wall`` and ``wallcast curve``: the walls of accelerators.

``walls`` and ``curve`` call the walls service (:mod:`forecast.analyses.accelerator_walls`, shared with the report);
JAX and the model are imported inside the commands (``import forecast.cli`` stays light).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from forecast.cli.app import app, check_finite, check_positive, reports_errors
from forecast.cli.options import (
    AcceleratorOpt,
    AssumptionsOpt,
    AssumptionSource,
    DurationOpt,
    ForecastOpt,
    HardwareOpt,
    MoeActiveOpt,
    MoeExpertsOpt,
    Precision,
    PrecisionOpt,
    RegimeOpt,
)
from forecast.cli.tables import latency_wall_text, walls_table
from forecast.config.constants import SECONDS_PER_DAY

# ----------------------------------------------------------------------------- walls


@app.command()
@reports_errors
def walls(
    accelerator: AcceleratorOpt = None,
    duration_days: DurationOpt = 90.0,
    precision: PrecisionOpt = Precision.bf16,
    hardware: HardwareOpt = None,
    moe_experts: MoeExpertsOpt = 1,
    moe_active: MoeActiveOpt = 1,
    regime: RegimeOpt = None,
    assumptions: AssumptionsOpt = AssumptionSource.forecast,
    forecast: ForecastOpt = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print a JSON list instead of a table.")
    ] = False,
) -> None:
    """Data-movement and latency walls of each accelerator.

    Data-movement wall: the largest training compute whose best parallel plan keeps utilization
    at or above 80% of the accelerator's small-scale maximum. Latency wall: the largest compute
    any plan can finish within the run's duration.

    By default over the published forecast's posterior inputs (median and 80% interval; the
    report's, API's and dashboard's numbers: read from the forecast when it holds the request,
    else computed over its draws). --assumptions paper: the paper's fixed assumptions, one
    value each, with the best plan at the wall.
    """
    check_positive(duration_days, "--duration-days")
    if moe_active > moe_experts:
        raise typer.BadParameter(
            "--moe-active cannot exceed --moe-experts", param_hint="--moe-active"
        )
    settings = dict(
        duration_days=duration_days,
        precision=precision.value,
        moe_experts=moe_experts,
        moe_active_experts=moe_active,
        hardware=hardware,
        regime=None if regime is None else regime.value,
    )
    # why here: the walls service reads tables (pandas) and, for a search, imports JAX
    from forecast.analyses import accelerator_walls, forecast_walls

    paper_regime = settings["regime"] or "paper"
    if assumptions is AssumptionSource.forecast:  # the forecast's stored draws, else computed
        rows = forecast_walls.forecast_walls_records(forecast, accelerator, **settings)
    else:
        rows = accelerator_walls.walls_records(accelerator, **{**settings, "regime": paper_regime})
    if json_output:
        typer.echo(json.dumps(rows, indent=2, allow_nan=False))
        return

    typer.echo(walls_table(rows, duration_days, precision.value))


# ----------------------------------------------------------------------------- latency-wall


@app.command("latency-wall")
@reports_errors
def latency_wall(
    t_layer_us: Annotated[
        float,
        typer.Option("--t-layer-us", help="Minimum time per layer (forward + backward), µs."),
    ],
    batch_tokens: Annotated[
        float,
        typer.Option(
            "--batch-tokens",
            help="Batch, tokens per optimizer step, of a model of --batch-ref-params parameters.",
        ),
    ],
    duration_days: Annotated[
        float, typer.Option("--duration-days", help="Wall-clock length of the run, days.")
    ],
    layer_coef: Annotated[
        float, typer.Option("--layer-coef", help="Depth L = coef * N^exponent: coefficient.")
    ] = 0.088,
    layer_exponent: Annotated[
        float, typer.Option("--layer-exponent", help="Depth L = coef * N^exponent: exponent.")
    ] = 0.27,
    batch_exponent: Annotated[
        float,
        typer.Option(
            "--batch-exponent",
            help="Batch B = B0 (N / N0)^exponent, as the plan model grows it; 0 = a fixed batch "
            "(Sevilla et al.'s form).",
        ),
    ] = 0.36,
    batch_ref_params: Annotated[
        float,
        typer.Option("--batch-ref-params", help="N0: parameters at which the batch is B0."),
    ] = 5.6e11,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Closed-form latency wall of Sevilla et al. (2024), 'Can AI scaling continue through 2030?'.

    With Chinchilla scaling (D = 20 N tokens, C = 120 N^2 FLOP) and a batch that grows as
    B0 (N / N0)^exponent like the plan model's (0 = fixed), training fits in T only if
    T >= t_L * L * D / B, which bounds N and so C.
    """
    check_positive(t_layer_us, "--t-layer-us")
    check_positive(batch_tokens, "--batch-tokens")
    check_positive(duration_days, "--duration-days")
    check_positive(layer_coef, "--layer-coef")
    check_positive(batch_ref_params, "--batch-ref-params")
    check_finite(batch_exponent, "--batch-exponent")
    check_finite(layer_exponent, "--layer-exponent")

    # why here: the plan search imports JAX; reading commands must not
    from forecast.model.latency import latency_wall_flop, latency_wall_params

    args = (
        t_layer_us * 1e-6,
        batch_tokens,
        duration_days * SECONDS_PER_DAY,
        layer_coef,
        layer_exponent,
        20.0,
        batch_exponent,
        batch_ref_params,
    )
    params = float(latency_wall_params(*args))
    flop = float(latency_wall_flop(*args))
    wall_batch = (
        batch_tokens * (params / batch_ref_params) ** batch_exponent
        if math.isfinite(params)
        else None
    )
    if json_output:
        out = {
            "params": params if math.isfinite(params) else None,
            "flop": flop if math.isfinite(flop) else None,
            "batch_tokens_at_wall": wall_batch,
            "inputs": {
                "t_layer_s": t_layer_us * 1e-6,
                "batch_tokens": batch_tokens,
                "batch_exponent": batch_exponent,
                "batch_ref_params": batch_ref_params,
                "duration_days": duration_days,
                "layer_coef": layer_coef,
                "layer_exponent": layer_exponent,
                "tokens_per_param": 20.0,
            },
        }
        typer.echo(json.dumps(out, indent=2, allow_nan=False))
        return

    typer.echo(
        latency_wall_text(
            t_layer_us,
            batch_tokens,
            duration_days,
            layer_coef,
            layer_exponent,
            params,
            flop,
            batch_exponent=batch_exponent,
            batch_ref_params=batch_ref_params,
            wall_batch=wall_batch,
        )
    )


# ----------------------------------------------------------------------------- curve


@app.command()
@reports_errors
def curve(
    accelerator: Annotated[
        list[str],
        typer.Option(
            "--accelerator", "-a", help="Accelerator name (exact or a unique part). Repeatable."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output image (PNG).", dir_okay=False)],
    duration_days: DurationOpt = 90.0,
    precision: PrecisionOpt = Precision.bf16,
    hardware: HardwareOpt = None,
    regime: RegimeOpt = None,
    assumptions: AssumptionsOpt = AssumptionSource.forecast,
    forecast: ForecastOpt = None,
) -> None:
    """Plot best achievable utilization against training compute, with both walls marked.

    By default the median over the published forecast's posterior inputs with its 80% band;
    --assumptions paper: one curve at the paper's fixed assumptions."""
    check_positive(duration_days, "--duration-days")
    settings = dict(
        duration_days=duration_days,
        precision=precision.value,
        regime=None if regime is None else regime.value,
    )
    # why here: the walls service reads tables (pandas) and, for a search, imports JAX
    from forecast.analyses import accelerator_walls, forecast_walls

    names = [a.name for a in accelerator_walls.select_accelerators(accelerator, hardware)]
    if assumptions is AssumptionSource.forecast:
        curves = [
            forecast_walls.forecast_curve_record(forecast, n, hardware=hardware, **settings)
            for n in names
        ]
    else:
        paper = {**settings, "regime": settings["regime"] or "paper"}
        curves = [accelerator_walls.curve_record(n, hardware=hardware, **paper) for n in names]
    # why here: matplotlib and the report modules load only when a report is written
    from forecast.report.charts import utilization_chart

    fig = utilization_chart(curves, figsize=(9, 5.5))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=150)
    typer.echo(f"wrote {out}")
