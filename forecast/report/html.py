"""``report.html`` (self-contained: charts as data: URIs) and ``report.md`` of a forecast.

Both are rendered from one list of blocks, so they carry the same numbers.  The Markdown file
refers to the charts as PNG files in ``report_files/`` next to it.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from forecast.queries.formatting import fmt_flop, fmt_pct, fmt_year
from forecast.queries.headline import (
    PROB,
    Forecast,
    assumptions,
    has_paper_beside,
    headline,
    paper_beside_cells,
    paper_beside_rows,
    paper_beside_sentence,
    provenance,
    regime_sentence,
    summary_rows,
    summary_table_cells,
    wall_label,
)
from forecast.report import charts
from forecast.report.bibliography import link_cites, load_sources, reference_blocks
from forecast.report.changes import Changes, change_sentences
from forecast.report.checks import checks_blocks
from forecast.report.decisions import decision_blocks
from forecast.report.drivers import (
    backtest_sentence,
    backtest_summary,
    backtest_table_cells,
    sensitivity_regime_note,
    sobol_before_after,
    sobol_drivers,
    sobol_sentences,
    tornado_table_cells,
    uncertainty_drivers,
)
from forecast.report.executive import (
    SIGNPOST_HEADER,
    cost_summary,
    executive_summary,
    has_cost,
    signpost_method,
    signposts,
)
from forecast.report.fitted_inputs import (
    PROVENANCE_HEADER,
    assumption_count_sentence,
    fitted_inputs,
    input_cell,
    provenance_counts,
    provenance_rows,
    scenario_overrides,
)
from forecast.report.frontier import Block, frontier_backtest_blocks, frozen_blocks
from forecast.report.glossary import glossary_blocks
from forecast.report.hardware_walls import (
    AcceleratorWalls,
    accelerator_section_text,
    accelerator_table_cells,
    utilization_caption,
)
from forecast.report.method import method_blocks
from forecast.report.not_modelled import not_modelled
from forecast.report.standalone import stand_alone_blocks

FILES_DIR = "report_files"
BACKTEST_HEADING = "Can the trends be trusted? (backtest)"
EVIDENCE_HEADING = "What the data says"
PROVENANCE_HEADING = "Where each input comes from"
NO_EVIDENCE = (
    "Not in this forecast: it has no prior and posterior of the scaling and system inputs "
    "(forecasts made before the joint model drew them from their priors alone)."
)
NO_PROVENANCE = (
    "Not recorded in this forecast (no `input_provenance`): see the assumptions below for "
    "each prior and its source."
)


def report_blocks(
    fc: Forecast,
    changes: Changes,
    accelerators: AcceleratorWalls | None = None,
    figures: dict[str, Figure] | None = None,
) -> list[Block]:
    """The report as blocks; the figures made are put into ``figures`` (key -> Figure)."""
    figures = {} if figures is None else figures
    last = fc.last_year
    h = headline(fc)
    rows = summary_rows(fc.forecast)
    header, body = summary_table_cells(rows, last)
    summary = executive_summary(fc)
    blocks: list[Block] = [
        Block("h1", f"Wallcast forecast {fc.id}"),
        Block("h2", "Executive summary"),
        Block("lead", " ".join(summary.sentences)),
        Block("p", " ".join(filter(None, [regime_sentence(fc.regime), paper_beside_sentence(fc)]))),
    ]

    def figure(key: str, fig: Figure, caption: str) -> None:
        figures[key] = fig
        blocks.append(Block("figure", caption, key=key, png=charts.to_png(fig), figure=fig))

    def add_blocks(made: list[Block]) -> None:  # blocks of a section module, with their figures
        figures.update({b.key: b.figure for b in made if b.kind == "figure"})
        blocks.extend(made)

    posts = signposts(fc, h.wall)
    if posts:
        blocks.append(Block("h2", "Signposts: what to watch"))
        blocks.append(Block("p", signpost_method(posts, h.wall)))
        blocks.append(
            Block("table", header=list(SIGNPOST_HEADER), rows=[sp.cells() for sp in posts])
        )
    blocks.extend(decision_blocks(fc))

    blocks.append(Block("h2", "Frontier training compute against the walls"))
    blocks.append(Block("p", " ".join([h.sentence, h.detail, *h.others])))
    figure(
        "fan",
        charts.fan_chart(fc),
        "Frontier training compute by year (blue: median with 50/80/95% bands) against the "
        f"walls of the frontier accelerator of each year (median and 80% band), "
        f"{fc.scenarios[0]} scenario.",
    )

    if has_cost(fc):
        c = cost_summary(fc)
        blocks.append(Block("h2", "What the wall costs"))
        blocks.append(
            Block(
                "p",
                "Cost multiplier: the small-scale maximum utilization over the best utilization "
                "the frontier run of the year reaches on that year's frontier accelerator, i.e. "
                "how many times more accelerator-time each FLOP costs (1: no penalty). "
                f"{c.year} frontier run, {c.scenario}: median "
                f"{c.figures['multiplier_median'].text} ({fmt_pct(PROB)}: "
                f"{c.figures['multiplier_lower'].text} to {c.figures['multiplier_upper'].text}), "
                f"utilization {c.figures['utilization_median'].text}, infeasible (past the "
                f"latency wall) in {c.figures['infeasible_fraction'].text} of draws; the shortest "
                f"run that could train it: {c.figures['min_run_days_median'].text} (median). "
                f"Same numbers as `wallcast query --what cost --year {c.year}`.",
            )
        )
        figure(
            "cost",
            charts.cost_chart(fc),
            f"Cost multiplier of the frontier run by year, {fc.scenarios[0]} scenario (median, "
            f"50% and 80% bands; clipped at {charts.COST_CAP:g}x: the bands reach infinity once "
            "runs pass the latency wall) and the share of draws in which the run is infeasible "
            "(dashed, right axis).",
        )
        if len(fc.scenarios) > 1:
            figure(
                "cost_scenarios",
                charts.cost_scenarios_chart(fc, c.year),
                f"The {c.year} frontier run's cost multiplier per scenario (median and 80% "
                f"interval; an arrow: the interval reaches past {charts.COST_CAP:g}x), with the "
                "share of draws in which it is infeasible.",
            )

    blocks.append(Block("h2", "When each wall is hit, per scenario"))
    figure(
        "scenarios",
        charts.scenario_chart(rows, last),
        f"Median (dot) and {fmt_pct(PROB)} interval (bar) of the hit year of each wall, per "
        "scenario; the table near the end of the report lists the same numbers.",
    )
    figure(
        "hit_years",
        charts.hit_year_chart(fc),
        "Distribution of the hit year of each wall, per scenario (share of draws per calendar year).",
    )

    if has_paper_beside(fc):
        blocks.append(Block("h2", "Launchable plans against the paper's idealized plans"))
        blocks.append(
            Block(
                "p",
                "The headline, the fan chart, the cost and the tables above are for plans a "
                "run can launch (the realistic regime). The same draws through the paper's "
                "idealized plans give the paper's walls: the table puts the two side by side "
                "(medians; the difference is the median over draws of the paper's hit year "
                "minus the launchable one; 'not hit': by the last year).",
            )
        )
        p_header, p_body = paper_beside_cells(paper_beside_rows(fc), last)
        blocks.append(Block("table", header=p_header, rows=p_body))

    add_blocks(method_blocks(fc))
    add_blocks(frozen_blocks(fc))
    evidence_blocks(fc, blocks, figure)

    blocks.append(Block("h2", "What drives the uncertainty"))
    sobol = sobol_drivers(fc)
    if sobol is not None:
        blocks.append(
            Block("p", " ".join(filter(None, [sobol.method, sensitivity_regime_note(fc)])))
        )
        blocks.append(Block("ul", items=sobol_sentences(sobol, last)))
        moved = sobol_before_after(fc)
        if moved:
            blocks.append(
                Block(
                    "p",
                    "Before → after the joint model (the same analysis with every input from its "
                    "prior, stored beside it):",
                )
            )
            blocks.append(Block("ul", items=[m.sentence for m in moved]))
        figure(
            "sobol",
            charts.sobol_chart(sobol),
            "Sobol indices of the hit year of each wall (share of its variance): total "
            "(vermillion, including interactions) and first order (blue, the input alone), "
            "with 95% bootstrap whiskers; inputs ranked by total index"
            + (
                "; the inputs fitted to data enter through their joint posterior."
                if sobol.fitted
                else "."
            ),
        )
        t_header, t_body = tornado_table_cells(sobol)
        blocks.append(
            Block(
                "p",
                "Tornado (one at a time): the hit year with every input at its "
                + ("median (posterior median when fitted)" if sobol.fitted else "prior median")
                + " and one input at its 10th or 90th percentile; inputs ranked by total index.",
            )
        )
        blocks.append(Block("table", header=t_header, rows=t_body))
    else:
        drivers, method = uncertainty_drivers(fc, wall=h.wall)
        if drivers:
            figure(
                "drivers",
                charts.drivers_chart(drivers, h.wall),
                method + " (No sensitivity group in this forecast: `wallcast analyse` adds "
                "Sobol indices.)",
            )
        else:
            blocks.append(Block("p", "No sampled inputs in this forecast."))

    bt = backtest_summary(fc)
    frontier_bt = frontier_backtest_blocks(fc)
    if bt is not None or frontier_bt:
        blocks.append(Block("h2", BACKTEST_HEADING))
    if bt is not None:
        blocks.append(
            Block(
                "p",
                "Rolling-origin backtest of the hardware trends: fitted only on the shipped "
                "flagship accelerators released before each origin year, then scored on the "
                f"specs of those released at or after it ({bt.settings}). "
                + backtest_sentence(bt)
                + " Log score: mean log predictive density of the held-out log10 values "
                "(higher is better).",
            )
        )
        b_header, b_body = backtest_table_cells(bt)
        blocks.append(Block("table", header=b_header, rows=b_body))
        figure(
            "calibration",
            charts.calibration_chart(bt),
            "Calibration of the backtest, pooled over the hardware metrics: empirical against "
            "nominal coverage of the central predictive intervals per origin (left) and the "
            "histogram of PIT values (right; flat when calibrated).",
        )
        if bt.metrics:
            blocks.append(Block("p", "Per metric:"))
            m_header, m_body = backtest_table_cells(bt, per_metric=True)
            blocks.append(Block("table", header=m_header, rows=m_body))
    add_blocks(frontier_bt)

    blocks.append(Block("h2", "Walls of shipped accelerators"))
    if accelerators is not None and accelerators.rows:
        a_header, a_body = accelerator_table_cells(accelerators)
        blocks.append(Block("p", accelerator_section_text(accelerators)))
        blocks.append(Block("table", header=a_header, rows=a_body))
        notes = [
            f"{r['accelerator']}: " + "; ".join(r["assumptions"])
            for r in accelerators.rows
            if r["assumptions"]
        ]
        if notes:
            blocks.append(Block("ul", items=["* " + n for n in notes]))
        if accelerators.curves:
            figure(
                "utilization",
                charts.utilization_chart(accelerators.curves),
                utilization_caption(accelerators),
            )
    else:
        blocks.append(
            Block(
                "p", "Not computed for this report (the per-accelerator plan search was skipped)."
            )
        )

    blocks.append(Block("h2", "Trend fits and the data behind them"))
    figure(
        "trends",
        charts.trend_chart(fc),
        "Fitted log-linear trends of the frontier accelerator's specs and of the largest "
        "training run (median and 80% band of the posterior) with the data points they were "
        "fitted to.",
    )

    blocks.append(Block("h2", "What changed since the previous forecast"))
    blocks.extend(change_blocks(changes, last))

    prov = provenance_rows(fc)
    if prov is not None:
        counts = provenance_counts(prov)
        blocks.append(Block("h2", PROVENANCE_HEADING))
        blocks.append(
            Block(
                "p",
                f"Every propagated input of the {fc.scenarios[0]} scenario: "
                f"{counts['fitted']} fitted to data (their posterior is propagated), "
                f"{counts['prior']} drawn from a prior with a public source, "
                f"{counts['fixed']} fixed"
                + (f", {counts['scenario']} set by the scenario" if counts["scenario"] else "")
                + ". "
                + assumption_count_sentence(fc, counts)
                + "Cite keys refer to the references at the end.",
            )
        )
        blocks.append(
            Block("table", header=list(PROVENANCE_HEADER), rows=[r.cells() for r in prov])
        )
        overrides = scenario_overrides(fc)
        if overrides:
            blocks.append(
                Block(
                    "p",
                    "Scenario what-ifs that replace a fitted posterior with their own "
                    "distribution: "
                    + "; ".join(
                        f"{s}: {', '.join(input_cell(k) for k in keys)}"
                        for s, keys in overrides.items()
                    )
                    + ".",
                )
            )

    blocks.append(Block("h2", "Assumptions and sources"))
    items = assumptions(str(fc.attrs.get("priors_text", "")))
    blocks.append(
        Block(
            "p",
            f"Priors {fc.attrs.get('priors_name', '?')}: every parameter with its distribution "
            "(median and 80% interval) and source, as recorded in the forecast.",
        )
    )
    blocks.append(
        Block(
            "table",
            header=["input", "prior", "source"],
            rows=[[input_cell(it["key"]), it["prior"], it["source"]] for it in items],
        )
    )

    blocks.append(Block("h2", "Hit year and compute per scenario (table)"))
    blocks.append(Block("table", header=header, rows=body))
    blocks.append(
        Block(
            "p",
            "Hit year: the first (fractional) year in which the largest training run reaches the "
            "wall. Intervals are equal-tailed credible intervals over all draws; draws that never "
            f"reach the wall by {last} count as 'not by {last}'. Same numbers as `wallcast query`.",
        )
    )

    blocks.append(Block("h2", "Provenance"))
    blocks.append(Block("table", header=["item", "value"], rows=[list(r) for r in provenance(fc)]))

    blocks.append(Block("h2", "What uncertainty the model does not include"))
    blocks.append(Block("ul", items=not_modelled(fc.regime)))
    blocks.extend(glossary_blocks(fc))
    blocks.extend(reference_blocks(blocks))
    return stand_alone_blocks(blocks)


def evidence_blocks(fc: Forecast, blocks: list[Block], figure) -> None:
    """The section "What the data says": one sentence per fitted input and the prior against
    posterior chart; one line when the forecast has no ``/prior`` group."""
    blocks.append(Block("h2", EVIDENCE_HEADING))
    items = fitted_inputs(fc)
    if items is None:
        blocks.append(Block("p", NO_EVIDENCE))
        if provenance_rows(fc) is None:
            return
        blocks.append(Block("p", f"Its inputs' origins: section '{PROVENANCE_HEADING}'."))
        return
    blocks.append(
        Block(
            "p",
            "The joint model fits the scaling and system inputs to published data (model shapes "
            "and batch sizes, reported utilization, scale-up domains) together with the hardware "
            "and frontier-compute trends; the walls "
            "are computed from its posterior draws. Per input, its prior and its posterior "
            f"(median and {fmt_pct(PROB)} interval):",
        )
    )
    blocks.append(Block("ul", items=[it.sentence for it in items]))
    if provenance_rows(fc) is None:
        blocks.append(Block("p", NO_PROVENANCE))
    figure(
        "prior_posterior",
        charts.prior_posterior_chart(items),
        "Prior (light) against posterior (dark) of each fitted input: densities scaled to a "
        f"peak of 1, and below the axis each one's median (dot) and {fmt_pct(PROB)} interval "
        "(bar); log axis where the prior spans over a factor of 10.",
    )
    checks_blocks(fc, blocks)


def change_blocks(ch: Changes, last_year: int) -> list[Block]:
    if ch.first:
        return [Block("p", "This is the first forecast: there is no previous one to compare.")]
    out = [Block("p", f"Compared with the previous published forecast, {ch.previous_id}.")]
    moved = change_sentences(ch, last_year)
    if moved:
        out.append(Block("p", "Medians that moved:"))
        out.append(Block("ul", items=moved))
    else:
        out.append(Block("p", "No median moved (all within 0.05 years and 0.05 dex)."))
    out.append(Block("p", "Data and inputs:"))
    out.append(Block("ul", items=ch.data or ["no difference in data or inputs"]))
    rows = []
    for m in ch.medians:
        fmt = (lambda v: fmt_year(v, last_year)) if m["what"] == "year" else fmt_flop
        rows.append(
            [
                m["scenario"],
                wall_label(m["wall"]),
                "hit year" if m["what"] == "year" else "hit FLOP",
                fmt(m["previous"]),
                fmt(m["current"]),
            ]
        )
    if rows:
        out.append(
            Block("table", header=["scenario", "wall", "median of", "previous", "now"], rows=rows)
        )
    return out


# ----------------------------------------------------------------------------- rendering


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: list[Block], files_dir: str = FILES_DIR) -> str:
    out: list[str] = []
    for b in blocks:
        if b.kind == "h1":
            out.append(f"# {b.text}")
        elif b.kind == "h2":
            out.append(f"## {b.text}")
        elif b.kind == "lead":
            out.append(f"**{b.text}**")
        elif b.kind == "p":
            out.append(b.text)
        elif b.kind == "ul":
            out.append("\n".join(f"- {i}" for i in b.items or []))
        elif b.kind == "table":
            header = b.header or []
            lines = [
                "| " + " | ".join(_md_cell(c) for c in header) + " |",
                "|" + "|".join("---" for _ in header) + "|",
            ]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows or []]
            out.append("\n".join(lines))
        elif b.kind == "figure":
            out.append(f"![{b.text}]({files_dir}/{b.key}.png)\n\n*{b.text}*")
        elif b.kind == "refs":
            out.append(
                "\n".join(
                    f"- **[{k}]** {text}" + (f" <{url}>" if url else "")
                    for k, text, url in b.rows or []
                )
            )
    return "\n\n".join(out) + "\n"


CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; max-width: 980px;
       margin: 2em auto; padding: 0 1em; color: #1a1a1a; line-height: 1.5; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
p.lead { font-size: 1.35em; font-weight: 600; color: #0072B2; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; }
th { background: #f2f2f2; }
figure { margin: 1em 0; } figure img { max-width: 100%; }
figcaption { font-size: 0.9em; color: #444; }
@media print { figure, table, ul { break-inside: avoid; } h2 { break-after: avoid; } }
code { background: #f4f4f4; padding: 0 3px; }
"""


def _inline_links(text: str, anchors: dict[str, str] | None = None) -> str:
    """HTML-escape, turning `code` spans into <code> and each cite key in ``anchors`` (key or
    short label -> reference key) into a link to its entry in the references."""
    parts = html.escape(text).split("`")
    out = "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
    return link_cites(out, anchors) if anchors else out


def render_html(blocks: list[Block], title: str) -> str:
    body: list[str] = []
    listed = [r[0] for b in blocks if b.kind == "refs" for r in b.rows or []]
    _, aliases = load_sources() if listed else ({}, {})
    anchors = {k: k for k in listed} | {a: k for a, k in aliases.items() if k in listed}

    def _inline(text: str) -> str:
        return _inline_links(text, anchors)

    for b in blocks:
        if b.kind == "h1":
            body.append(f"<h1>{_inline(b.text)}</h1>")
        elif b.kind == "h2":
            body.append(f"<h2>{_inline(b.text)}</h2>")
        elif b.kind == "lead":
            body.append(f'<p class="lead">{_inline(b.text)}</p>')
        elif b.kind == "p":
            body.append(f"<p>{_inline(b.text)}</p>")
        elif b.kind == "ul":
            body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items or []) + "</ul>")
        elif b.kind == "table":
            head = "".join(f"<th>{_inline(c)}</th>" for c in b.header or [])
            rows = "".join(
                "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>"
                for row in b.rows or []
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif b.kind == "figure":
            body.append(
                f'<figure><img src="{charts.data_uri(b.png)}" alt="{html.escape(b.text)}">'
                f"<figcaption>{_inline(b.text)}</figcaption></figure>"
            )
        elif b.kind == "refs":
            body.append(
                '<ol class="refs">'
                + "".join(
                    f'<li id="ref-{html.escape(k)}"><strong>[{html.escape(k)}]</strong> '
                    f"{html.escape(text)}"
                    + (f' <a href="{html.escape(url)}">{html.escape(url)}</a>' if url else "")
                    + "</li>"
                    for k, text, url in b.rows or []
                )
                + "</ol>"
            )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def write_report(
    fc: Forecast,
    out_dir: str | Path,
    changes: Changes,
    accelerators: AcceleratorWalls | None = None,
) -> dict[str, Any]:
    """Write report.html, report.md and report_files/*.png; returns paths and the figures."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Figure] = {}
    blocks = report_blocks(fc, changes, accelerators, figures)
    files = out_dir / FILES_DIR
    files.mkdir(exist_ok=True)
    current = {f"{b.key}.png" for b in blocks if b.kind == "figure"}
    for old in files.glob("*.png"):  # charts of an earlier version of this report
        if old.name not in current:
            old.unlink()
    for b in blocks:
        if b.kind == "figure":
            (files / f"{b.key}.png").write_bytes(b.png)
    md = out_dir / "report.md"
    md.write_text(render_markdown(blocks), encoding="utf-8")
    page = out_dir / "report.html"
    page.write_text(render_html(blocks, f"Wallcast forecast {fc.id}"), encoding="utf-8")
    return {"report_html": page, "report_md": md, "figures": figures}
