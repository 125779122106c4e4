"""The published estimates this forecast is compared with, each with its source (docs/sources.md)."""

PAPER_YEAR = 2024  # the hardware year of [erdil2024]: the H100
PAPER_DM_WALL_FLOP = (
    1e28  # [erdil2024] abstract: utilization falls beyond ~1e28 FLOP (H100, 3 months)
)
BLOG_DM_WALL_FLOP = 2e28  # [erdil2024-blog] and [epoch-simulator]: the same wall at 2e28 FLOP
PAPER_LATENCY_WALL_FLOP = 1e31  # [erdil2024] abstract: infeasible beyond ~1e31 FLOP
BLOG_LATENCY_WALL_FLOP = 2e31  # [erdil2024-blog] and [epoch-simulator]: 2e31 FLOP
PAPER_YEARS_TO_WALL = 3.0  # [erdil2024]: "a barrier in about three years" at today's pace
REPORT_LATENCY_2030_FLOP = (3e30, 3e31, 1e32)  # [sevilla2024-2030] Fig. 6: 10th, median, 90th
REPORT_LATENCY_YEAR = 2030  # the year of [sevilla2024-2030]'s latency-wall estimate
