"""The report's table of the joint model's leave-one-out predictive checks
(``/predictive_checks``): per likelihood, the data it fits, how many rows, the share of held-out
rows inside the 50/80/95 % predictive intervals and the largest Pareto k."""

from __future__ import annotations

from forecast.queries.analyses import check_rows
from forecast.queries.formatting import fmt_pct
from forecast.queries.headline import Forecast
from forecast.report.fitted_inputs import data_words
from forecast.report.frontier import Block

CHECKS_NOTE = (
    "Held-out check of every likelihood (PSIS-LOO from the joint fit): the share of rows whose "
    "observed value falls inside the central interval of its leave-one-out predictive. A "
    "calibrated likelihood covers about the nominal share; rows with a Pareto k above 0.7 have "
    "an unreliable estimate."
)


def checks_blocks(fc: Forecast, blocks: list[Block]) -> None:
    """The table of ``/predictive_checks`` (nothing for a forecast without the group)."""
    ds = fc.group("predictive_checks")
    if ds is None or "loo_coverage" not in ds:
        return

    blocks.append(Block("p", CHECKS_NOTE))
    rows = []
    for r in check_rows(ds):
        rows.append(
            [
                r["likelihood"].replace("_", " "),
                data_words(r["table"]),
                str(r["rows"]),
                fmt_pct(r["coverage_50"]),
                fmt_pct(r["coverage_80"]),
                fmt_pct(r["coverage_95"]),
                f"{r['pareto_k_max']:.2f}"
                + (f" ({r['n_high_pareto_k']} above 0.7)" if r["n_high_pareto_k"] else ""),
            ]
        )
    header = ["likelihood", "data", "rows", "50%", "80%", "95%", "largest Pareto k"]
    blocks.append(Block("table", header=header, rows=rows))
