"""The report's one-page method: what the forecast computes, in words and one diagram, and why
faster chips can bring the data-movement wall sooner.

The words follow the model (``forecast.model``: step time, plan search, walls; ``forecast.stats``:
the joint fit and the hardware trends); the diagram has no data, only the flow.
"""

from __future__ import annotations

import textwrap

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from forecast.queries.headline import Forecast, regime_phrase
from forecast.report import charts
from forecast.report.frontier import Block

METHOD_HEADING = "How the forecast is made"

# (column, row, text) of each box; rows 0 and 1 of column 0 both feed the fit
_BOXES = (
    (
        0,
        0,
        "Published data: shipped accelerators, frontier training runs, model shapes, batch "
        "sizes, utilization",
    ),
    (0, 1, "Priors with public sources: growth rates, latencies, scaling laws"),
    (1, 0.5, "Joint Bayesian fit (NumPyro): posterior draws of every input"),
    (
        2,
        0.5,
        "For each draw and year: the frontier accelerator (trend specs) and the frontier "
        "run (compute trend: model size, depth, batch)",
    ),
    (
        3,
        0.5,
        "Plan search: tensor x pipeline x data parallelism x microbatches; step time from "
        "arithmetic, memory, network, latency and the pipeline bubble",
    ),
    (4, 0, "Data-movement wall: best utilization falls below 80% of the small-scale maximum"),
    (4, 1, "Latency wall: no plan finishes the run in its length"),
    (
        5,
        0.5,
        "Hit year: the first year the frontier run's compute passes a wall; "
        "distributions over the draws",
    ),
)
_ARROWS = ((0, 2), (1, 2), (2, 3), (3, 4), (4, 5), (4, 6), (5, 7), (6, 7))


def method_chart(scale: float = 1.0, figsize=(11.0, 3.9)) -> Figure:
    """The forecast's flow, data to hit year, as boxes and arrows (no axes)."""
    with charts._style(scale):
        fig = Figure(figsize=figsize)
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        ax.set_xlim(-0.05, 6.0)
        ax.set_ylim(1.72, -0.16)
        w, h = 0.86, 0.78
        centres = []
        for col, row, text in _BOXES:
            x, y = col + 0.02, row * 1.0 - 0.1
            fill = charts.SKY if col in (0,) else ("#fde2c4" if col == 4 else "#dbe9f6")
            ax.add_patch(
                FancyBboxPatch(
                    (x, y),
                    w,
                    h,
                    boxstyle="round,pad=0.02,rounding_size=0.05",
                    fc=fill,
                    ec="0.35",
                    lw=1.0,
                    alpha=0.9 if col else 0.45,
                )
            )
            ax.text(
                x + w / 2,
                y + h / 2,
                textwrap.fill(text, 20),
                ha="center",
                va="center",
                fontsize=9.4 * scale,
            )
            centres.append((x, y, w, h))
        for a, b in _ARROWS:
            xa, ya, wa, ha = centres[a]
            xb, yb, _, hb = centres[b]
            ax.add_patch(
                FancyArrowPatch(
                    (xa + wa, ya + ha / 2),
                    (xb, yb + hb / 2),
                    arrowstyle="-|>",
                    mutation_scale=12 * scale,
                    color="0.3",
                    lw=1.1,
                )
            )
    return fig


def method_paragraphs(fc: Forecast) -> list[str]:
    """The method in five short paragraphs, the last the 'faster chips' box."""
    return [
        "Inputs. Every uncertain input has a prior from a public source (the references at the "
        "end). Wherever data exist, one joint Bayesian model (NumPyro, NUTS) fits the inputs "
        "to it: the hardware trends to the shipped accelerators, frontier compute to the "
        "published training runs, the depth and batch laws to published model shapes and batch "
        "sizes, the utilization ceiling to reported MFU. The forecast then works on the "
        "posterior draws, so every number below is a distribution over them.",
        "Each year's frontier. The frontier accelerator of a year has the specs of the fitted "
        "trends (peak FLOP/s, memory bandwidth and capacity, scale-up and scale-out bandwidth, "
        "scale-up domain size) and latencies that change at their own rate. The frontier run "
        "has the compute of the fitted trend of the largest runs; its model size follows from "
        "compute-optimal scaling (20 tokens per parameter [hoffmann2022]), its depth and its "
        "critical batch from laws in model size [sevilla2024-2030].",
        "The step-time model and the plan search. A training step splits the batch over "
        "tensor, pipeline and data parallelism (and experts for sparse models) and into "
        "microbatches. Each phase of a step takes the longest of its arithmetic, its memory "
        "traffic and its network traffic, because they overlap; latencies of kernels and "
        "collectives add on the serial path, and the pipeline adds its bubble [erdil2024]. "
        "The search picks the plan with the highest utilization; the walls here use "
        f"{regime_phrase(fc.regime)}.",
        "The walls. Utilization is the achieved share of peak FLOP/s; the small-scale maximum "
        "is what a run reaches where data movement costs nothing extra. The data-movement wall "
        "is the largest compute at which the best plan keeps utilization at 80% of that "
        "maximum [epoch-simulator]; the latency wall is the compute beyond which no plan "
        "finishes in the run length, because every step has a minimum duration and the batch "
        "cannot grow past the critical batch. The hit year is the first year the frontier "
        "run's compute passes a wall. The wall's path in the fan chart jumps in 2025, when "
        "the scale-up domain grows from 8 to 72 accelerators and tensor parallelism stays "
        "inside fast links, then drifts down as FLOP/s grows faster than bandwidth.",
        "Why faster chips can hit the wall sooner. A faster chip finishes its share of the "
        "arithmetic sooner, but the bytes it must move and the latencies it must wait for "
        "stay the same, so less of the data movement hides behind arithmetic and utilization "
        "starts to fall at a smaller run. That is why the H100 has a lower efficient scale "
        "than the A100 [erdil2024]: its FLOP/s grew faster than its memory and network "
        "bandwidth. In this forecast, faster FLOP/s growth brings the hit year earlier unless "
        "bandwidth keeps pace; larger scale-up domains and faster batch-size scaling push it "
        "later.",
    ]


def method_blocks(fc: Forecast) -> list[Block]:
    """The report's method section: the paragraphs and the diagram."""
    paragraphs = method_paragraphs(fc)
    fig = method_chart()
    return [
        Block("h2", METHOD_HEADING),
        *(Block("p", p) for p in paragraphs[:-1]),
        Block(
            "figure",
            "The forecast's flow: data and priors, the joint fit, each year's frontier "
            "accelerator and run, the plan search, the two walls and the hit year.",
            key="method",
            png=charts.to_png(fig),
            figure=fig,
        ),
        Block("p", paragraphs[-1]),
    ]
