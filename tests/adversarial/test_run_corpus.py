"""Adversarial corpus of issue 13, runs / priors / queries half: every case is bad input to
``wallcast run``, ``query``, ``report`` or ``deck`` and must end with exit 2, one ``error:`` line
last naming the file, key and line (or the parameter), no traceback, ``data/*.csv`` byte-identical,
the outputs folder unchanged with ``latest`` still loadable, and no process left behind.

Validation happens before the Prefect flow starts, so no case here starts a Prefect server.  Cases
run through the real entry point (:func:`forecast.cli.app.main`) in this process; a few also run as
a subprocess (``SUBPROCESS_CASES``) to prove the console script behaves the same.
Static inputs live in ``tests/adversarial/cases/run/``; the rest are derived from the shipped
baseline so they follow its changes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from adversarial.harness import (
    REPO_ROOT,
    assert_clean_error,
    processes_mentioning,
    run_cli,
    run_main,
    snapshot,
)
from forecast.config.paths import DATA_TABLE_FILES

CASES_DIR = Path(__file__).resolve().parent / "cases" / "run"
BASELINE = REPO_ROOT / "priors" / "baseline.toml"
FORECAST_ID = "20260101T000000Z-corpus"


@dataclass
class Project:
    """A scratch copy of the data tables and an outputs folder holding one published forecast."""

    root: Path
    data: Path
    outputs: Path
    scenarios: Path

    def priors(self, text: str | bytes, name: str = "priors.toml") -> Path:
        path = self.root / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return path

    def baseline_with(self, old: str, new: str) -> Path:
        text = BASELINE.read_text(encoding="utf-8")
        assert old in text, f"{old!r} is not in the shipped baseline any more"
        return self.priors(text.replace(old, new, 1))

    @property
    def forecast_file(self) -> Path:
        return self.outputs / "forecasts" / FORECAST_ID / "forecast.nc"

    def run(self, *extra: str) -> list[str]:
        return [
            "run",
            "--data-dir",
            str(self.data),
            "--outputs-dir",
            str(self.outputs),
            "--draws",
            "50",
            "--chains",
            "1",
            *extra,
        ]

    def broken_forecast(self, content: bytes) -> Path:
        """A second outputs folder whose latest forecast file holds ``content``."""
        out = self.root / "broken-outputs"
        (out / "forecasts" / "x").mkdir(parents=True)
        (out / "forecasts" / "x" / "forecast.nc").write_bytes(content)
        (out / "latest").write_text("forecasts/x\n")
        return out


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An outputs folder with one small forecast published by forecast.store.reader (the stored
    reference's forecast variables), made once per module."""
    import xarray as xr

    from forecast import store

    ref = xr.open_dataset(REPO_ROOT / "tests" / "reference" / "small_forecast.nc")
    forecast = ref[["wall_flop", "frontier_flop", "hit_year", "hit_flop"]].load()
    ref.close()
    tree = xr.DataTree.from_dict(
        {"/": xr.Dataset(attrs={"id": FORECAST_ID}), "/forecast": forecast}
    )
    outputs = tmp_path_factory.mktemp("published") / "outputs"
    store.publish_forecast(tree, outputs, FORECAST_ID)
    return outputs


@pytest.fixture
def project(tmp_path: Path, published: Path) -> Project:
    data = tmp_path / "data"
    data.mkdir()
    for name in DATA_TABLE_FILES:
        shutil.copy2(REPO_ROOT / "data" / name, data / name)
    outputs = tmp_path / "outputs"
    shutil.copytree(published, outputs)
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    return Project(tmp_path, data, outputs, scenarios)


@dataclass
class Case:
    """A bad input: ``make(project)`` returns (args, env); the error line must mention each of
    ``mentions(project)``."""

    make: Callable[[Project], tuple[list[str], dict[str, str]]]
    mentions: Callable[[Project], list[str]] = field(default=lambda p: [])


def _run_priors(text: str | bytes) -> Callable[[Project], tuple[list[str], dict[str, str]]]:
    return lambda p: (p.run("--priors", str(p.priors(text))), {})


def _run_baseline_with(old: str, new: str):
    return lambda p: (p.run("--priors", str(p.baseline_with(old, new))), {})


def _run_overlays(*names: str):
    return lambda p: (
        p.run(*[a for n in names for a in ("--scenario", str(CASES_DIR / n))]),
        {},
    )


def _query(*extra: str, outputs: Callable[[Project], Path] | None = None):
    def make(p: Project) -> tuple[list[str], dict[str, str]]:
        out = p.outputs if outputs is None else outputs(p)
        return ["query", "--wall", "latency", "--outputs-dir", str(out), *extra], {}

    return make


def _truncated(p: Project) -> Path:
    return p.broken_forecast(p.forecast_file.read_bytes()[:5000])


def _corrupted(p: Project) -> Path:
    data = bytearray(p.forecast_file.read_bytes())
    data[2000:60000] = bytes(range(256)) * ((60000 - 2000) // 256) + b"\0" * ((60000 - 2000) % 256)
    return p.broken_forecast(bytes(data))


def _no_forecast_group(p: Project) -> Path:
    return p.broken_forecast((REPO_ROOT / "tests" / "reference" / "small_forecast.nc").read_bytes())


PRIORS_IN = lambda p: [str(p.root / "priors.toml")]  # noqa: E731

CASES: dict[str, Case] = {
    # ---- class 5: priors bounds, at load time with file, key and line
    "priors-growth-1e301": Case(
        _run_baseline_with("quantiles = { p10 = 1.30, p50 = 1.45, p90 = 1.65 }", "value = 1e301"),
        lambda p: [*PRIORS_IN(p), "line 13", "hardware.flops_growth_per_year", "plausible range"],
    ),
    "priors-run-of-1e300-days": Case(
        _run_baseline_with("value = 90", "value = 1e300"),
        lambda p: [*PRIORS_IN(p), "'training.duration_days'", "[1, 3650] days"],
    ),
    "priors-run-of-half-a-day": Case(
        _run_baseline_with("value = 90", "value = 0.5"),
        lambda p: [*PRIORS_IN(p), "training.duration_days", "plausible range"],
    ),
    "priors-utilization-above-1": Case(
        _run_baseline_with("quantiles = { p10 = 0.55, p50 = 0.70, p90 = 0.80 }", "value = 1.5"),
        lambda p: [*PRIORS_IN(p), "training.max_utilization", "[0, 1]"],
    ),
    "priors-utilization-zero": Case(
        _run_baseline_with("quantiles = { p10 = 0.55, p50 = 0.70, p90 = 0.80 }", "value = 0.0"),
        lambda p: [*PRIORS_IN(p), "training.max_utilization", "plausible range"],
    ),
    "priors-negative-latency": Case(
        _run_baseline_with("quantiles = { p10 = 2.5, p50 = 4.5, p90 = 6.5 }", "value = -3"),
        lambda p: [*PRIORS_IN(p), "latency.kernel_us", "> 0"],
    ),
    "priors-frontier-compute-1e40": Case(
        _run_baseline_with("quantiles = { p10 = 3.5e25, p50 = 5e25, p90 = 1e26 }", "value = 1e40"),
        lambda p: [*PRIORS_IN(p), "frontier.compute_2024_flop", "plausible range"],
    ),
    "priors-nan-value": Case(
        _run_baseline_with("value = 90", "value = nan"),
        lambda p: [*PRIORS_IN(p), "training.duration_days", "finite"],
    ),
    "priors-inf-value": Case(
        _run_baseline_with("value = 90", "value = inf"),
        lambda p: [*PRIORS_IN(p), "training.duration_days", "finite"],
    ),
    "priors-string-value": Case(
        _run_baseline_with("value = 90", 'value = "ninety"'),
        lambda p: [*PRIORS_IN(p), "training.duration_days", "number"],
    ),
    "priors-unsorted-quantiles": Case(
        _run_baseline_with(
            "quantiles = { p10 = 2.5, p50 = 4.5, p90 = 6.5 }",
            "quantiles = { p10 = 6.5, p50 = 4.5, p90 = 2.5 }",
        ),
        lambda p: [*PRIORS_IN(p), "latency.kernel_us"],
    ),
    "priors-two-distributions": Case(
        _run_baseline_with("value = 90", "value = 90\ninterval90 = [60, 120]"),
        lambda p: [*PRIORS_IN(p), "training.duration_days", "two distributions"],
    ),
    "priors-unknown-key": Case(
        _run_priors(
            BASELINE.read_text() + '\n[training.durration_days]\nvalue = 3\nsource = "x"\n'
        ),
        lambda p: [*PRIORS_IN(p), "training.durration_days", "did you mean"],
    ),
    "priors-missing-key": Case(
        _run_baseline_with("[training.duration_days]", "[ignored_group.duration_days]"),
        lambda p: [*PRIORS_IN(p)],
    ),
    "priors-invalid-toml": Case(
        _run_priors((CASES_DIR / "invalid-toml.toml").read_bytes()),
        lambda p: [*PRIORS_IN(p), "line", "invalid TOML"],
    ),
    "priors-not-utf8": Case(
        _run_priors((CASES_DIR / "latin1.toml").read_bytes()),
        lambda p: [*PRIORS_IN(p), "line 2", "not UTF-8"],
    ),
    "priors-utf16": Case(
        _run_priors(BASELINE.read_text().encode("utf-16")),
        lambda p: [*PRIORS_IN(p), "not UTF-8"],
    ),
    "priors-zero-bytes": Case(
        _run_priors(b""), lambda p: [*PRIORS_IN(p), "missing required parameter"]
    ),
    "priors-is-a-folder": Case(
        lambda p: (p.run("--priors", str(p.scenarios)), {}),
        lambda p: [str(p.scenarios), "cannot read prior file"],
    ),
    "priors-file-missing": Case(
        lambda p: (p.run("--priors", str(p.root / "nope.toml")), {}),
        lambda p: [str(p.root / "nope.toml")],
    ),
    "priors-formula-name": Case(
        _run_baseline_with('name = "baseline"', 'name = "@SUM(A1)"'),
        lambda p: [*PRIORS_IN(p), "meta.name", "must not start"],
    ),
    "priors-name-10000-chars": Case(
        _run_baseline_with('name = "baseline"', f'name = "{"x" * 10_000}"'),
        lambda p: [*PRIORS_IN(p), "at most 64"],
    ),
    "priors-name-with-invisible-char": Case(
        _run_baseline_with('name = "baseline"', 'name = "base\\u200bline"'),
        lambda p: [*PRIORS_IN(p), "invisible"],
    ),
    # ---- class 5 and 6: scenario overlays
    "overlay-run-of-1e300-days": Case(
        _run_overlays("endless-run.toml"),
        lambda p: ["endless-run.toml", "training.duration_days", "plausible range"],
    ),
    "overlay-growth-1e301": Case(
        _run_overlays("growth-1e301.toml"),
        lambda p: ["growth-1e301.toml", "line 4", "hardware.flops_growth_per_year"],
    ),
    "overlay-named-baseline": Case(
        _run_overlays("named-baseline.toml"),
        lambda p: ["named-baseline.toml", "baseline.toml", "reserved"],
    ),
    "overlays-with-one-name": Case(
        _run_overlays("twin-a.toml", "twin-b.toml"),
        lambda p: ["twin-a.toml", "twin-b.toml", "'twin'"],
    ),
    "overlay-formula-name": Case(
        _run_overlays("formula-name.toml"), lambda p: ["formula-name.toml", "meta.name"]
    ),
    "overlay-not-utf8": Case(_run_overlays("latin1.toml"), lambda p: ["latin1.toml", "UTF-8"]),
    "overlay-unknown-name": Case(
        lambda p: (p.run("--scenario", "no-such-scenario"), {}),
        lambda p: ["unknown scenario 'no-such-scenario'"],
    ),
    # ---- class 7: data and outputs folders
    "data-folder-without-hardware": Case(
        lambda p: ((p.data / "hardware.csv").unlink(), (p.run(), {}))[1],
        lambda p: [str(p.data / "hardware.csv"), "no such data table"],
    ),
    "data-folder-missing": Case(
        lambda p: (p.run()[:1] + ["--data-dir", str(p.root / "nodata")] + p.run()[3:], {}),
        lambda p: [str(p.root / "nodata")],
    ),
    "outputs-dir-is-a-file": Case(
        lambda p: (
            [*p.run()[:3], "--outputs-dir", str(p.data / "hardware.csv"), *p.run()[5:]],
            {},
        ),
        lambda p: [str(p.data / "hardware.csv"), "not a folder"],
    ),
    "outputs-forecasts-is-a-file": Case(
        lambda p: (
            (p.root / "out2").mkdir(),
            (p.root / "out2" / "forecasts").write_text("x"),
            ([*p.run()[:3], "--outputs-dir", str(p.root / "out2"), *p.run()[5:]], {}),
        )[2],
        lambda p: ["forecasts", "found a file"],
    ),
    "log-level-unknown": Case(
        lambda p: (p.run(), {"WALLCAST_LOG_LEVEL": "LOUD"}), lambda p: ["WALLCAST_LOG_LEVEL"]
    ),
    "run-draws-below-minimum": Case(lambda p: (p.run("--draws", "3"), {}), lambda p: ["--draws"]),
    "run-seed-not-a-number": Case(lambda p: (p.run("--seed", "abc"), {}), lambda p: ["--seed"]),
    # ---- class 7: forecasts that cannot be read, and bad query parameters
    "query-zero-byte-forecast": Case(
        _query(outputs=lambda p: p.broken_forecast(b"")),
        lambda p: ["broken-outputs", "forecast.nc"],
    ),
    "query-truncated-forecast": Case(
        _query(outputs=_truncated), lambda p: ["broken-outputs", "forecast.nc"]
    ),
    "query-corrupted-forecast": Case(
        _query(outputs=_corrupted), lambda p: ["broken-outputs", "forecast.nc"]
    ),
    "query-netcdf-without-forecast-group": Case(
        _query(outputs=_no_forecast_group),
        lambda p: ["broken-outputs", "not a wallcast forecast"],
    ),
    "query-text-file-as-forecast": Case(
        lambda p: (
            ["query", "--wall", "latency", "--forecast", str(p.data / "hardware.csv")],
            {},
        ),
        lambda p: ["hardware.csv"],
    ),
    "query-latest-points-nowhere": Case(
        _query(
            outputs=lambda p: (
                (p.root / "o3").mkdir(),
                (p.root / "o3" / "latest").write_text("forecasts/gone\n"),
                p.root / "o3",
            )[2]
        ),
        lambda p: ["latest", "forecasts/gone"],
    ),
    "query-latest-not-text": Case(
        _query(
            outputs=lambda p: (
                (p.root / "o4").mkdir(),
                (p.root / "o4" / "latest").write_bytes(b"\xff\xfe\x00"),
                p.root / "o4",
            )[2]
        ),
        lambda p: ["latest"],
    ),
    "query-no-forecast-yet": Case(
        _query(outputs=lambda p: (p.root / "empty").mkdir() or p.root / "empty"),
        lambda p: ["no published forecast yet"],
    ),
    "query-prob-nan": Case(_query("--prob", "nan"), lambda p: ["--prob", "finite"]),
    "query-prob-inf": Case(_query("--prob", "inf"), lambda p: ["--prob", "finite"]),
    "query-prob-above-range": Case(_query("--prob", "1.5"), lambda p: ["--prob", "1.5"]),
    "query-prob-zero": Case(_query("--prob", "0"), lambda p: ["--prob"]),
    "query-unknown-wall": Case(
        lambda p: (["query", "--wall", "bandwidth", "--outputs-dir", str(p.outputs)], {}),
        lambda p: ["--wall", "bandwidth"],
    ),
    "query-unknown-scenario": Case(
        _query("--scenario", "nope"), lambda p: ["unknown scenario 'nope'"]
    ),
    "query-unknown-what": Case(_query("--what", "cost-per-token"), lambda p: ["--what"]),
    "report-zero-byte-forecast": Case(
        lambda p: (
            [
                "report",
                "--outputs-dir",
                str(p.broken_forecast(b"")),
                "--out",
                str(p.root / "rep"),
            ],
            {},
        ),
        lambda p: ["broken-outputs", "forecast.nc"],
    ),
    "report-truncated-forecast": Case(
        lambda p: (
            ["report", "--outputs-dir", str(_truncated(p)), "--out", str(p.root / "rep")],
            {},
        ),
        lambda p: ["broken-outputs", "forecast.nc"],
    ),
    "deck-corrupted-forecast": Case(
        lambda p: (
            ["deck", "--outputs-dir", str(_corrupted(p)), "--out", str(p.root / "rep")],
            {},
        ),
        lambda p: ["broken-outputs", "forecast.nc"],
    ),
    "deck-netcdf-without-forecast-group": Case(
        lambda p: (
            ["deck", "--outputs-dir", str(_no_forecast_group(p)), "--out", str(p.root / "rep")],
            {},
        ),
        lambda p: ["broken-outputs"],
    ),
}

#: Cases also run through the console script in a subprocess (the interpreter start is ~1 s).
SUBPROCESS_CASES = ("priors-growth-1e301", "overlay-named-baseline", "query-prob-nan")


def _check(project: Project, case: Case, runner) -> None:
    data_before = snapshot(project.data)
    outputs_before = snapshot(project.outputs)
    args, env = case.make(project)
    proc = runner(args, env=env)
    assert_clean_error(proc, *case.mentions(project))
    assert snapshot(project.data) == data_before or not (project.data / "hardware.csv").exists()
    assert snapshot(project.outputs) == outputs_before
    latest = run_main(["query", "--wall", "latency", "--outputs-dir", str(project.outputs)])
    assert latest.returncode == 0, latest.stderr
    assert "latency" in latest.stdout
    assert processes_mentioning(str(project.root)) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_ends_in_one_error_line_and_changes_nothing(project: Project, name: str) -> None:
    _check(project, CASES[name], run_main)


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_console_script_gives_the_same_clean_error(project: Project, name: str) -> None:
    _check(project, CASES[name], lambda args, env: run_cli(args, env=env, timeout=120))


def test_corpus_size() -> None:
    """docs/reliability.md states the number of cases; keep it honest."""
    doc = (REPO_ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert f"{len(CASES)} cases" in doc
