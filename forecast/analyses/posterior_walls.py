"""Today's accelerators over a forecast's posterior inputs: walls and utilization curves per draw.

The forecast's walls move with the frontier accelerator of each year; a planner also asks about
the accelerators of ``data/hardware.csv`` as they are.  Their walls depend on the same scaling and
training inputs the forecast fits (maximum utilization, batch and depth laws, collective
efficiency, latencies), so they are computed over the forecast's own draws of those inputs: the
propagated inputs of one scenario (group ``forecast_inputs``), with latencies at their
:data:`~forecast.config.constants.REFERENCE_YEAR` values (nothing improves: the hardware is
today's) and the run's duration and precision as asked.  One walls search per draw, on the
vectorized fast path of the forecast's plan regime.

:func:`accelerator_walls_dataset` builds the published group ``accelerator_walls``: both walls
and the small-scale maximum utilization per (accelerator, sample), and the best utilization per
(curve accelerator, curve sample, budget) for the report's chart.  Every surface that shows an
accelerator's walls (``wallcast walls``, ``/v1/walls``, ``/v1/curve``, the report, the deck,
the dashboard, the frozen-hardware reading) reads these draws
(:mod:`forecast.queries.posterior_walls`), so one accelerator has one wall everywhere.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from forecast.config import paths
from forecast.config.constants import REFERENCE_YEAR
from forecast.config.errors import UnknownAcceleratorError
from forecast.config.runtime import init_jax
from forecast.data.hardware import Accelerator, data_hash, get_accelerator, load_hardware
from forecast.inference.propagate import assumptions_from_inputs
from forecast.model import accelerators as acc_model
from forecast.model.cost import best_utilization
from forecast.model.fast import fast_walls
from forecast.model.params import SECONDS_PER_DAY, Assumptions, Hardware
from forecast.model.realistic_fast import fast_realistic_curves, fast_realistic_walls
from forecast.model.search import UTILIZATION_THRESHOLD
from forecast.queries.posterior_walls import CURVE_ACCELERATORS
from forecast.stats.sequence_length import SEQUENCE_REFERENCE_YEAR
from forecast.store import recorded_data_dir

GROUP = "accelerator_walls"
#: The scenario whose inputs the group is computed over (the forecast's headline scenario).
DEFAULT_SCENARIO = "baseline"
#: Draws per utilization curve (evenly thinned from the propagated draws).
CURVE_SAMPLES = 100
#: Draws per accelerator (evenly thinned from the propagated draws): the median's Monte Carlo
#: error is ~0.04 dex for a wall whose draws spread 0.7 dex (standard deviation).
SAMPLES = 500
#: Realistic plans cost ~40x the paper's per draw: at most this many draws per accelerator.
REALISTIC_SAMPLES = 100
CURVE_LOG10_FLOP_RANGE = (22.0, 33.0)
CURVE_STEP_LOG10 = 0.1
WALLS = ("data_movement", "latency")


def input_draws(
    inputs: xr.Dataset, samples: int | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Prior key -> draws (flattened chain x draw) of one scenario's ``forecast_inputs``, evenly
    thinned to at most ``samples`` (None: all), and the flat indices kept."""
    n = int(np.prod([inputs.sizes[d] for d in ("chain", "draw")]))
    keep = thin_indices(n, samples)
    out = {
        str(name).replace("__", "."): np.asarray(
            var.transpose("chain", "draw").values, dtype=float
        ).reshape(-1)[keep]
        for name, var in inputs.data_vars.items()
    }
    return out, keep


def thin_indices(n: int, samples: int | None) -> np.ndarray:
    """``samples`` evenly spaced indices of ``range(n)`` (all of them when ``samples`` is None or
    at least ``n``)."""
    if samples is None or samples >= n:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, int(samples)).round().astype(int))


def today_assumptions(
    inputs: Mapping[str, np.ndarray],
    *,
    duration_days: float,
    bytes_per_number: float,
    moe_experts: float | None = None,
    moe_active_experts: float | None = None,
    sequence_length: np.ndarray | None = None,
    year: float = REFERENCE_YEAR,
) -> Assumptions:
    """The model's assumptions per draw: the forecast's inputs mapped as propagation maps them
    (:func:`forecast.inference.propagate.assumptions_from_inputs`) in ``year`` (default
    :data:`REFERENCE_YEAR`: today's hardware, latencies as measured), with the run's duration
    and precision (and MoE settings, when given) fixed to the request's."""
    a = assumptions_from_inputs(dict(inputs), np.asarray([float(year)]))
    fields = {k: (np.asarray(v)[..., 0] if np.ndim(v) == 2 else v) for k, v in a._asdict().items()}
    n = np.asarray(fields["max_utilization"]).shape[0]
    fields["duration_s"] = np.full(n, float(duration_days) * SECONDS_PER_DAY)
    fields["bytes_per_number"] = np.full(n, float(bytes_per_number))
    if moe_experts is not None:
        fields["moe_experts"] = np.full(n, float(moe_experts))
    if moe_active_experts is not None:
        fields["moe_active_experts"] = np.full(n, float(moe_active_experts))
    if sequence_length is not None:
        fields["sequence_length"] = np.asarray(sequence_length, dtype=float)
    return Assumptions(**fields)


def wall_draws(
    hw: Hardware, a: Assumptions, regime: str = "paper"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data-movement wall, latency wall) in log10 FLOP and the small-scale maximum utilization,
    per draw of ``a`` (the fast path of the regime: :func:`forecast.model.fast.fast_walls` or
    :func:`forecast.model.realistic_fast.fast_realistic_walls`)."""
    init_jax()
    if regime == "paper":
        return fast_walls(hw, a, small_scale=True)
    if regime == "realistic":
        return fast_realistic_walls(hw, a)
    raise ValueError(f"regime must be 'paper' or 'realistic', got {regime!r}")


def utilization_draws(
    hw: Hardware, a: Assumptions, log10_flop: np.ndarray, regime: str = "paper"
) -> np.ndarray:
    """Best utilization (fraction of peak; 0 where no plan finishes in time) per (draw, budget):
    ``a``'s fields are (draw,), ``log10_flop`` (budget,)."""
    init_jax()
    if regime == "realistic":  # the grid's constants once a draw, the budgets side by side
        return np.atleast_2d(fast_realistic_curves(hw, a, log10_flop))
    a2 = Assumptions(*(np.asarray(v)[..., None] if np.ndim(v) == 1 else v for v in a))
    grid = np.asarray(log10_flop, dtype=float)[None, :]
    if regime == "paper":
        return np.asarray(best_utilization(hw, a2, grid))
    raise ValueError(f"regime must be 'paper' or 'realistic', got {regime!r}")


def sequence_draws(
    posterior: xr.Dataset | None, keep: np.ndarray, step: int, year: float = REFERENCE_YEAR
) -> np.ndarray | None:
    """Tokens per sequence in ``year`` per kept draw, from the posterior's sequence-length law
    (None without it).  ``keep``: flat indices of the propagated draws, which are the
    posterior's draws thinned by ``step`` within each chain."""
    if posterior is None or "log10_sequence_2024" not in posterior:
        return None
    s0 = posterior["log10_sequence_2024"].transpose("chain", "draw").values[:, ::step]
    g = posterior["sequence_growth_dex_per_year"].transpose("chain", "draw").values[:, ::step]
    log10_seq = (s0 + g * (float(year) - SEQUENCE_REFERENCE_YEAR)).reshape(-1)
    return 10.0 ** log10_seq[keep]


def _walls_problem(
    inputs: xr.Dataset,
    accelerators: Sequence[Accelerator],
    *,
    duration_days: float,
    precision: str,
    regime: str,
    samples: int | None,
    posterior: xr.Dataset | None,
    thinning_step: int,
    moe_experts: int | None,
    moe_active_experts: int | None,
) -> tuple[Assumptions, np.ndarray, list[tuple[Accelerator, Hardware, list[str]]]]:
    """What :func:`accelerator_walls_dataset` searches: the assumptions per kept draw, the flat
    indices kept, and (accelerator, hardware, gap notes) of each accelerator with the precision."""
    if regime == "realistic" and (samples is None or samples > REALISTIC_SAMPLES):
        samples = REALISTIC_SAMPLES
    draws, keep = input_draws(inputs, samples)
    seq = sequence_draws(posterior, keep, thinning_step) if regime == "realistic" else None
    a = today_assumptions(
        draws,
        duration_days=duration_days,
        bytes_per_number=acc_model.bytes_per_number(precision),
        moe_experts=moe_experts,
        moe_active_experts=moe_active_experts,
        sequence_length=seq,
    )
    chips = []
    for acc in accelerators:
        try:
            hw, gaps = acc_model.hardware_from_accelerator(acc, precision)
        except acc_model.PrecisionUnavailableError:
            continue
        chips.append((acc, hw, gaps))
    return a, keep, chips


def accelerator_walls_digest(
    inputs: xr.Dataset,
    accelerators: Sequence[Accelerator],
    *,
    curve_names: Sequence[str] = (),
    duration_days: float = 90.0,
    precision: str = "bf16",
    regime: str = "paper",
    samples: int | None = SAMPLES,
    curve_samples: int = CURVE_SAMPLES,
    posterior: xr.Dataset | None = None,
    thinning_step: int = 1,
    scenario: str = DEFAULT_SCENARIO,
    attrs: Mapping[str, Any] | None = None,
    moe_experts: int | None = None,
    moe_active_experts: int | None = None,
) -> str:
    """SHA-256 of everything :func:`accelerator_walls_dataset` computes its group from, given the
    same arguments (less the code, which a caller adds): the assumptions of every kept draw, the
    draws kept, each accelerator's name, hardware and gap notes, the curves asked for, the regime
    and the attributes.  Two calls with one digest give one group, so a forecast whose inputs of
    these draws did not change (a what-if of the run's length, which these walls fix at
    ``duration_days``) reuses the walls instead of searching them again."""
    a, keep, chips = _walls_problem(
        inputs,
        accelerators,
        duration_days=duration_days,
        precision=precision,
        regime=regime,
        samples=samples,
        posterior=posterior,
        thinning_step=thinning_step,
        moe_experts=moe_experts,
        moe_active_experts=moe_active_experts,
    )
    digest = hashlib.sha256()
    for field, values in a._asdict().items():
        digest.update(field.encode())
        digest.update(np.ascontiguousarray(np.asarray(values, dtype=np.float64)).tobytes())
    digest.update(np.ascontiguousarray(keep, dtype=np.int64).tobytes())
    for acc, hw, gaps in chips:
        digest.update(json.dumps([acc.name, [float(v) for v in hw], list(gaps)]).encode())
    settings = {
        "curve_names": [str(n) for n in curve_names],
        "curve_samples": int(curve_samples),
        "regime": regime,
        "scenario": scenario,
        "duration_days": float(duration_days),
        "precision": precision,
        "attrs": {str(k): str(v) for k, v in dict(attrs or {}).items()},
    }
    digest.update(json.dumps(settings, sort_keys=True).encode())
    return digest.hexdigest()


def accelerator_walls_dataset(
    inputs: xr.Dataset,
    accelerators: Sequence[Accelerator],
    *,
    curve_names: Sequence[str] = (),
    duration_days: float = 90.0,
    precision: str = "bf16",
    regime: str = "paper",
    samples: int | None = SAMPLES,
    curve_samples: int = CURVE_SAMPLES,
    posterior: xr.Dataset | None = None,
    thinning_step: int = 1,
    scenario: str = DEFAULT_SCENARIO,
    attrs: Mapping[str, Any] | None = None,
    moe_experts: int | None = None,
    moe_active_experts: int | None = None,
) -> xr.Dataset:
    """The group ``accelerator_walls`` over one scenario's ``forecast_inputs`` (dims chain, draw).

    Variables: ``wall_log10_flop`` (accelerator, sample, wall; +inf beyond 1e40 FLOP, -inf below
    1e20), ``max_utilization`` (accelerator, sample), ``curve_utilization`` (curve_accelerator,
    curve_sample, log10_flop; 0 where no plan finishes in time), and ``sample_index``: the flat
    (chain x draw) index of ``forecast_inputs`` each sample is (so a reader can pair a sample
    with the forecast's other draws).  ``samples``: draws per accelerator (None: all; the
    realistic regime at most :data:`REALISTIC_SAMPLES`).  Accelerators without the precision
    (no FP8 figure) are left out.  ``moe_experts`` / ``moe_active_experts``: fixed for every
    draw (None: the scenario's own draws; the attrs record their median).
    """

    a, keep, chips = _walls_problem(
        inputs,
        accelerators,
        duration_days=duration_days,
        precision=precision,
        regime=regime,
        samples=samples,
        posterior=posterior,
        thinning_step=thinning_step,
        moe_experts=moe_experts,
        moe_active_experts=moe_active_experts,
    )
    names: list[str] = []
    walls: list[np.ndarray] = []
    u_max: list[np.ndarray] = []
    notes: list[str] = []
    hardware: dict[str, list[float]] = {f: [] for f in Hardware._fields}
    by_name = {}
    for acc, hw, gaps in chips:
        dm, lat, u = wall_draws(hw, a, regime)
        names.append(acc.name)
        walls.append(np.stack([np.asarray(dm), np.asarray(lat)], axis=-1))
        u_max.append(np.asarray(u))
        notes.append("; ".join(gaps))
        for f, v in hw._asdict().items():
            hardware[f].append(float(v))
        by_name[acc.name] = hw
    lo, hi = CURVE_LOG10_FLOP_RANGE
    grid = np.round(np.arange(lo, hi + 1e-9, CURVE_STEP_LOG10), 4)
    curve_keep = thin_indices(keep.size, curve_samples)
    a_curve = Assumptions(*(np.asarray(v)[curve_keep] if np.ndim(v) == 1 else v for v in a))
    curve_acc = [n for n in curve_names if n in by_name]
    curves = [utilization_draws(by_name[n], a_curve, grid, regime) for n in curve_acc]
    ds = xr.Dataset(
        {
            "wall_log10_flop": (("accelerator", "sample", "wall"), np.asarray(walls, dtype=float)),
            "max_utilization": (("accelerator", "sample"), np.asarray(u_max, dtype=float)),
            "sample_index": (("sample",), keep.astype(np.int64)),
            "gap_notes": (("accelerator",), np.asarray(notes, dtype=object).astype(str)),
            **{
                f"hardware_{f}": (("accelerator",), np.asarray(v, dtype=float))
                for f, v in hardware.items()
            },
            "curve_utilization": (
                ("curve_accelerator", "curve_sample", "log10_flop"),
                np.asarray(curves, dtype=float).reshape(len(curve_acc), curve_keep.size, grid.size),
            ),
            "curve_sample_index": (("curve_sample",), keep[curve_keep].astype(np.int64)),
        },
        coords={
            "accelerator": names,
            "wall": list(WALLS),
            "curve_accelerator": curve_acc,
            "log10_flop": grid,
        },
    )
    ds["wall_log10_flop"].attrs.update(
        units="log10 FLOP",
        long_name="largest training compute before the wall, per accelerator and posterior draw; "
        "+inf beyond 1e40 FLOP, -inf below 1e20",
    )
    ds["max_utilization"].attrs.update(
        units="1", long_name="small-scale maximum utilization (fraction of peak)"
    )
    ds["curve_utilization"].attrs.update(
        units="1",
        long_name="best utilization at each training compute; 0: no plan finishes in time",
    )
    ds.attrs.update(
        {
            "scenario": scenario,
            "duration_days": float(duration_days),
            "precision": precision,
            "regime": regime,
            "utilization_threshold": float(UTILIZATION_THRESHOLD),
            "reference_year": float(REFERENCE_YEAR),
            "draws": int(keep.size),
            "moe_experts": int(round(float(np.median(a.moe_experts)))),
            "moe_active_experts": int(round(float(np.median(a.moe_active_experts)))),
            "method": "walls of each accelerator per posterior draw of the forecast's propagated "
            f"inputs (scenario {scenario}), latencies at their {REFERENCE_YEAR:g} values, "
            f"{regime} plans (fast path)",
            **dict(attrs or {}),
        }
    )
    return ds


def accelerator_walls_for_forecast(
    tree: xr.DataTree,
    *,
    hardware: str | Path | None = None,
    names: Sequence[str] | None = None,
    curve_names: Sequence[str] = CURVE_ACCELERATORS,
    scenario: str | None = None,
    **kwargs: Any,
) -> xr.Dataset:
    """:func:`accelerator_walls_dataset` of a forecast tree (its ``forecast_inputs`` of
    ``scenario``, default the first, its regime and thinning), for the accelerators ``names``
    (full names; None: every one) of ``hardware`` (default the table in the forecast's data
    folder)."""

    attrs = dict(tree.attrs)
    table = Path(hardware) if hardware else paths.hardware_path(recorded_data_dir(attrs))
    df = load_hardware(table)
    accs = [get_accelerator(df, str(n)) for n in (names or df["name"].tolist())]
    curve_names = curve_accelerator_names(df, curve_names)
    fin = tree["forecast_inputs"].to_dataset()
    scenario = str(fin["scenario"].values[0]) if scenario is None else scenario
    posterior = tree["posterior"].to_dataset() if "posterior" in tree.children else None
    return accelerator_walls_dataset(
        fin.sel(scenario=scenario).drop_vars("scenario", errors="ignore"),
        accs,
        curve_names=curve_names,
        regime=str(kwargs.pop("regime", attrs.get("regime", "paper"))),
        posterior=posterior,
        thinning_step=int(attrs.get("propagation_thinning", 1)),
        scenario=scenario,
        attrs={"hardware_table_hash": data_hash(table), "forecast_id": str(attrs.get("id", ""))},
        **kwargs,
    )


def curve_accelerator_names(table: Any, wanted: Sequence[str] = CURVE_ACCELERATORS) -> list[str]:
    """Full names in ``table`` (a hardware DataFrame) of the ``wanted`` name parts; parts that
    match no row are skipped."""

    out = []
    for part in wanted:
        try:
            name = get_accelerator(table, part).name
        except UnknownAcceleratorError:
            continue
        if name not in out:
            out.append(name)
    return out
