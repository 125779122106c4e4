"""The seams between layers: folders from one resolver, one store package, flows only at the edge.

* every reading command (query, report, deck, analyse) finds ``latest`` under
  ``WALLCAST_OUTPUTS_DIR`` when no folder is given;
* ``analyse`` refits against the data folder a forecast was made from (its ``data_dir`` attr);
* the library never imports ``flows`` (import-graph test over the sources);
* ``run``, ``ingest`` and ``serve`` share one set of refresh options;
* the forecast id derives from the one run fingerprint.
"""

from __future__ import annotations

import ast
import shutil
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from forecast import store
from forecast.cli import app
from forecast.config import paths
from forecast.config.paths import DATA_TABLE_FILES

REPO = Path(__file__).resolve().parents[1]
FID = "20260101T000000Z-abcdef12"


def _toy_tree(data_dir: Path | None = None) -> xr.DataTree:
    rng = np.random.default_rng(0)
    hit_year = rng.normal(2030, 2, size=(1, 2, 50, 2))
    ds = xr.Dataset(
        {
            "hit_year": (("scenario", "chain", "draw", "wall"), hit_year, {"units": "year"}),
            "hit_flop": (("scenario", "chain", "draw", "wall"), 10 ** (28 + (hit_year - 2030) / 2)),
        },
        coords={"scenario": ["baseline"], "wall": ["data_movement", "latency"]},
    )
    tree = xr.DataTree.from_dict({"/forecast": ds})
    tree.attrs.update({"id": FID, "data_dir": str(data_dir) if data_dir else ""})
    return tree


@pytest.fixture
def env_outputs(tmp_path: Path, monkeypatch) -> Path:
    """A published toy forecast under an outputs folder named only by WALLCAST_OUTPUTS_DIR."""
    outputs = tmp_path / "elsewhere"
    store.publish(_toy_tree(), outputs, FID)
    monkeypatch.setenv(paths.OUTPUTS_DIR_ENV, str(outputs))
    monkeypatch.chdir(tmp_path)
    return outputs


# ----------------------------------------------------------------------------- WALLCAST_OUTPUTS_DIR


def test_query_reads_latest_under_the_outputs_env(env_outputs: Path):
    import json

    res = CliRunner().invoke(app, ["query", "--wall", "data_movement", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["forecast_id"] == FID
    assert Path(out["forecast"]) == env_outputs / "forecasts" / FID / "forecast.nc"
    values = _toy_tree()["forecast"]["hit_year"].sel(wall="data_movement").values
    assert out["median"] == pytest.approx(np.quantile(values, 0.5))


def test_report_deck_and_analyse_read_latest_under_the_outputs_env(env_outputs, monkeypatch):
    import forecast.jobs.analyse_job
    import forecast.report

    seen: dict[str, Path] = {}

    def fake_report(path, out=None, **kwargs):
        seen["report"] = Path(path)
        return {"report_html": "r.html", "report_md": "r.md"}

    def fake_deck(path, out=None, **kwargs):
        seen["deck"] = Path(path)
        return "d.pptx"

    def fake_analyse(path, **kwargs):
        seen["analyse"] = Path(path)
        raise store.ForecastNotFoundError("stop here")  # the wiring is what is tested

    monkeypatch.setattr(forecast.report, "write_report_files", fake_report)
    monkeypatch.setattr(forecast.report, "write_deck_file", fake_deck)
    monkeypatch.setattr(forecast.jobs.analyse_job, "analyse", fake_analyse)
    expected = env_outputs / "forecasts" / FID / "forecast.nc"
    runner = CliRunner()
    assert runner.invoke(app, ["report"]).exit_code == 0
    assert runner.invoke(app, ["deck"]).exit_code == 0
    res = runner.invoke(app, ["analyse"])
    assert res.exit_code == 2 and res.stderr.strip() == "error: stop here"
    assert seen == {"report": expected, "deck": expected, "analyse": expected}


def test_reading_commands_without_a_forecast_say_so(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(paths.OUTPUTS_DIR_ENV, str(tmp_path / "empty"))
    for command in (["query", "--wall", "latency"], ["report"], ["deck"], ["analyse"]):
        res = CliRunner().invoke(app, command)
        assert res.exit_code == 2, command
        assert res.stderr.startswith(f"error: {tmp_path / 'empty' / 'latest'}: no published")
        assert "Traceback" not in res.output


# ----------------------------------------------------------------------------- data folder


def _smaller_data_dir(tmp_path: Path) -> tuple[Path, int]:
    """A copy of data/ without the accelerator table's last row; returns (folder, rows)."""
    data = tmp_path / "data-copy"
    data.mkdir()
    for name in DATA_TABLE_FILES[1:]:
        shutil.copy(REPO / "data" / name, data / name)
    lines = (REPO / "data" / "hardware.csv").read_text().splitlines(keepends=True)
    (data / "hardware.csv").write_text("".join(lines[:-1]))
    return data, len(lines) - 2


def test_backtest_refits_against_the_data_folder_the_forecast_was_made_from(
    tmp_path: Path, monkeypatch
):
    from forecast.analyses import backtest
    from forecast.data.hardware import load_hardware
    from forecast.jobs import analyse_job

    data, rows = _smaller_data_dir(tmp_path)
    assert rows < len(load_hardware())
    outputs = tmp_path / "outputs"
    path = store.publish(_toy_tree(data), outputs, FID) / store.FORECAST_FILE
    used: dict[str, int] = {}

    def fake_backtest(hardware, frontier, priors, origins, **kwargs):
        used["rows"] = len(hardware)
        raise store.ForecastNotFoundError("stop")

    monkeypatch.setattr(backtest, "run_backtest", fake_backtest)
    with pytest.raises(store.ForecastNotFoundError):
        analyse_job.backtest(forecast=path)
    assert used["rows"] == rows  # the recorded folder, not the default one
    assert store.recorded_data_dir({"data_dir": str(data)}) == data
    # an older forecast (no attr) or a folder that is gone: the resolver's folder
    monkeypatch.setenv(paths.DATA_DIR_ENV, str(data))
    assert store.recorded_data_dir({}) == data
    monkeypatch.delenv(paths.DATA_DIR_ENV)
    assert store.recorded_data_dir({"data_dir": str(tmp_path / "gone")}) == REPO / "data"


def test_published_forecast_records_its_data_folder_and_fingerprint(tmp_path: Path):
    data, rows = _smaller_data_dir(tmp_path)
    inputs = SimpleNamespace(
        data_hash="d" * 64,
        data_dir=data,
        priors=SimpleNamespace(name="baseline", path="priors/baseline.toml", text="[a]\n"),
        scenarios={"baseline": SimpleNamespace(text="[a]\n")},
        hardware=[0] * rows,
        frontier_runs=[0] * 3,
    )
    created = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    attrs = store.provenance_attrs(
        inputs, ["baseline"], seed=1, chains=2, draws=100, code="c", created=created
    )
    base = dict(
        data_hash="d" * 64,
        priors_text="[a]\n",
        scenario_texts={"baseline": "[a]\n"},
        seed=1,
        chains=2,
        draws=100,
        years=None,
        code="c",
    )
    fp = store.fingerprint(**base)
    assert attrs["run_fingerprint"] == fp and len(fp) == 64
    assert attrs["id"] == f"20260102T030405Z-{fp[:8]}" == store.forecast_id(created, fp)
    assert attrs["data_dir"] == str(data.resolve()) and attrs["hardware_rows"] == rows
    # every input of the fingerprint changes it
    other = store.provenance_attrs(
        inputs, ["baseline"], seed=2, chains=2, draws=100, code="c", created=created
    )
    assert other["run_fingerprint"] != fp
    grid = store.provenance_attrs(
        inputs, ["baseline"], seed=1, chains=2, draws=100, years=[2024, 2045], code="c"
    )
    assert grid["run_fingerprint"] != fp
    # the plans searched: a realistic forecast is another forecast; a paper one keeps the
    # fingerprint it had before the regime was recorded (the digest above names no regime)
    realistic = store.provenance_attrs(
        inputs, ["baseline"], seed=1, chains=2, draws=100, code="c", regime="realistic"
    )
    assert realistic["run_fingerprint"] != fp and realistic["regime"] == "realistic"
    assert attrs["regime"] == "paper"
    # a warm-up other than the default is another forecast; None or the default itself (2,000
    # for 100 draws) digests nothing
    assert store.fingerprint(**base, warmup=None) == fp == store.fingerprint(**base, warmup=2000)
    assert store.fingerprint(**base, warmup=500) != fp
    assert store.inputs_fingerprint(
        inputs, ["baseline"], seed=1, chains=2, draws=100, years=None, code="c",
        propagate_draws=None, warmup=500,
    ) == store.fingerprint(**base, warmup=500)  # fmt: skip


# ----------------------------------------------------------------------------- import graph


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, at module level?) for every import statement of a source file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, id(node) in top))
    return found


def test_the_library_never_imports_flows():
    """``forecast`` (storage, ingest, pipeline, query, report, ...) does not import ``flows``;
    only the CLI's refresh commands do, inside the command bodies; ``flows`` never imports the
    CLI."""
    for path in sorted((REPO / "forecast").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        flows = [(m, top) for m, top in _imports(path) if m == "flows" or m.startswith("flows.")]
        if rel == "forecast/cli/refresh.py":
            assert flows and not any(top for _, top in flows), rel
        else:
            assert not flows, f"{rel} imports {flows}"
    for path in sorted((REPO / "flows").rglob("*.py")):
        assert not [m for m, _ in _imports(path) if m.startswith("forecast.cli")], path


def _predictive_calls_without_parallel(path: Path) -> list[int]:
    """Lines of ``Predictive(...)`` calls in ``path`` that pass no ``parallel`` keyword."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name == "Predictive" and not any(k.arg == "parallel" for k in node.keywords):
                lines.append(node.lineno)
    return lines


def test_every_predictive_call_says_whether_it_is_vectorized(tmp_path: Path):
    """NumPyro's ``Predictive`` maps the model over the samples one at a time unless told
    ``parallel=True``: a program of its own to compile and thousands of sequential steps
    (BENCHMARKS.md section 7: the backtest 1.28x, the laws' hold-outs 1.21x when vectorized).
    Every call in the library says which it does."""
    missing = {
        path.relative_to(REPO).as_posix(): lines
        for path in sorted((REPO / "forecast").rglob("*.py"))
        if (lines := _predictive_calls_without_parallel(path))
    }
    assert not missing, missing
    # the check sees a call that omits it
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from numpyro.infer import Predictive\nPredictive(model, num_samples=4)(key)\n"
    )
    assert _predictive_calls_without_parallel(probe) == [2]


def test_flows_holds_only_prefect_modules():
    for path in sorted((REPO / "flows").glob("*.py")):
        if path.name == "__init__.py":
            continue
        assert any(m == "prefect" or m.startswith("prefect.") for m, _ in _imports(path)), path


# ----------------------------------------------------------------------------- refresh options


def _option_names(command: str) -> set[str]:
    import typer.main

    click_app = typer.main.get_command(app)
    return {o for p in click_app.commands[command].params for o in [*p.opts, *p.secondary_opts]}


def test_run_ingest_and_serve_share_the_refresh_options():
    from forecast.cli.options import REFRESH_PARAMETERS

    refresh = {"--priors", "--scenario", "--data-dir", "--outputs-dir", "--draws", "--chains"}
    refresh |= {"--seed", "--year-step", "--keep", "--report", "--no-report", "--propagate-draws"}
    refresh |= {"--regime", "--warmup"}
    assert len(REFRESH_PARAMETERS) == 13
    for command in ("run", "ingest", "serve"):
        assert refresh <= _option_names(command), command
    # one meaning per name: the sensitivity's wall-computation step has its own
    assert "--wall-year-step" in _option_names("sensitivity")
    assert "--year-step" not in _option_names("sensitivity")


def test_ingest_refreshes_with_priors_scenario_and_year_step(tmp_path: Path, monkeypatch):
    import forecast.cli.refresh as cli_refresh
    from forecast.data.hardware import HARDWARE_COLUMNS

    data = tmp_path / "data"
    data.mkdir()
    for name in DATA_TABLE_FILES:
        shutil.copy(REPO / "data" / name, data / name)
    new = tmp_path / "new.csv"
    new.write_text(
        ",".join(HARDWARE_COLUMNS) + "\n"
        "Test Accel X1,TestCo,2026-03,announced,true,2.5e15,5.0e15,1.2e13,2.88e11,1.8e12,72,"
        "switched,1.0e11,https://example.com/x1,Synthetic accelerator for tests\n"
    )
    seen = {}

    def fake_refresh(refresh, **kwargs):
        seen.update(refresh.flow_parameters())
        raise store.LockBusyError("another refresh is running (pid 1)", 1)

    monkeypatch.setattr(cli_refresh, "_run_refresh", fake_refresh)
    priors = REPO / "priors" / "baseline.toml"
    res = CliRunner().invoke(
        app,
        ["ingest", str(new), "--data-dir", str(data), "--priors", str(priors),
         "--scenario", "six-month-runs", "--year-step", "7", "--draws", "60", "--chains", "1",
         "--warmup", "80"],
    )  # fmt: skip
    assert res.exit_code == 2 and "another refresh is running (pid 1)" in res.stderr
    assert seen["priors"] == str(priors) and seen["scenarios"] == ["six-month-runs"]
    assert seen["years"] == [2024.0, 2031.0, 2038.0, 2045.0]
    assert seen["data_dir"] == str(data) and seen["outputs_dir"] is None
    assert (seen["draws"], seen["chains"], seen["warmup"]) == (60, 1, 80)


# ----------------------------------------------------------------------------- layer contract


def _check_layers():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "check_layers", REPO / "scripts" / "check_layers.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layer_contract_holds():
    """No upward import, no JAX below the computing layers, no cycle, every function-level import
    says why, long modules name their one concept (scripts/check_layers.py, also in make lint)."""
    problems, counts = _check_layers().check()
    assert problems == []
    # 191 function-level imports in the package before its folders were layers: a 75 % cut
    # +2 for the what-if (issue 24): the CLI command loads SciPy and h5py, the service Prefect
    assert counts["function_imports"] <= 49


def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch):
    """A store module that imports the model is refused, and so is a cycle."""
    checker = _check_layers()
    package = tmp_path / "forecast"
    for folder in ("store", "model"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "store" / "reader.py").write_text("from forecast.model import physics\n")
    (package / "model" / "physics.py").write_text("import forecast.model.other\n")
    (package / "model" / "other.py").write_text("import forecast.model.physics\n")
    monkeypatch.setattr(checker, "ROOT", tmp_path)
    monkeypatch.setattr(checker, "PACKAGE", package)
    problems, _ = checker.check()
    assert any("store imports forecast.model.physics: a JAX-free layer" in p for p in problems)
    assert any(
        p.startswith("import cycle: forecast.model.other -> forecast.model.physics")
        for p in problems
    )


def _loaded_after(imports: str, libraries: tuple[str, ...]) -> list[str]:
    import json
    import subprocess
    import sys

    code = (
        f"import json, sys, {imports}; "
        f"print(json.dumps(sorted(m for m in {libraries!r} if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_reading_commands_import_neither_jax_nor_xarray():
    """The CLI, the service app and the store/queries layers load without JAX or xarray."""
    imports = "forecast.cli, forecast.service.app, forecast.store, forecast.queries.answers"
    assert _loaded_after(imports, ("jax", "numpyro", "xarray")) == []


def test_the_command_line_starts_light():
    """`wallcast --help` and `wallcast query` load none of the heavy libraries: each command
    loads what it needs when it runs (FastAPI for `api`, pandas for `ingest`, JAX for searches)."""
    heavy = ("jax", "xarray", "pandas", "scipy", "fastapi", "prefect", "matplotlib", "h5py")
    assert _loaded_after("forecast.cli", heavy) == []
