"""The planner's physics (:mod:`forecast.model.planner`): per draw, the realistic regime's best
launchable plan at one budget, the same as the realistic curve on the same shapes."""

from __future__ import annotations

import numpy as np
import pytest

from forecast.model.params import Assumptions, Hardware
from forecast.model.planner import SMALL_LOG10_FLOP, best_paper_plans, best_plans, plan_of
from forecast.model.realistic import launch_curve
from forecast.model.realistic_fast import shortlist_grid

H100 = Hardware(9.89e14, 3.35e12, 8e10, 4.5e11, 8.0, 5e10)


def draws() -> Assumptions:
    """Three draws: the defaults, a smaller batch, a lower maximum utilization."""
    base = Assumptions()
    return base._replace(
        batch_tokens_ref=np.array([base.batch_tokens_ref, 2.3e7, base.batch_tokens_ref]),
        max_utilization=np.array([0.7, 0.7, 0.55]),
    )


@pytest.fixture(scope="module")
def plans():
    return best_plans(H100, draws(), np.array([26.0, 28.0, 29.0]))


def test_each_draw_is_the_realistic_curve_on_the_same_shapes(plans):
    grid = shortlist_grid()
    a = draws()
    for k, x in enumerate((26.0, 28.0, 29.0)):
        one = Assumptions(*(np.asarray(v)[k] if np.ndim(v) else v for v in a))
        curve = launch_curve(H100, one, [x, *SMALL_LOG10_FLOP], grid=grid)
        assert plans.utilization[k] == pytest.approx(float(curve.utilization[0]), rel=1e-12)
        assert int(plans.index[k]) == int(curve.index[0])
        assert int(plans.data_parallel[k]) == int(curve.data_parallel[0])
        assert int(plans.microbatches[k]) == int(curve.microbatches[0])
        small = float(np.max(curve.utilization[1:]))
        assert plans.small_scale_utilization[k] == pytest.approx(small, rel=1e-12)


def test_plan_in_whole_numbers_runs_the_budget_in_time(plans):
    grid = shortlist_grid()
    for k, x in enumerate((26.0, 28.0, 29.0)):
        p = plan_of(grid, plans, k, 8192.0)
        assert p, k
        degrees = ("tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel")
        assert all(isinstance(p[d], int) and p[d] >= 1 for d in degrees)
        assert p["accelerators"] == int(np.prod([p[d] for d in degrees]))
        # accelerators x peak x utilization x the run's length covers the budget
        run_s = Assumptions().duration_s
        assert p["accelerators"] * H100.flops * p["utilization"] * run_s >= 10**x * (1 - 1e-9)
    # a larger budget needs more accelerators; past the latency wall no plan is feasible
    counts = [plan_of(grid, plans, k, 8192.0)["accelerators"] for k in range(3)]
    assert counts[0] < counts[1] < counts[2]
    assert plans.feasible.all()
    far = best_plans(H100, Assumptions(), 34.0)
    assert (
        not bool(far.feasible[()])
        and plan_of(
            grid, far._replace(**{f: np.atleast_1d(v) for f, v in far._asdict().items()}), 0, 8192.0
        )
        == {}
    )


def test_the_paper_regime_s_best_plan_per_draw_is_the_paper_curve():
    """``best_paper_plans``: per draw, the full paper search at its budget
    (:func:`forecast.model.search.utilization_curve`), continuous quantities, and its accelerators
    the product of the degrees (dp fractional)."""
    from forecast.model.plan import best_plan
    from forecast.model.scaling import model_shape
    from forecast.model.search import utilization_curve

    a = draws()
    x = np.array([26.0, 28.0, 29.0])
    paper = best_paper_plans(H100, a, x)
    for k in range(3):
        one = Assumptions(*(np.asarray(v)[k] if np.ndim(v) else v for v in a))
        curve = utilization_curve(H100, one, [x[k]])
        assert paper.utilization[k] == pytest.approx(float(curve.utilization[0]), rel=1e-12)
        assert paper.tensor_parallel[k] == float(curve.tp[0])
        assert paper.pipeline_parallel[k] == float(curve.pp[0])
        assert paper.data_parallel[k] == pytest.approx(float(curve.data_parallel[0]), rel=1e-12)
        dims = paper.tensor_parallel[k] * paper.pipeline_parallel[k] * paper.data_parallel[k]
        assert paper.accelerators[k] == pytest.approx(dims, rel=1e-9)
        # its step time is the plan model's for that plan (forecast.model.plan.best_plan)
        shape = model_shape(x[k], one)
        plan = best_plan(
            H100, one, shape, paper.tensor_parallel[k], paper.pipeline_parallel[k],
            paper.microbatches[k], bool(paper.two_d[k]),
        )  # fmt: skip
        assert paper.step_time_s[k] == pytest.approx(float(plan.step_time_s), rel=1e-9)
