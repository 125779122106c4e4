"""Option types shared by the commands, and the one set of refresh options.

An option that means the same thing in two commands is declared once here, with one name and one
help text.  Folders default to None everywhere: :mod:`forecast.config.paths` fills them (environment
overrides included), at one level.

``run``, ``ingest`` and ``serve`` all start a refresh of the forecast; their refresh options
(priors, scenarios, data and outputs folders, MCMC size, seed, year grid, retention, report) are
declared once, in :data:`REFRESH_PARAMETERS`, added to each command by :func:`with_refresh_options`
and handed to it as one :class:`RefreshOptions` object.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from forecast.config.settings import (
    DEFAULT_CHAINS,
    DEFAULT_DRAWS,
    DEFAULT_KEEP,
    DEFAULT_PROPAGATE_DRAWS,
    DEFAULT_SEED,
    MIN_WARMUP,
    RunSettings,
    forecast_years,
)


class Precision(StrEnum):
    bf16 = "bf16"
    fp8 = "fp8"


class Regime(StrEnum):
    paper = "paper"
    realistic = "realistic"


RegimeOpt = Annotated[
    Regime | None,
    typer.Option(
        "--regime",
        case_sensitive=False,
        help="paper: plans relaxed to continuous quantities (Erdil & Schneider-Joseph 2024); "
        "realistic: plans a run can launch (whole sequences or context parallelism, whole layers "
        "per stage, whole degrees). Default: the forecast's own regime over the forecast's "
        "inputs (realistic for a forecast of `wallcast run`); paper with --assumptions paper.",
    ),
]

RunRegimeOpt = Annotated[
    Regime,
    typer.Option(
        "--regime",
        case_sensitive=False,
        help="Plans the forecast's walls are searched over: realistic (plans a run can launch, "
        "with the paper's idealized walls beside them on the same draws) or paper (Erdil & "
        "Schneider-Joseph 2024's idealized plans alone, ~1/9 the time per draw).",
    ),
]


class AssumptionSource(StrEnum):
    forecast = "forecast"
    paper = "paper"


AssumptionsOpt = Annotated[
    AssumptionSource,
    typer.Option(
        "--assumptions",
        case_sensitive=False,
        help="forecast: over the published forecast's posterior inputs (median and 80% interval; "
        "the numbers the report, deck, API and dashboard show); paper: the paper's fixed "
        "assumptions (Erdil & Schneider-Joseph 2024), one value, for comparison.",
    ),
]


class Wall(StrEnum):
    data_movement = "data_movement"
    latency = "latency"


class What(StrEnum):
    year = "year"
    flop = "flop"
    cost = "cost"


class TaskRunnerKind(StrEnum):
    thread = "thread"
    dask = "dask"


# ----------------------------------------------------------------------------- walls

AcceleratorOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--accelerator",
        "-a",
        help="Accelerator name, exact or a unique part of it (e.g. H100, 'A100 SXM4 80GB'). Repeatable.",
    ),
]
DurationOpt = Annotated[
    float, typer.Option("--duration-days", help="Wall-clock length of the training run, days.")
]
PrecisionOpt = Annotated[
    Precision,
    typer.Option(
        "--precision",
        case_sensitive=False,
        help="Training precision: bf16 (2 bytes/number, dense 16-bit FLOP/s) or fp8 (1 byte, dense FP8 FLOP/s).",
    ),
]
MoeExpertsOpt = Annotated[
    int, typer.Option("--moe-experts", min=1, help="Experts per MoE layer (1 = dense model).")
]
MoeActiveOpt = Annotated[
    int, typer.Option("--moe-active", min=1, help="Experts active per token (top-k routing).")
]
HardwareOpt = Annotated[
    Path | None,
    typer.Option(
        "--hardware",
        exists=True,
        dir_okay=False,
        readable=True,
        help="Accelerator table (CSV, same columns as data/hardware.csv). Default: <data>/hardware.csv.",
    ),
]

# ----------------------------------------------------------------------------- common

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
SeedOpt = Annotated[
    int, typer.Option("--seed", help="Random seed (same seed, same inputs: identical results).")
]
PriorsOpt = Annotated[
    Path | None,
    typer.Option(
        "--priors", help="Prior file (TOML). Default: <priors>/baseline.toml (WALLCAST_PRIORS_DIR)."
    ),
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Folder with hardware.csv and frontier_runs.csv (landing folder: incoming/). "
        "Default: WALLCAST_DATA_DIR, else data/.",
    ),
]
OutputsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--outputs-dir",
        help="Outputs folder (forecasts/<id>/ and the 'latest' pointer). "
        "Default: WALLCAST_OUTPUTS_DIR, else outputs/.",
    ),
]
ForecastOpt = Annotated[
    Path | None,
    typer.Option(
        "--forecast",
        help="Forecast file or folder, or an outputs folder or its 'latest' pointer. "
        "Default: 'latest' of the outputs folder (WALLCAST_OUTPUTS_DIR, else outputs/).",
    ),
]
OutDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--out", help="Folder to write into; default: the forecast's folder.", file_okay=False
    ),
]
DrawsOpt = Annotated[int, typer.Option("--draws", min=50, help="Posterior draws per chain.")]
ChainsOpt = Annotated[int, typer.Option("--chains", min=1, help="MCMC chains.")]
WarmupOpt = Annotated[
    int | None,
    typer.Option(
        "--warmup",
        min=50,
        help=f"NUTS warm-up iterations per chain. Default: the draws, at least {MIN_WARMUP:,}.",
    ),
]
ScenarioOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--scenario",
        help="Scenario overlay: a name in <priors>/scenarios/ or a .toml path (repeatable). "
        "Default: all.",
    ),
]
WallYearStepOpt = Annotated[
    int,
    typer.Option(
        "--wall-year-step",
        min=1,
        help="Compute the walls every this many years and interpolate in between.",
    ),
]


# ----------------------------------------------------------------------------- refresh options


@dataclass(frozen=True)
class RefreshOptions:
    """What every command that refreshes the forecast (run, ingest, serve) is told."""

    priors: Path | None = None
    scenario: list[str] | None = None
    data_dir: Path | None = None
    outputs_dir: Path | None = None
    draws: int = DEFAULT_DRAWS
    warmup: int | None = None
    chains: int = DEFAULT_CHAINS
    seed: int = DEFAULT_SEED
    year_step: int = 1
    keep: int = DEFAULT_KEEP
    report: bool = True
    propagate_draws: int = DEFAULT_PROPAGATE_DRAWS
    regime: Regime = Regime.realistic

    def years(self) -> list[float] | None:
        """The output grid: every ``year_step``-th year of the default grid and its last year
        (None: every year, the default)."""
        return forecast_years(self.year_step)

    def settings(self, *, absolute: bool = False) -> RunSettings:
        """The run settings these options say; None where :mod:`forecast.config.paths` fills the
        default.  ``absolute``: resolve paths (deployments run in another process)."""

        def path(p: Path | None) -> str | None:
            return None if p is None else str(p.resolve() if absolute else p)

        def scenario(s: str) -> str:
            return str(Path(s).resolve()) if absolute and s.endswith(".toml") else s

        return RunSettings(
            priors=path(self.priors),
            scenarios=[scenario(s) for s in self.scenario] if self.scenario else None,
            data_dir=path(self.data_dir),
            outputs_dir=path(self.outputs_dir),
            chains=self.chains,
            draws=self.draws,
            warmup=self.warmup,
            seed=self.seed,
            years=self.years(),
            keep=self.keep,
            reports=self.report,
            propagate_draws=self.propagate_draws or None,
            regime=Regime(self.regime).value,
        )

    def flow_parameters(self, *, absolute: bool = False) -> dict[str, Any]:
        """Parameters of the ``refresh-forecast`` flow (:meth:`RunSettings.flow_parameters`)."""
        return self.settings(absolute=absolute).flow_parameters()


#: (name, annotation) of each refresh option; defaults come from :class:`RefreshOptions`.
REFRESH_PARAMETERS: tuple[tuple[str, Any], ...] = (
    ("priors", PriorsOpt),
    ("scenario", ScenarioOpt),
    ("data_dir", DataDirOpt),
    ("outputs_dir", OutputsDirOpt),
    ("draws", DrawsOpt),
    ("warmup", WarmupOpt),
    ("chains", ChainsOpt),
    ("seed", SeedOpt),
    (
        "year_step",
        Annotated[
            int,
            typer.Option(
                "--year-step",
                min=1,
                help="Years between output grid points (1: every year 2024..2045).",
            ),
        ],
    ),
    (
        "keep",
        Annotated[
            int,
            typer.Option(
                "--keep",
                min=1,
                help="Keep the newest N published forecasts (never deletes the one 'latest' names).",
            ),
        ],
    ),
    (
        "report",
        Annotated[
            bool,
            typer.Option(
                "--report/--no-report",
                help="Write the report and deck of a new forecast (and its link artifact).",
            ),
        ],
    ),
    (
        "propagate_draws",
        Annotated[
            int,
            typer.Option(
                "--propagate-draws",
                min=0,
                help="Posterior draws propagated per scenario, evenly thinned from "
                "chains x draws (0: all).",
            ),
        ],
    ),
    ("regime", RunRegimeOpt),
)
assert [n for n, _ in REFRESH_PARAMETERS] == [f.name for f in fields(RefreshOptions)]


def with_refresh_options(fn: Any) -> Any:
    """Add the refresh options to a command; it receives them as ``refresh: RefreshOptions``.

    Typer reads a command's options from its signature, so the wrapper's signature is the
    command's own (less ``refresh``) followed by :data:`REFRESH_PARAMETERS`.
    """
    own = inspect.signature(fn, eval_str=True)
    defaults = RefreshOptions()
    params = [p for p in own.parameters.values() if p.name != "refresh"]
    params += [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=getattr(defaults, name), annotation=ann
        )
        for name, ann in REFRESH_PARAMETERS
    ]
    names = [n for n, _ in REFRESH_PARAMETERS]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        refresh = RefreshOptions(**{n: kwargs.pop(n) for n in names if n in kwargs})
        return fn(*args, refresh=refresh, **kwargs)

    wrapper.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


ApiHostOpt = Annotated[
    str,
    typer.Option(
        envvar="WALLCAST_API_HOST", help="Address to listen on (0.0.0.0: every interface)."
    ),
]
