"""The paper's idealized bound beside a realistic forecast's walls (issue 22): the comparison rows,
the sentence the report, deck and dashboard print, the 'what changed' line of a regime switch,
and the query's ``paper_*`` keys read from a file."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from forecast.queries.answers import query
from forecast.queries.headline import (
    from_tree,
    has_paper_beside,
    paper_beside_cells,
    paper_beside_rows,
    paper_beside_sentence,
)
from forecast.report.changes import what_changed

YEARS = np.arange(2024, 2046)
WALLS = ["data_movement", "latency"]


def _tree(paper: bool = True) -> xr.DataTree:
    """Two scenarios, 2 x 50 draws: realistic hit years 2029 + i/100 (data movement) and
    2032 + i/100 (latency); the paper's 0.5 and 1.2 years later on the same draws, except that
    in draws 0-9 the paper's latency wall is never hit and in draws 0-4 neither latency wall is."""
    n = 100
    i = np.arange(n) / 100.0
    real = np.stack([2029.0 + i, 2032.0 + i], axis=-1)
    pap = real + np.array([0.5, 1.2])
    pap[:10, 1] = np.inf
    real[:5, 1] = np.inf
    flop = 10.0 ** (29.0 + (real - 2029.0) * 0.5)
    pflop = 10.0 ** (29.0 + (pap - 2029.0) * 0.5)

    def cd(x):
        return np.broadcast_to(x.reshape(2, 50, 2), (2, 2, 50, 2))  # (scenario, chain, draw, wall)

    data = {
        "hit_year": (("scenario", "chain", "draw", "wall"), cd(real)),
        "hit_flop": (("scenario", "chain", "draw", "wall"), cd(flop)),
    }
    if paper:
        data["paper_hit_year"] = (("scenario", "chain", "draw", "wall"), cd(pap))
        data["paper_hit_flop"] = (("scenario", "chain", "draw", "wall"), cd(pflop))
    ds = xr.Dataset(
        data,
        coords={"scenario": ["baseline", "other"], "wall": WALLS, "year": YEARS},
    )
    return xr.DataTree.from_dict({"/forecast": ds}, name=None)


def _fc(regime: str = "realistic", paper: bool = True):
    tree = _tree(paper)
    tree.attrs = {"regime": regime, "id": f"20260101T000000Z-{regime[:8]:0<8}"}
    return from_tree(tree)


def test_only_a_realistic_forecast_with_the_variables_has_the_bound_beside():
    assert has_paper_beside(_fc())
    assert not has_paper_beside(_fc("paper"))  # a paper forecast compares with nothing
    assert not has_paper_beside(_fc(paper=False))  # published before the comparison
    assert paper_beside_sentence(_fc("paper")) == ""


def test_the_gap_is_the_median_over_the_same_draws():
    rows = {(r["scenario"], r["wall"]): r for r in paper_beside_rows(_fc())}
    dm = rows[("baseline", "data_movement")]
    assert dm["paper_later_years"] == pytest.approx(0.5)
    assert dm["paper_later_share"] == 1.0
    assert dm["year"]["median"] == pytest.approx(np.median(2029.0 + np.arange(100) / 100))
    assert dm["paper_year"]["median"] == pytest.approx(dm["year"]["median"] + 0.5)
    lat = rows[("baseline", "latency")]
    # draws 0-4: neither hit (no gap, left out); 5-9: only the realistic one (+inf); 10-99: +1.2
    assert lat["paper_later_years"] == pytest.approx(1.2)
    assert lat["paper_later_share"] == 1.0
    # 10 of 100 paper draws never hit: the 90 % quantile touches them, so the upper end is +inf
    assert math.isinf(lat["paper_year"]["upper"]) and math.isfinite(lat["year"]["upper"])
    header, body = paper_beside_cells(list(rows.values()), 2045)
    assert len(header) == len(body[0]) == 7
    assert body[0][4] == "+0.5" and body[1][4] == "+1.2"


def test_the_sentence_names_both_walls_their_gaps_and_the_scenario():
    s = paper_beside_sentence(_fc())
    assert "data-movement wall 0.5 years later (median 2030.0" in s
    assert "latency wall 1.2 years later" in s
    assert "baseline scenario" in s and "Erdil & Schneider-Joseph" in s
    short = paper_beside_sentence(_fc(), short=True)
    assert short.startswith("The paper's idealized plans")
    assert "data-movement wall 0.5 years later and the latency wall 1.2 years later" in short


def test_a_regime_switch_is_named_among_what_changed():
    before, after = _fc("paper"), _fc("realistic")
    lines = what_changed(after, before).data
    assert any(line.startswith("plan regime: paper → realistic") for line in lines), lines
    assert not any("plan regime" in line for line in what_changed(after, after).data)


def test_the_query_reads_the_bound_beside_from_the_file(tmp_path):
    """``wallcast query`` / ``/v1/query`` (h5py only) add ``paper_median``, ``paper_lower`` and
    ``paper_upper``: the same interval as the realistic one, of the paper variable."""
    fc = _fc()
    path = tmp_path / "forecast.nc"
    tree = xr.DataTree.from_dict({"/forecast": fc.forecast})
    tree.attrs = fc.attrs
    tree.to_netcdf(path, engine="h5netcdf")
    out = query(path, "data_movement", "year", "baseline", 0.8)
    assert out["regime"] == "realistic"
    assert out["paper_median"] == pytest.approx(out["median"] + 0.5)
    assert out["paper_lower"] == pytest.approx(out["lower"] + 0.5)
    flop = query(path, "latency", "flop", "other", 0.8)
    assert flop["paper_median"] > flop["median"]
    tree2 = xr.DataTree.from_dict({"/forecast": _fc(paper=False).forecast})
    tree2.to_netcdf(tmp_path / "old.nc", engine="h5netcdf")
    assert "paper_median" not in query(tmp_path / "old.nc", "latency", "year")


def _set(fc, wall: str, real, paper):
    """``fc`` with one wall's hit years replaced in every scenario (100 draws)."""
    ds = fc.forecast.copy(deep=True)
    for name, values in (("hit_year", real), ("paper_hit_year", paper)):
        arr = np.broadcast_to(np.asarray(values, float).reshape(2, 50), (2, 2, 50))
        ds[name].loc[{"wall": wall}] = arr
    fc.forecast = ds
    return fc


def test_never_hit_draws_are_named_for_the_right_plan_model():
    """-inf: only the paper's wall is hit; every draw neither: NaN, said as such; the deck's short
    sentence says it too instead of dropping the wall."""
    never = np.full(100, np.inf)
    fc = _set(_fc(), "latency", never, 2033.0 + np.arange(100) / 100)
    lat = {r["wall"]: r for r in paper_beside_rows(fc)}["latency"]
    assert lat["paper_later_years"] == -np.inf and lat["paper_earlier_share"] == 1.0
    s = paper_beside_sentence(fc)
    assert (
        "latency wall by 2045 in most of the draws in which launchable plans do not reach it" in s
    )
    fc = _set(_fc(), "latency", never, never)
    lat = {r["wall"]: r for r in paper_beside_rows(fc)}["latency"]
    assert math.isnan(lat["paper_later_years"]) and lat["neither_share"] == 1.0
    assert "latency wall not by 2045 under either plan model" in paper_beside_sentence(fc)
    assert "under either plan model" in paper_beside_sentence(fc, short=True)
    _, body = paper_beside_cells([lat], 2045)
    assert body[0][3] == "not by 2045" and body[0][4] == "neither hit"


def test_a_quantile_on_a_draw_next_to_a_never_hit_one_is_that_draw():
    """The median of [1, 2, inf] is 2, not NaN (0 x inf): a reading on a draw is that draw."""
    from forecast.queries.answers import quantiles_with_inf

    got = quantiles_with_inf(np.array([1.0, 2.0, np.inf]), [0.0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(got, [1.0, 1.5, 2.0, np.inf, np.inf])
    assert quantiles_with_inf(np.array([-np.inf, 1.0, 2.0]), [0.5])[0] == 1.0


def test_a_realistic_tornado_is_not_tied_by_the_paper_sobol_intervals():
    """A realistic forecast's tornado (its own regime) beside the paper regime's Sobol indices:
    the lead is told by the swings alone, not by overlapping Sobol intervals of other walls."""
    from forecast.report.executive import input_effects, leading_effects

    def fc_with(tornado_regime: str):
        fc = _fc()
        ds = xr.Dataset(
            {
                "total": (("target", "input"), [[0.5, 0.45]]),
                "total_low": (("target", "input"), [[0.3, 0.3]]),
                "total_high": (("target", "input"), [[0.7, 0.6]]),
                "tornado_low": (("target", "input"), [[2029.0, 2029.7]]),
                "tornado_high": (("target", "input"), [[2031.0, 2030.3]]),
                "baseline": ("target", [2030.0]),
                "input_p10": ("input", [1.0, 1.0]),
                "input_p50": ("input", [2.0, 2.0]),
                "input_p90": ("input", [3.0, 3.0]),
            },
            coords={"target": ["data_movement_hit_year"], "input": ["a.x", "b.y"]},
            attrs={
                "sensitivity_tornado_regime": tornado_regime,
                "sensitivity_indices_regime": "paper",
            },
        )
        fc.tree["sensitivity"] = xr.DataTree(ds)
        return fc

    same = input_effects(fc_with("paper"), "data_movement")
    assert same[0].total_interval is not None and len(leading_effects(same)) == 2  # Sobol tie
    mixed = input_effects(fc_with("realistic"), "data_movement")
    assert all(e.total_interval is None for e in mixed)
    assert [e.key for e in leading_effects(mixed)] == ["a.x"]  # 2.0 years against 0.6


def test_a_change_of_the_wall_grid_is_named_among_what_changed():
    """A forecast searched at every year after one searched every 2nd year (no attribute: made
    before 2026-12-05) says why its odd years' walls moved; the same grid says nothing."""
    before, after = _fc(), _fc()
    after.attrs["wall_year_step"] = 1
    lines = what_changed(after, before).data
    assert any(
        line.startswith("wall grid: walls searched every 2nd year → every year") for line in lines
    ), lines
    assert not any("wall grid" in line for line in what_changed(after, after).data)
    assert not any("wall grid" in line for line in what_changed(before, before).data)
    after.attrs["wall_year_step"] = "every year"  # a damaged attribute: no line, no failure
    assert not any("wall grid" in line for line in what_changed(after, before).data)


@pytest.mark.parametrize(
    ("value", "step"),
    [
        (1, 1),
        (np.int64(1), 1),
        (2.0, 2),
        (7, 7),
        (2.5, None),
        ("x", None),
        (None, None),
        ([1], None),
        (0, None),
        (-1, None),
        (True, None),
        (float("nan"), None),
    ],
)
def test_the_wall_grid_attribute_is_read_or_refused_never_raised(value, step):
    from forecast.store.attrs import wall_year_step

    assert wall_year_step({"wall_year_step": value}) == step
    assert wall_year_step({}) == 2  # published before the attribute: every 2nd year
