"""The planner's costs: energy, the power to provision and money of a planned run, per draw.

Per accelerator, its TDP and listed rental prices (``data/accelerator_costs.csv``); for a
frontier accelerator of a future year, the reference accelerator's FLOP/s per watt and rental
price per FLOP/s carried by the energy-efficiency and price-performance trends; the five cost
priors of ``priors/costs.toml``, drawn once per answer (seed :data:`COST_SEED`) and paired across
the accelerators compared.  The arithmetic is :mod:`forecast.model.run_cost`; the planner
(:mod:`forecast.analyses.planner`) calls :func:`cost_draws` and :func:`cost_fields`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from forecast.analyses.accelerator_walls import select_accelerators
from forecast.config.errors import WallcastError
from forecast.data.accelerator_costs import AcceleratorCosts, load_accelerator_costs
from forecast.data.hardware import Accelerator
from forecast.model import run_cost
from forecast.priors.costs import reference_accelerator
from forecast.priors.priorset import PriorSet

COST_SEED = 20241101  # the cost priors' draws: one fixed stream, so an answer is reproducible


class CostDraws:
    """The cost priors and the per-accelerator table, drawn once per answer (paired across the
    accelerators compared)."""

    def __init__(
        self,
        priors: PriorSet,
        table: dict[str, AcceleratorCosts],
        ref: Accelerator | None,
        n: int,
        missing: str = "",
    ):
        draws = priors.sample(n, seed=COST_SEED)
        self.server_ratio = draws["cost.server_watts_per_accelerator_watt"]
        self.average_fraction = draws["cost.average_power_fraction"]
        self.pue = draws["cost.power_usage_effectiveness"]
        self.efficiency_growth = draws["cost.energy_efficiency_growth_per_year"]
        self.price_growth = draws["cost.price_performance_growth_per_year"]
        self.price_u = np.random.default_rng(COST_SEED).random(n)
        self.table = table
        self.ref = ref
        self.ref_costs = None if ref is None else table.get(ref.name)
        self.missing = missing  # why the table is empty (no costs file in the data folder)

    def listed(self, name: str) -> tuple[Any, Any, dict[str, str]]:
        """TDP (W) and price draws (USD/h) of a table accelerator, None where not listed."""
        row = self.table.get(name)
        tdp = None if row is None else row.tdp_watts
        price = None
        if row is not None and row.price_low is not None and row.price_high is not None:
            price = run_cost.price_from_interval90(row.price_low, row.price_high, self.price_u)
        return (
            tdp,
            price,
            {
                "power": (
                    f"TDP {tdp:g} W (data/accelerator_costs.csv)"
                    if tdp is not None
                    else self.missing or "no TDP in the sources: energy not reported"
                ),
                "price": (
                    f"rental price listed {row.price_date}: {row.price_low:g}-{row.price_high:g} USD "
                    "per accelerator-hour (lowest and highest listing, read as a 90 % interval)"
                    if price is not None and row is not None
                    else self.missing or "no rental price in the sources: money not reported"
                ),
            },
        )

    def trend(self, flops_16bit: np.ndarray, year: float) -> tuple[Any, Any, dict[str, str]]:
        """TDP and price draws of a frontier accelerator of ``flops_16bit`` in ``year``."""
        ref, rc = self.ref, self.ref_costs
        tdp = price = None
        if ref is None or rc is None:
            why = self.missing or "the reference accelerator of priors/costs.toml is not listed"
            return None, None, {"power": why, "price": why}
        if rc.tdp_watts is not None:
            tdp = run_cost.trend_power_w(
                flops_16bit,
                year,
                ref.flops_16bit,
                rc.tdp_watts,
                ref.release_year,
                self.efficiency_growth,
            )
        if rc.price_low is not None and rc.price_high is not None:
            ref_price = run_cost.price_from_interval90(rc.price_low, rc.price_high, self.price_u)
            price = run_cost.trend_price_usd_per_hour(
                flops_16bit, year, ref.flops_16bit, ref_price, rc.price_year, self.price_growth
            )
        return (
            tdp,
            price,
            {
                "power": (
                    f"{ref.name}'s peak FLOP/s per watt grown by cost.energy_efficiency_growth_per_year "
                    f"from {ref.release_year:.1f}"
                ),
                "price": (
                    f"{ref.name}'s listed rental price per peak FLOP/s ({rc.price_date}) "
                    "falling by cost.price_performance_growth_per_year"
                ),
            },
        )


def cost_draws(
    priors: PriorSet,
    accelerator_costs: str | Path | None,
    hardware: str | Path | None,
    n: int,
    *,
    frontier: bool,
) -> CostDraws:
    """The cost draws of an answer: a data folder without ``accelerator_costs.csv`` reports no
    energy or money (and says why) rather than failing the plan; the reference accelerator is
    looked up only for a frontier accelerator (a table without it costs nothing else)."""
    path = Path(accelerator_costs) if accelerator_costs is not None else None
    try:
        table = load_accelerator_costs(path)
        missing = ""
    except FileNotFoundError as exc:
        table, missing = {}, f"no accelerator_costs.csv in the data folder ({exc.filename})"
    ref = None
    if frontier and table:
        try:
            ref = select_accelerators([reference_accelerator(priors)], hardware)[0]
        except WallcastError:
            ref = None
    return CostDraws(priors, table, ref, n, missing)


def cost_fields(
    draws: dict[str, np.ndarray],
    costs: CostDraws,
    tdp: Any,
    price: Any,
    sources: dict[str, str],
    summary: Callable[[np.ndarray], dict[str, float | None]],
) -> dict[str, Any]:
    """Energy, power to provision and money over the feasible draws (None where the sources give
    no TDP or no price)."""
    ok, hours, n = draws["ok"], draws["hours"], draws["accelerators"]
    energy = power = money = None
    if tdp is not None:
        tdp = np.broadcast_to(np.asarray(tdp, float), hours.shape)
        energy = np.where(
            ok,
            run_cost.energy_mwh(hours, tdp, costs.server_ratio, costs.average_fraction, costs.pue),
            np.nan,
        )
        power = np.where(
            ok, run_cost.facility_power_mw(n, tdp, costs.server_ratio, costs.pue), np.nan
        )
    if price is not None:
        money = np.where(ok, run_cost.money_usd(hours, price), np.nan)
    none = {"median": None, "lower": None, "upper": None}
    return {
        "power_per_accelerator_w": none if tdp is None else summary(tdp),
        "price_usd_per_accelerator_hour": none if price is None else summary(price),
        "energy_mwh": none if energy is None else summary(energy),
        "facility_power_mw": none if power is None else summary(power),
        "money_usd": none if money is None else summary(money),
        "cost_sources": sources,
    }
