"""The planner's cost priors (``priors/costs.toml``): what turns accelerator-hours into energy and money.

Five parameters, in the prior-file format of the model's priors (``priors/README.md``) but with
their own registry (:data:`COST_PARAMETERS`): the walls and the forecast never read them, so
they are not in the forecast's prior set, its hash or its fit.  ``[meta] reference_accelerator``
names the accelerator of ``data/accelerator_costs.csv`` whose power and price carry, by the two
trends, to a future frontier accelerator.
"""

from __future__ import annotations

from pathlib import Path

from forecast.config import paths
from forecast.priors.parsing import PriorError, Problem, loads
from forecast.priors.priorset import PriorSet
from forecast.priors.registry import ParameterSpec

COST_PRIORS_FILE = "costs.toml"

COST_PARAMETERS: dict[str, ParameterSpec] = {
    s.key: s
    for s in (
        ParameterSpec(
            "cost.server_watts_per_accelerator_watt",
            "x",
            "positive",
            "propagated",
            "server power (CPUs, memory, network, fans) per watt of accelerator TDP",
            label="Server power per accelerator watt",
            plausible=(1.0, 4.0),
        ),
        ParameterSpec(
            "cost.average_power_fraction",
            "fraction",
            "unit_interval",
            "propagated",
            "average power drawn during training as a fraction of server TDP",
            label="Average power fraction",
        ),
        ParameterSpec(
            "cost.power_usage_effectiveness",
            "x",
            "positive",
            "propagated",
            "data-centre power per watt of IT power (PUE)",
            label="Power usage effectiveness",
            plausible=(1.0, 3.0),
        ),
        ParameterSpec(
            "cost.energy_efficiency_growth_per_year",
            "x/yr",
            "positive",
            "propagated",
            "growth of peak FLOP/s per watt of the frontier accelerator",
            label="Energy efficiency growth",
            plausible=(1.0, 3.0),
        ),
        ParameterSpec(
            "cost.price_performance_growth_per_year",
            "x/yr",
            "positive",
            "propagated",
            "growth of peak FLOP/s per rental dollar",
            label="Price performance growth",
            plausible=(1.0, 3.0),
        ),
    )
}


def cost_priors_path(priors_folder: str | Path | None = None) -> Path:
    """``costs.toml`` of the priors folder (``WALLCAST_PRIORS_DIR`` honoured)."""
    return paths.priors_dir(priors_folder) / COST_PRIORS_FILE


def load_cost_priors(path: str | Path | None = None) -> PriorSet:
    """Read and validate the cost priors: every key of :data:`COST_PARAMETERS` and a
    ``[meta] reference_accelerator`` name are required; problems raise
    :class:`~forecast.priors.parsing.PriorError` naming the file, key and line."""
    p = Path(path) if path is not None else cost_priors_path()
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PriorError(p, [Problem(None, None, f"cannot read cost prior file: {e}")]) from e
    priors = loads(text, str(p), path=p, specs=COST_PARAMETERS)
    ref = priors.meta.get("reference_accelerator")
    if not isinstance(ref, str) or not ref.strip():
        raise PriorError(
            p, [Problem("meta", None, "[meta] reference_accelerator must name an accelerator")]
        )
    return priors


def reference_accelerator(priors: PriorSet) -> str:
    """The accelerator whose power and price the trends carry to a future frontier accelerator."""
    return str(priors.meta["reference_accelerator"]).strip()
