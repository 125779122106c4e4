"""Every plain-text table and summary line the commands print (numbers via forecast.queries.formatting).

Each function returns text and prints nothing; the commands echo it.  JSON output never goes
through here: it carries plain floats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from forecast.queries.analyses import frozen_summary, same_data_note, same_data_origins
from forecast.queries.formatting import (
    fmt_count,
    fmt_days,
    fmt_flop,
    fmt_interval,
    fmt_log10_flop,
    fmt_multiplier,
    fmt_pct,
    fmt_year,
    sci,
)
from forecast.queries.posterior_walls import SEARCH_LOG10_FLOP_RANGE, wall_cell, wall_log10_flop


def render(
    header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()
) -> list[str]:
    """Aligned columns: the header, a rule of dashes, then the rows (columns in ``right``
    right-aligned, the others left-aligned)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


# ----------------------------------------------------------------------------- walls


def _count_cell(plan: dict[str, Any], key: str) -> str:
    """A plan's count: whole numbers (realistic plans) with separators, continuous ones (the
    paper's relaxation) as the plan uses them."""
    if not plan:
        return "-"
    value = plan[key]
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.1f}" if key == "microbatches" else sci(value)


def _footnoted(record: dict[str, Any], footnotes: list[tuple[str, list[str]]]) -> str:
    """A record's accelerator name, with a footnote number when gaps were filled (appended to
    ``footnotes``)."""
    name = record["accelerator"]
    if record["assumptions"]:
        footnotes.append((name, record["assumptions"]))
        name += f" [{len(footnotes)}]"
    return name


def walls_table(rows: list[dict[str, Any]], duration_days: float, precision: str) -> str:
    """``wallcast walls``: one line per accelerator (records of :func:`forecast.analyses.accelerator_walls.walls_records`),
    with footnotes for gap-filled figures."""
    if rows and rows[0].get("assumptions_source") == "forecast":
        return _forecast_walls_table(rows, duration_days, precision)
    launchable = bool(rows) and rows[0].get("regime") == "realistic"
    header = ["accelerator", "max util", "data-movement wall", "latency wall", "tp", "layout"]
    header += ["pp", "microbatches", "dp", "accelerators"]
    if launchable:
        header += ["cp", "seqs/microbatch", "interleave", "recompute"]
    table: list[list[str]] = []
    footnotes: list[tuple[str, list[str]]] = []
    for r in rows:
        name = _footnoted(r, footnotes)
        p = r["plan_at_wall"] or {}
        table.append(
            [
                name,
                f"{r['max_utilization']:.2f}",
                fmt_log10_flop(wall_log10_flop(r, "data_movement"), SEARCH_LOG10_FLOP_RANGE),
                fmt_log10_flop(wall_log10_flop(r, "latency"), SEARCH_LOG10_FLOP_RANGE),
                str(p.get("tensor_parallel", "-")),
                str(p.get("tensor_parallel_layout", "-")),
                str(p.get("pipeline_parallel", "-")),
                _count_cell(p, "microbatches"),
                _count_cell(p, "data_parallel"),
                _count_cell(p, "accelerators"),
            ]
        )
        if launchable:
            table[-1] += [
                str(p.get("context_parallel", "-")),
                str(p.get("microbatch_sequences", "-")),
                str(p.get("virtual_stages", "-")),
                ("yes" if p.get("recompute") else "no") if p else "-",
            ]
    regime = rows[0].get("regime", "paper") if rows else "paper"
    lines = [
        f"Walls of a {duration_days:g}-day run at {precision}, {regime} plans, at the paper's fixed "
        "assumptions, not the forecast's fitted inputs (training compute in FLOP; plan = best "
        "plan at the data-movement wall)",
        *render(header, table, right=(1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12)),
    ]
    if rows and rows[0].get("regime_note"):
        lines.append(f"\n{rows[0]['regime_note']}.")
    if rows:
        lines.append(
            "\ndata-movement wall: largest compute whose best plan keeps utilization >= "
            f"{fmt_pct(rows[0]['utilization_threshold'])} of max util; "
            "latency wall: largest compute any plan finishes in time."
        )
    lines += [f"[{i}] {name}: " + "; ".join(n) for i, (name, n) in enumerate(footnotes, start=1)]
    return "\n".join(lines)


def _forecast_walls_table(rows: list[dict[str, Any]], duration_days: float, precision: str) -> str:
    """``wallcast walls`` over a forecast's posterior draws: median and 80 % interval."""
    header = ["accelerator", "max util", "data-movement wall", "latency wall"]
    table: list[list[str]] = []
    footnotes: list[tuple[str, list[str]]] = []
    for r in rows:
        name = _footnoted(r, footnotes)
        lo, hi = r["max_utilization_interval"]
        table.append(
            [
                name,
                f"{r['max_utilization']:.2f} ({lo:.2f} – {hi:.2f})",
                wall_cell(r, "data_movement"),
                wall_cell(r, "latency"),
            ]
        )
    first = rows[0]
    lines = [
        f"Walls of a {duration_days:g}-day run at {precision}, {first['regime']} plans: median "
        f"(80% interval) over {first['draws']} posterior draws of forecast "
        f"{first['forecast_id']} ({first['scenario']} scenario); training compute in FLOP",
        *render(header, table, right=(1, 2, 3)),
        f"\n{first['regime_note']}.",
        "\ndata-movement wall: largest compute whose best plan keeps utilization >= "
        f"{fmt_pct(first['utilization_threshold'])} of max util; "
        "latency wall: largest compute any plan finishes in time.",
        "--assumptions paper: the paper's fixed assumptions instead, one value each, with the "
        "best plan at the wall.",
    ]
    lines += [f"[{i}] {name}: " + "; ".join(n) for i, (name, n) in enumerate(footnotes, start=1)]
    return "\n".join(lines)


def latency_wall_text(
    t_layer_us: float,
    batch_tokens: float,
    duration_days: float,
    layer_coef: float,
    layer_exponent: float,
    params: float,
    flop: float,
    *,
    batch_exponent: float,
    batch_ref_params: float,
    wall_batch: float | None,
) -> str:
    """``wallcast latency-wall``: the closed form's inputs and its numbers."""
    if batch_exponent == 0.0:
        batch = f"B = {sci(batch_tokens, 2)} tokens (fixed)"
    else:
        batch = (
            f"B = {sci(batch_tokens, 2)}·(N/{sci(batch_ref_params, 2)})^{batch_exponent:g} tokens"
        )
    head = (
        f"Latency wall (t_L = {t_layer_us:g} µs/layer, {batch}, "
        f"T = {duration_days:g} days, L = {layer_coef:g}·N^{layer_exponent:g}):"
    )
    if wall_batch is None:
        return "\n".join(
            [head, "  no latency wall: the batch grows at least as fast as the serial work"]
        )
    lines = [
        head,
        f"  largest model:     {sci(params, 2)} parameters",
        f"  training compute:  {sci(flop, 2)} FLOP",
    ]
    if batch_exponent != 0.0:
        lines.append(f"  batch at the wall: {sci(wall_batch, 2)} tokens")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- plan

_PARTS = (
    ("compute", "compute"),
    ("hbm", "HBM"),
    ("tensor", "tensor-parallel"),
    ("context", "context-parallel"),
    ("pipeline", "pipeline sends"),
    ("latency", "latency"),
)


def _gb(x: float) -> str:
    return f"{x / 1e9:.1f} GB"


def _seconds(x: float) -> str:
    if x >= 1.0:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.1f} ms"
    return f"{x * 1e6:.0f} µs"


def _per_rank(experts: int, ep: int) -> str:
    n = experts // max(ep, 1)
    return f"{n} expert{'s' if n != 1 else ''} per rank"


def plan_text(r: dict[str, Any]) -> str:
    """``wallcast plan``: one evaluated plan (a record of
    :func:`forecast.analyses.accelerator_walls.plan_record`)."""
    m, p = r["model"], r["plan"]
    paper = r.get("regime") == "paper"
    experts = r.get("moe_experts", 1)
    stage = r["layers_per_stage"]
    lines = [
        f"{r['accelerator']}, {sci(r['training_flop'])} FLOP in {r['duration_days']:g} days "
        f"({r['precision'].upper()})"
        + (", the paper's step model (L / pp layers per stage)" if paper else ""),
        f"  model: {fmt_count(m['params'])} parameters, {m['layers']} layers, d_model "
        f"{m['d_model']:,.0f}, {m['heads']} heads ({m['kv_heads']} K/V), {fmt_count(m['tokens'])} "
        f"tokens; the critical batch allows {fmt_count(m['global_batch_tokens'])} tokens"
        + (f"; {experts} experts, {r.get('moe_active_experts', 1)} active" if experts > 1 else ""),
        f"  plan: tp {p['tp']} ({p['tensor_parallel_layout']}) x pp {p['pp']}"
        + (f" (interleaved x{p['virtual_stages']})" if p["virtual_stages"] > 1 else "")
        + f" x dp {p['dp']} x cp {p['cp']} = {p['accelerators']:,} accelerators"
        + (f"; ep {p['ep']} ({_per_rank(experts, p['ep'])})" if experts > 1 and p.get("ep") else "")
        + ("; full recompute" if p["recompute"] else ""),
        f"        {p['microbatches']:,} microbatches of {p['microbatch_sequences']} x "
        f"{p['sequence_length']:,} tokens per replica and step"
        + (f" ({p['microbatch_tokens']:,.0f} per context-parallel rank)" if p["cp"] > 1 else "")
        + f"; batch {fmt_count(r['global_batch_tokens'])} tokens, "
        + (f"{stage:.3g} layers per stage" if paper else f"{stage} layers on the slowest stage"),
    ]
    if r["feasible"]:
        lines.append("  feasible: yes")
    else:
        lines.append("  feasible: no: " + "; ".join(r["reasons"]))
    if r["step_time_s"] is None:
        return "\n".join(lines)
    b = r["step_breakdown_s"]
    lines += [
        f"  utilization (MFU): {r['utilization']:.1%}",
        f"  step: {_seconds(r['step_time_s'])}; each layer bound by {r['bound_by']} "
        f"({_seconds(b['layer_time'])} per layer and microbatch)",
        "    busy per step: " + ", ".join(f"{label} {_seconds(b[key])}" for key, label in _PARTS),
        f"    then: bubble {_seconds(b['bubble'])}, data-parallel sync {_seconds(b['data_parallel'])}"
        f", optimizer {_seconds(b['optimizer'])}",
    ]
    mem = r["memory_bytes"]
    lines.append(
        f"  memory per accelerator: {_gb(mem['total'])} of {_gb(mem['usable'])} usable "
        f"(weights and gradients {_gb(mem['weights_and_gradients'])}, optimizer "
        f"{_gb(mem['optimizer'])}, activations {_gb(mem['activations'])})"
    )
    lines.append(f"  run: {r['steps']:,.0f} steps, {fmt_days(r['run_days'])}")
    return "\n".join(lines)


def runs_table(records: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    """``wallcast runs``: observed against predicted MFU of each published run on its own plan."""
    header = ["run", "accelerator", "tp x pp x dp x cp", "observed", "predicted", "ratio"]
    header += ["binds", "fits memory"]
    table, skipped = [], []
    for r in records:
        if r["skipped"]:
            skipped.append(f"  {r['run']}: {r['skipped']}")
            continue
        p = r["plan"]
        table.append(
            [
                r["run"],
                r["accelerator"],
                f"{p['tp']} x {p['pp']} x {p['dp']} x {p['cp']}",
                f"{r['observed_mfu']:.1%}",
                f"{r['predicted_mfu']:.1%}",
                f"{r['ratio']:.2f}",
                r["bound_by"],
                "yes" if r["fits_in_memory"] else "no",
            ]
        )
    lines = [
        "Published runs on their own plans: model FLOP utilization observed and predicted "
        "(the model's assumptions, nothing fitted)",
        *render(header, table, right=(3, 4, 5)),
    ]
    if summary.get("evaluated"):
        lines.append(
            f"\npredicted / observed: median {summary['median_ratio']:.2f}, range "
            f"{summary['min_ratio']:.2f}-{summary['max_ratio']:.2f}; {summary['within_1_5x']} of "
            f"{summary['evaluated']} within 1.5x"
        )
    if skipped:
        lines += ["not evaluated:", *skipped]
    return "\n".join(lines)


def loo_table(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    """``wallcast runs --loo``: each run's MFU predicted with the software efficiency fitted on
    the other runs (median and 80 % interval) against what it achieved."""
    header = ["run", "observed", "predicted (unfitted)", "held-out median", "80 % interval"]
    header += ["inside", "ratio"]
    table = [
        [
            r["run"],
            f"{r['observed_mfu']:.1%}",
            f"{r['predicted_mfu']:.1%}",
            f"{r['loo_median']:.1%}",
            f"{r['loo_low']:.1%}-{r['loo_high']:.1%}",
            "yes" if r["covered"] else "no",
            f"{r['loo_ratio']:.2f}",
        ]
        for r in rows
    ]
    return "\n".join(
        [
            "Leave one run out: each run's MFU predicted from its plan and the software efficiency "
            "fitted on the other runs (NUTS)",
            *render(header, table, right=(1, 2, 3, 6)),
            f"\n80 % intervals cover {summary['coverage_80']:.0%} of {summary['runs']} runs; "
            f"held-out median / observed within 1.5x for {summary['within_1_5x']} of "
            f"{summary['runs']} (median ratio {summary['median_loo_ratio']:.2f})",
        ]
    )


# ----------------------------------------------------------------------------- forecast


def summary_table(rows: list[dict]) -> str:
    """Median and interval of hit year and hit FLOP per scenario and wall
    (rows of :func:`forecast.queries.answers.summary_table`)."""
    pct = fmt_pct(rows[0]["year"]["prob"]) if rows else "80%"
    header = ["scenario", "wall", f"hit year (median, {pct})", f"hit FLOP (median, {pct})"]
    header.append("not hit")
    body = []
    for r in rows:
        y, f = r["year"], r["flop"]
        body.append(
            [
                r["scenario"],
                r["wall"],
                fmt_interval(fmt_year(y["median"]), fmt_year(y["lower"]), fmt_year(y["upper"])),
                fmt_interval(fmt_flop(f["median"]), fmt_flop(f["lower"]), fmt_flop(f["upper"])),
                fmt_pct(y["not_hit_fraction"]),
            ]
        )
    return "\n".join(render(header, body, right=(4,)))


def query_line(out: dict[str, Any]) -> str:
    """``wallcast query``: one sentence with the median and interval."""
    if out["what"] == "year":

        def fmt(v: float) -> str:
            return "not hit by the last year" if math.isinf(v) else fmt_year(v)
    else:

        def fmt(v: float) -> str:
            return fmt_flop(v) if math.isinf(v) else f"{fmt_flop(v)} FLOP"

    line = (
        f"{out['wall']} wall, {out['scenario']}: {out['what']} median {fmt(out['median'])}; "
        f"{fmt_pct(out['prob'])} interval {fmt(out['lower'])} - {fmt(out['upper'])}; "
        f"not hit by the last year in {fmt_pct(out['not_hit_fraction'])} of draws "
        f"(forecast {out['forecast_id']}, {out.get('regime', 'paper')} plans)"
    )
    if "paper_median" in out:  # the paper's idealized bound, on the same draws
        line += (
            f"\n  the paper's idealized plans: median {fmt(out['paper_median'])}; "
            f"{fmt_pct(out['prob'])} interval {fmt(out['paper_lower'])} - "
            f"{fmt(out['paper_upper'])}; not hit by the last year in "
            f"{fmt_pct(out['paper_not_hit_fraction'])} of the same draws"
        )
    return line


def cost_line(out: dict[str, Any]) -> str:
    """``wallcast query --what cost``: the cost multiplier, utilization and shortest run."""
    mult, days = fmt_multiplier, fmt_days
    p = fmt_pct(out["prob"])
    return (
        f"frontier run of {out['year']}, {out['scenario']}: cost multiplier median "
        f"{mult(out['median'])} ({p} interval {mult(out['lower'])} - {mult(out['upper'])}); "
        f"utilization median {fmt_pct(out['frontier_utilization_median'])} "
        f"({fmt_pct(out['frontier_utilization_lower'])} - "
        f"{fmt_pct(out['frontier_utilization_upper'])}); shortest feasible run median "
        f"{days(out['min_run_days_median'])} ({days(out['min_run_days_lower'])} - "
        f"{days(out['min_run_days_upper'])}); infeasible in "
        f"{fmt_pct(out['infeasible_fraction'])} of draws (forecast {out['forecast_id']})"
    )


# ----------------------------------------------------------------------------- analyses


def _ci(value: float, ci: Sequence[float]) -> str:
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def sensitivity_table(result: Any, rows: list[dict], top: int, header_line: str) -> str:
    """``wallcast sensitivity``: the ``top`` inputs per target with first-order and total
    indices (95% bootstrap intervals) and the tornado."""
    lines = [header_line]
    for t, target in enumerate(result.targets):
        unit = "year" if target.endswith("year") else "log10 FLOP"
        lines.append(
            f"\n{target} (all medians: {result.baseline[t]:.2f}; "
            f"not hit, capped: {fmt_pct(result.capped_fraction[t])})"
        )
        body = [
            [
                str(r["rank"]),
                r["input"],
                _ci(r["first_order"], r["first_order_ci"]),
                _ci(r["total"], r["total_ci"]),
                f"{r['tornado_low']:.2f} -> {r['tornado_high']:.2f}",
            ]
            for r in rows
            if r["target"] == target
        ][:top]
        header = ["rank", "input", "first order", "total", f"tornado p10 -> p90 ({unit})"]
        lines += render(header, body, right=(0, 2, 3))
    return "\n".join(lines)


def comparison_table(rows: list[dict], top: int) -> str:
    """``wallcast sensitivity --compare-prior``: total index per input, priors only -> the
    forecast's posterior, the ``top`` inputs of the posterior ranking per target."""
    lines = [
        "Before -> after: total Sobol index [95%], every input from its prior -> fitted "
        "inputs from the posterior (same N and seed)"
    ]
    for target in dict.fromkeys(r["target"] for r in rows):
        lines.append(f"\n{target}")
        body = [
            [
                "-" if r["rank_prior"] is None else str(r["rank_prior"]),
                str(r["rank_posterior"]),
                r["input"],
                r["kind"],
                _ci(r["total_prior"], r["total_prior_ci"]),
                _ci(r["total_posterior"], r["total_posterior_ci"]),
            ]
            for r in rows
            if r["target"] == target
        ][:top]
        header = ["rank before", "after", "input", "after from", "total before", "total after"]
        lines += render(header, body, right=(0, 1, 4, 5))
    return "\n".join(lines)


def _pct_or_dash(v: float | None) -> str:
    return "-" if v is None else fmt_pct(v)


def backtest_table(rows: list[dict], header_line: str) -> str:
    """``wallcast backtest``: coverage of central predictive intervals per origin and metric."""
    header = ["origin", "metric", "train", "held out", "50%", "80%", "95%", "log score"]
    header.append("r-hat max")
    body = [
        [
            str(r["origin"]),
            r["metric"],
            str(r["n_train"]),
            str(r["n_held_out"]),
            _pct_or_dash(r["coverage_50"]),
            _pct_or_dash(r["coverage_80"]),
            _pct_or_dash(r["coverage_95"]),
            "-" if r["log_score"] is None else f"{r['log_score']:.2f}",
            f"{r['rhat_max']:.3f}",
        ]
        for r in rows
    ]
    return "\n".join([header_line, *render(header, body, right=(0, 2, 3, 4, 5, 6, 7, 8))])


_BASIS_TEXT = {
    "posterior": "fitted inputs from the forecast's posterior",
    "prior": "every input from its prior",
}


def frontier_backtest_table(rows: list[dict], header_line: str) -> str:
    """``wallcast backtest``: the frontier-compute backtest per origin and pooled."""
    header = ["origin", "train", "from", "growth x/yr", "held out", "50%", "80%", "95%"]
    header += ["median error dex", "mean PIT", "r-hat max"]

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    body = [
        [
            r["origin"],
            str(r["n_train"]),
            num(r["train_start_year"], ".0f"),
            num(r["growth_median"], ".1f"),
            str(r["n_held_out"]),
            _pct_or_dash(r["coverage_50"]),
            _pct_or_dash(r["coverage_80"]),
            _pct_or_dash(r["coverage_95"]),
            num(r["median_error_dex"], "+.2f"),
            num(r["pit_mean"], ".2f"),
            num(r["rhat_max"], ".3f"),
        ]
        for r in rows
    ]
    return "\n".join([header_line, *render(header, body, right=tuple(range(1, 11)))])


def analysis_summary(analysis: Any) -> str:
    """``wallcast analyse``: the largest driver per target and the backtest's 80% coverage
    (``analysis`` is a :class:`forecast.jobs.analyse_job.Analysis`)."""
    lines = [
        f"Sensitivity: Sobol total-order indices ({_BASIS_TEXT[analysis.sensitivity.basis]}), "
        f"N = {analysis.samples} "
        f"({analysis.sensitivity_evaluations} evaluations, {analysis.sensitivity_seconds:.0f} s); "
        "largest per target:"
    ]
    body = [
        [f"  {r['target']}", r["input"], f"total {_ci(r['total'], r['total_ci'])}"]
        for r in analysis.top_drivers()
    ]
    lines += render(["  target", "input", "index"], body)[2:]
    lines.append(
        f"Backtest ({analysis.backtest_draws} draws per chain, "
        f"{analysis.backtest_seconds - analysis.backtest.frontier_seconds:.0f} s, data "
        f"{analysis.data_dir}): 80% interval covers"
    )
    for row in analysis.coverage():
        lines.append(
            f"  origin {row['origin']}: {_pct_or_dash(row['coverage_80'])} of "
            f"{row['n_held_out']} held-out values"
        )
    note = same_data_note(same_data_origins(analysis.backtest.dataset))
    if note:
        lines.append(f"  {note}")
    frontier = analysis.frontier_coverage()
    if frontier:
        lines.append(
            f"Frontier-compute backtest ({analysis.backtest.frontier_seconds:.0f} s): 80% interval "
            "covers"
        )
        for row in frontier:
            label = "pooled" if row["origin"] == "pooled" else f"origin {row['origin']}"
            lines.append(
                f"  {label}: {_pct_or_dash(row['coverage_80'])} of "
                f"{row['n_held_out']} held-out records, median error "
                f"{row['median_error_dex']:+.2f} dex"
            )
    if analysis.frozen is not None:
        ds = analysis.frozen.dataset
        dm = frozen_summary(ds, "data_movement")
        lines.append(
            f"Frozen hardware ({ds.attrs.get('accelerator')}, {analysis.frozen.seconds:.0f} s): "
            f"data-movement wall {fmt_flop(dm['wall_flop'])} FLOP, reached in "
            f"{fmt_year(dm['median'])} ({fmt_year(dm['lower'])} - {fmt_year(dm['upper'])})"
        )
    return "\n".join(lines)
