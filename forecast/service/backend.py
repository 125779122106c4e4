"""The service's one door to wallcast: published forecasts, queries, headline and the model.

Routes call only this module, so that a change in where storage, query or walls code lives
changes only these functions.  Reads never import JAX: forecasts are read with h5py and NumPy
(xarray only for the headline); the plan search (``walls``, ``curve``) imports the model lazily
and caches every answer per hardware-table hash and parameters, so no search runs twice.

Published forecasts are immutable, but ``wallcast analyse`` may rewrite a file in place
(``os.replace``) and a refresh moves ``latest``: every cache key holds the file's path, inode,
size and modification time, and ``latest`` is read on every request, so a new forecast is served
without a restart.

Reading is confined and fails cleanly: every path read or listed resolves (symlinks followed)
inside the outputs folder, only regular files are opened (a FIFO would block), and a storage
failure (unreadable pointer, corrupt or truncated file, permission denied) is a
:class:`ForecastUnreadableError` that the app answers with a JSON 503 naming the forecast id, never a path;
the path and the reason go to the server's log. When ``latest`` is unreadable, default requests
are answered from the newest readable forecast, and the answer says so (``fallback_from``).

One concept: the service's read model of published forecasts - the cached metadata and arrays each route answers from.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from forecast.config.errors import WallcastError
from forecast.config.paths import data_dir as data_folder
from forecast.config.paths import hardware_path, outputs_dir
from forecast.data.hardware import get_accelerator, load_hardware
from forecast.queries.answers import COST_VARIABLES, WHATS, interval, json_ready, query_json
from forecast.queries.headline import Forecast, headline, paper_beside_sentence
from forecast.service.guard import ECHO_CHARS, MAX_ROWS, ClientGoneError, RowLimitError, shown
from forecast.store.attrs import wall_year_step
from forecast.store.catalog import Catalog, CatalogError, is_regular
from forecast.store.layout import FORECAST_FILE, FORECASTS_DIR, LATEST_POINTER
from forecast.store.reader import ForecastReadError, read_layout, read_variable

log = logging.getLogger("wallcast.service")

SAMPLE_DIMS = ("chain", "draw")
WALLS = ("data_movement", "latency")
PRECISIONS = ("bf16", "fp8")
REGIMES = ("paper", "realistic")  # forecast.model.search.REGIMES, without importing JAX (tested)
PLAN_DRAWS = 500  # forecast.analyses.planner.DEFAULT_DRAWS
PLAN_MAX_DRAWS = 4000  # forecast.analyses.planner.MAX_DRAWS
PLAN_FLOP_RANGE = (1e20, 1e40)  # the plan search's compute grid
REQUIREMENTS_DRAWS = 200  # forecast.analyses.planner.REQUIREMENTS_DRAWS
REQUIREMENTS_MAX_DRAWS = 1000  # 12 batched searches of 5 levers per draw
#: forecast.analyses.forecast_walls.ASSUMPTION_SOURCES (a test keeps them equal)
ASSUMPTION_SOURCES = ("forecast", "paper")
PROB_RANGE = (0.01, 0.99)  # as `wallcast query --prob`
DURATION_DAYS_RANGE = (1.0, 3650.0)
DURATION_DAYS_STEP = 1.0
"""Plan searches take the run length rounded to whole days: one cache entry per day, not per
float (a wall moves by ~0.5 % per day of a 90-day run)."""
CURVE_LOG10_FLOP = (22.0, 33.0)  # as `wallcast curve`
CURVE_STEP = 0.05
DOWNLOADS = {
    "forecast.nc": "application/x-netcdf",
    "report.html": "text/html; charset=utf-8",
    "deck.pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}


class UnknownForecastError(WallcastError, LookupError):
    """No published forecast of that id (HTTP 404)."""


class BadParameterError(WallcastError, ValueError):
    """A request parameter out of its allowed values (HTTP 422); names the parameter."""

    def __init__(self, parameter: str, value: Any, allowed: Sequence[Any] | str, why: str = ""):
        self.parameter = parameter
        self.value = value
        self.allowed = list(allowed) if not isinstance(allowed, str) else allowed
        listed = ", ".join(map(str, allowed)) if not isinstance(allowed, str) else allowed
        if len(listed) > 400:
            listed = listed[:400] + "..."
        reason = why or f"unknown value {shown(value)}"
        super().__init__(f"parameter '{parameter}': {reason}; allowed: {listed}")


class ServerDataError(WallcastError, OSError):
    """The server's own data cannot be read (HTTP 503): not the caller's fault.

    ``str()`` is what the client sees (no path); ``detail`` is logged on the server."""

    def __init__(self, message: str, detail: str = "", forecast_id: str | None = None) -> None:
        self.forecast_id = forecast_id
        self.detail = detail
        super().__init__(message)


class ForecastUnreadableError(ServerDataError):
    """A published forecast (or the ``latest`` pointer) cannot be read (HTTP 503)."""

    def __init__(self, forecast_id: str | None, reason: str, detail: str = "") -> None:
        self.reason = reason
        what = f"forecast {forecast_id}" if forecast_id else "the outputs folder"
        super().__init__(f"{what} is unreadable: {reason}", detail, forecast_id)


# ----------------------------------------------------------------------------- reading forecasts


@dataclass(frozen=True)
class FileKey:
    """Identity of a forecast file's content: path plus inode, size and mtime."""

    path: str
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileKey:
        """Identity of a regular file (ValueError for anything else: a FIFO would block h5py)."""
        st = path.stat()
        if not is_regular(st):
            raise ValueError(f"{path} is not a regular file")
        return cls(str(path), st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class ForecastMeta:
    """Root attributes, coordinates and variables of a forecast's ``/forecast`` group."""

    attrs: dict[str, Any]
    coords: dict[str, list]
    variables: dict[str, dict[str, Any]]  # name -> {"dims": [...], "units": str}
    groups: list[str] = field(default_factory=list)


@lru_cache(maxsize=64)
def _read_meta(key: FileKey) -> ForecastMeta:
    attrs, groups, variables, coords = read_layout(key.path)
    return ForecastMeta(attrs, coords, variables, groups)


@lru_cache(maxsize=8)  # a variable of a full forecast is ~10 MB
def _read_variable(key: FileKey, name: str) -> np.ndarray:
    values = read_variable(key.path, "forecast", name)[1]
    values.setflags(write=False)
    return values


@lru_cache(maxsize=1024)
def _cached_query(
    key: FileKey, wall: str | None, what: str, scenario: str | None, prob: float, year=None
) -> dict:
    return query_json(key.path, wall, what, scenario, prob, year)


def forecast_summary(forecast_id: str, meta: ForecastMeta, latest_id: str | None) -> dict:
    """The listing entry of one forecast (``GET /v1/forecasts``)."""
    a = meta.attrs
    return {
        "id": forecast_id,
        "created": a.get("created"),
        "data_hash": a.get("data_hash"),
        "seed": a.get("seed"),
        "code_version": a.get("code_version"),
        "regime": a.get("regime", "paper"),
        "wall_year_step": wall_year_step(a),  # walls searched every this many years
        "scenarios": meta.coords.get("scenario", []),
        "walls": meta.coords.get("wall", []),
        "years": [meta.coords["year"][0], meta.coords["year"][-1]]
        if meta.coords.get("year")
        else [],
        "chains": len(meta.coords.get("chain", [])),
        "draws": len(meta.coords.get("draw", [])),
        "latest": forecast_id == latest_id,
        "links": {
            name: f"/v1/forecasts/{forecast_id}/{name}" for name in ("intervals", *DOWNLOADS)
        },
    }


# ----------------------------------------------------------------------------- the backend


def _check_prob(prob: float) -> float:
    lo, hi = PROB_RANGE
    if not (math.isfinite(prob) and lo <= prob <= hi):
        raise BadParameterError("prob", prob, f"a number from {lo} to {hi}", f"got {prob}")
    return float(prob)


@dataclass
class Backend:
    """Forecasts published under one outputs folder (``WALLCAST_OUTPUTS_DIR`` by default)."""

    outputs: Path = field(default_factory=outputs_dir)
    data_dir: Path | None = None

    # -- forecasts

    @property
    def catalog(self) -> Catalog:
        """The published forecasts under :attr:`outputs` (the one way the service finds them)."""
        return Catalog(self.outputs)

    def forecast_ids(self) -> list[str]:
        """Published forecast ids, oldest first (ids sort by creation time)."""
        with _catalog():
            return self.catalog.ids()

    def _pointer(self) -> tuple[str | None, str | None]:
        """(the forecast id ``outputs/latest`` names, what is wrong with the pointer): (None,
        None) when there is no pointer (or an empty one)."""
        with _catalog():
            name, problem, text = self.catalog.pointer()
        if problem and text:
            problem = f"{problem} ({shown(text)})"
        return name, problem

    def latest_id(self) -> str | None:
        """The id ``outputs/latest`` names, or None (no pointer, or one that names no forecast
        folder, or cannot be read). Its file may still be unreadable: :meth:`served_latest`."""
        return self._pointer()[0]

    def _no_forecast(self) -> UnknownForecastError:
        return UnknownForecastError("no published forecast; run `wallcast run` first")

    def forecast_dir(self, forecast_id: str) -> Path:
        """The folder of a published forecast; ``latest`` follows the pointer.

        Only names listed in ``outputs/forecasts/`` whose files resolve inside the outputs folder
        are accepted, so no id can reach a file outside it (``..``, slashes, absolute paths and
        symlinks out are all refused).
        """
        if forecast_id == LATEST_POINTER:
            forecast_id = self.served_latest()[0]
        with _catalog():
            folder = self.catalog.forecast_dir(forecast_id)
        if folder is None:
            raise UnknownForecastError(f"no published forecast with id {shown(forecast_id)}")
        return folder

    def _read_meta_of(self, forecast_id: str) -> tuple[Path, ForecastMeta]:
        path = self.forecast_dir(forecast_id) / FORECAST_FILE
        with _reading(
            forecast_id, path, "the file is not a readable forecast (corrupt or truncated)"
        ):
            return path, _read_meta(FileKey.of(path))

    def meta(self, forecast_id: str | None) -> tuple[str, Path, ForecastMeta]:
        """(id, file, metadata) of a forecast; ``None`` and ``latest`` mean the latest one, or,
        when that is unreadable, the newest readable one (:meth:`resolve`)."""
        return self.resolve(forecast_id)[:3]

    def resolve(
        self, forecast_id: str | None, regime: str | None = None
    ) -> tuple[str, Path, ForecastMeta, str | None]:
        """(id, file, metadata, why the latest was not served: None when it was or when an id was
        named), resolving ``latest`` once per request.

        ``regime`` (``paper`` or ``realistic``): with no id (or ``latest``), the newest readable
        forecast of that plan regime, the served latest when it is one; with an id, that
        forecast must be of the regime (400 otherwise)."""
        if regime is not None:
            return self._resolve_regime(forecast_id, regime)
        if forecast_id is None or forecast_id == LATEST_POINTER:
            return self._resolve_latest()
        path, meta = self._read_meta_of(forecast_id)
        return forecast_id, path, meta, None

    def _resolve_regime(
        self, forecast_id: str | None, regime: str
    ) -> tuple[str, Path, ForecastMeta, str | None]:
        if regime not in REGIMES:
            raise BadParameterError("regime", regime, list(REGIMES))
        if forecast_id is not None and forecast_id != LATEST_POINTER:
            found = self.resolve(forecast_id)
            has = found[2].attrs.get("regime", "paper")
            if has != regime:
                raise BadParameterError(
                    "regime", regime, [has], f"forecast {forecast_id} is of the {has} regime"
                )
            return found
        served = self._resolve_latest()
        if served[2].attrs.get("regime", "paper") == regime:
            return served
        for fid in reversed(self.forecast_ids()):
            try:
                path, meta = self._read_meta_of(fid)
            except (ForecastUnreadableError, UnknownForecastError):
                continue
            if meta.attrs.get("regime", "paper") == regime:
                return fid, path, meta, None
        raise UnknownForecastError(
            f"no published forecast of the {regime} regime; run `wallcast run --regime {regime}`"
        )

    def served_latest(self) -> tuple[str, str | None]:
        """(the forecast served as latest, why it is not the pointer's: None when it is)."""
        fid, _, _, why = self._resolve_latest()
        return fid, why

    def _resolve_latest(self) -> tuple[str, Path, ForecastMeta, str | None]:
        """The forecast served as latest: (id, file, metadata, why it is not the pointer's).

        When ``latest`` cannot be read, names no forecast, or names one that cannot be read,
        the newest readable published forecast is served instead, and the reason says why: the
        last good forecast stays published. With nothing readable: ForecastUnreadableError (503),
        or UnknownForecastError (404) when nothing was ever published."""
        named, problem = self._pointer()
        reason = ""
        if named is not None:
            try:
                return named, *self._read_meta_of(named), None
            except (ForecastUnreadableError, UnknownForecastError) as exc:
                reason = getattr(
                    exc, "reason", "its forecast file is missing or not a regular file"
                )
                problem = f"latest forecast {named} is unreadable ({reason})"
        ids = self.forecast_ids()
        if problem is None:  # no pointer at all
            if not ids:
                raise self._no_forecast()
            problem = "there is no latest pointer"
        for fid in reversed(ids):
            if fid == named:
                continue
            try:
                return fid, *self._read_meta_of(fid), problem
            except (ForecastUnreadableError, UnknownForecastError):
                continue
        if named is not None:
            raise ForecastUnreadableError(named, reason)
        raise ForecastUnreadableError(None, problem)

    def health(self) -> dict:
        """``ok`` when the latest forecast (if any) is readable; else ``degraded``, why, and the
        forecast served instead (``serving``, None when there is none)."""
        try:
            count = len(self.forecast_ids())
        except ForecastUnreadableError as exc:
            return {"status": "degraded", "reason": str(exc), "latest": None, "forecasts": 0}
        out: dict[str, Any] = {"status": "ok", "latest": self.latest_id(), "forecasts": count}
        try:
            served, why = self.served_latest()
        except UnknownForecastError:  # nothing published yet: healthy, and empty
            return out
        except ForecastUnreadableError as exc:
            return {**out, "status": "degraded", "reason": str(exc), "serving": None}
        if why is not None:
            out.update(status="degraded", reason=why, serving=served)
        return out

    def list_forecasts(self, regime: str | None = None) -> list[dict]:
        """The listing entries of every readable forecast (of one plan regime if ``regime``)."""
        if regime is not None and regime not in REGIMES:
            raise BadParameterError("regime", regime, list(REGIMES))
        latest = self.latest_id()
        out = []
        for fid in self.forecast_ids():
            try:
                _, meta = self._read_meta_of(fid)
            except (
                UnknownForecastError,
                ForecastUnreadableError,
            ):  # removed meanwhile, or unreadable
                continue
            if regime is None or meta.attrs.get("regime", "paper") == regime:
                out.append(forecast_summary(fid, meta, latest))
        return out

    def describe(self, forecast_id: str | None) -> dict:
        fid, _, meta, why = self.resolve(forecast_id)
        out = forecast_summary(fid, meta, self.latest_id())
        out["variables"] = meta.variables
        out["years"] = meta.coords.get("year", [])
        out["groups"] = meta.groups
        folder = self.catalog.forecasts_dir / fid
        out["files"] = [n for n in DOWNLOADS if self.catalog.readable_file(folder / n)]
        if why:
            out["fallback_from"] = why
        return out

    def open_download(self, forecast_id: str, name: str) -> tuple[Any, int, str]:
        """(open binary file, size, forecast id) of a download, opened before any header is
        sent: a file that cannot be opened is a JSON error, not a dropped connection."""
        if name not in DOWNLOADS:
            raise UnknownForecastError(f"no file {shown(name)}; files: {', '.join(DOWNLOADS)}")
        fid = self.meta(forecast_id)[0] if forecast_id == LATEST_POINTER else forecast_id
        path = self.forecast_dir(fid) / name
        if not path.exists() or not self.catalog.inside(path):
            raise UnknownForecastError(
                f"forecast {fid} has no {name} (`wallcast report` / `wallcast deck`)"
            )
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            log.warning("download %s/%s cannot be opened: %r", fid, name, exc)
            raise ForecastUnreadableError(fid, f"its {name} cannot be opened", repr(exc)) from None
        st = os.fstat(fd)
        if not is_regular(st):
            os.close(fd)
            raise ForecastUnreadableError(fid, f"its {name} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), st.st_size, fid

    # -- queries

    def query(
        self,
        wall: str | None,
        what: str = "year",
        scenario: str | None = None,
        prob: float = 0.8,
        forecast: str | None = None,
        year: int | None = None,
        regime: str | None = None,
    ) -> dict:
        """The answer of ``wallcast query --json`` (same function), parameters checked first;
        ``regime`` picks the newest forecast of that plan regime (:meth:`resolve`).

        ``what=cost`` needs ``year`` (a year of the forecast) and ignores ``wall``. The answer's
        ``forecast`` is the file's path relative to the outputs folder (no server path leaves);
        ``fallback_from`` says why the latest forecast was not the one answered, if it was not."""
        fid, path, meta, why = self.resolve(forecast, regime)
        if what not in WHATS:
            raise BadParameterError("what", what, sorted(WHATS))
        if what == "cost":
            years = [int(y) for y in meta.coords.get("year", [])]
            if year is None or int(year) not in years:
                why = "required for what=cost" if year is None else f"{year} not in the forecast"
                raise BadParameterError("year", year, f"a year from {years[0]} to {years[-1]}", why)
            missing = [v for v in COST_VARIABLES if v not in meta.variables]
            if missing:
                raise BadParameterError(
                    "what", what, ["year", "flop"], "this forecast has no cost variables"
                )
            wall = None
        else:
            walls = meta.coords.get("wall", [])
            if wall not in walls:
                raise BadParameterError("wall", wall, walls)
            year = None
        scenarios = meta.coords.get("scenario", [])
        if scenario is not None and scenario not in scenarios:
            raise BadParameterError("scenario", scenario, scenarios)
        prob = _check_prob(prob)
        with _reading(fid, path):
            out = dict(_cached_query(FileKey.of(path), wall, what, scenario, prob, year))
        out["forecast"] = f"{FORECASTS_DIR}/{fid}/{FORECAST_FILE}"
        if why:
            out["fallback_from"] = why
        return out

    def intervals(
        self,
        forecast_id: str,
        var: str = "hit_year",
        selection: dict[str, list[str]] | None = None,
        prob: float = 0.8,
    ) -> dict:
        """Credible intervals of one forecast variable over chains and draws, per coordinate.

        ``selection`` maps a dimension (``scenario``, ``wall``, ``year``) to the values to keep
        (all when absent).  For ``hit_year``, which has no ``year`` dimension, ``year`` values
        ask for the probability that the wall is hit by that year (``p_hit_by``).
        """
        fid, path, meta = self.meta(forecast_id)
        if var not in meta.variables:
            raise BadParameterError("var", var, list(meta.variables))
        prob = _check_prob(prob)
        dims = meta.variables[var]["dims"]
        if not all(d in dims for d in SAMPLE_DIMS):
            raise BadParameterError("var", var, [v for v in meta.variables if v != var])
        index: dict[str, list[int]] = {}
        by_years: list[float] = []
        years = [float(y) for y in meta.coords.get("year", [])]
        for dim, wanted in (selection or {}).items():
            wanted = list(dict.fromkeys(wanted or []))  # repeated values count once
            if not wanted:
                continue
            if dim not in dims:
                if dim == "year" and var == "hit_year":
                    by_years = list(dict.fromkeys(_year_value(v) for v in wanted))
                    for y in by_years:
                        if years and not (years[0] <= y <= years[-1]):
                            raise BadParameterError(
                                "year",
                                y,
                                f"a year from {years[0]:g} to {years[-1]:g}",
                                f"P(hit by {y:g}) is outside the forecast's years",
                            )
                    continue
                raise BadParameterError(
                    dim, wanted[0], [d for d in dims if d not in SAMPLE_DIMS], f"{var} has no {dim}"
                )
            index[dim] = list(dict.fromkeys(_coord_index(meta.coords[dim], dim, v) for v in wanted))
        free = [d for d in dims if d not in SAMPLE_DIMS]
        axes = [index.get(d, list(range(len(meta.coords[d])))) for d in free]
        n_rows = math.prod(len(a) for a in axes)
        if n_rows > MAX_ROWS:
            hint = "; select fewer " + ", ".join(f"{d}s" for d in free)
            raise RowLimitError(n_rows, MAX_ROWS, hint)
        with _reading(fid, path):
            values = _read_variable(FileKey.of(path), var)
        rows = []
        for combo in itertools.product(*axes):
            at = dict(zip(free, combo, strict=True))
            sub = values[tuple(at.get(d, slice(None)) for d in dims)]
            row: dict[str, Any] = {d: meta.coords[d][i] for d, i in at.items()}
            row.update(interval(sub, prob))
            if by_years:
                row["p_hit_by"] = [
                    {"year": y, "probability": float(np.mean(sub.ravel() <= y))} for y in by_years
                ]
            rows.append(json_ready(row))
        return {
            "forecast_id": fid,
            "var": var,
            "units": meta.variables[var]["units"],
            "prob": prob,
            "dims": free,
            "rows": rows,
        }

    def headline(self, forecast_id: str, scenario: str | None = None, prob: float = 0.8) -> dict:
        """The report's headline sentence (the wall hit first) for one scenario."""
        fid, path, meta = self.meta(forecast_id)
        scenarios = meta.coords.get("scenario", [])
        if scenario is not None and scenario not in scenarios:
            raise BadParameterError("scenario", scenario, scenarios)
        prob = _check_prob(prob)
        with _reading(fid, path):
            return dict(_cached_headline(FileKey.of(path), scenario, prob), forecast_id=fid)

    # -- the model (JAX, imported lazily)

    def hardware_table(self) -> Path:
        return hardware_path(self.data_dir)

    def _hardware(self) -> tuple[Path, str, tuple[dict, ...]]:
        """(hardware table, its hash, its accelerators); a missing or invalid table is the
        server's fault (ServerDataError, 503), its path only in the log."""
        table = self.hardware_table()
        try:
            digest = _file_hash(table)
            return table, digest, _accelerator_list(str(table), digest)
        except (WallcastError, OSError, ValueError) as exc:
            log.error("hardware table %s unusable: %s", table, exc)
            raise ServerDataError(
                "the server's hardware table is missing or invalid; the server's log has the cause",
                str(exc),
            ) from None

    def accelerators(self) -> list[dict]:
        return list(self._hardware()[2])

    def walls_job(
        self,
        accelerators: list[str] | None,
        duration_days: float = 90.0,
        precision: str = "bf16",
        regime: str | None = None,
        assumptions: str = "forecast",
    ) -> tuple[list[dict] | None, Callable[[threading.Event], list[dict]]]:
        """(the cached answer or None, the computation that answers) of :meth:`walls`: inputs
        checked and normalised (whole days) here, cheaply; the search runs where the caller puts
        it (the service's expensive-work queue).

        ``assumptions``: ``forecast`` (the served forecast's posterior inputs: its stored draws
        when they hold the request, read here; else computed over its inputs) or ``paper``
        (the paper's fixed assumptions)."""
        if regime is not None and regime not in REGIMES:
            raise BadParameterError("regime", regime, list(REGIMES))
        if assumptions not in ASSUMPTION_SOURCES:
            raise BadParameterError("assumptions", assumptions, list(ASSUMPTION_SOURCES))
        table, digest, names, days = self._model_inputs(accelerators, duration_days, precision)
        if assumptions == "forecast":
            return self._forecast_walls_job(table, digest, names, days, precision, regime)
        regime = regime or "paper"
        keys = [("walls", digest, name, days, precision, regime) for name in names]
        cached = [_MODEL_CACHE.get(k) for k in keys]

        def compute(cancelled: threading.Event) -> list[dict]:
            out = []
            for key, name in zip(keys, names, strict=True):
                if cancelled.is_set():  # the client left: no further accelerator is searched
                    raise ClientGoneError
                out.append(
                    _model_cached(
                        key, lambda n=name: _compute_walls(table, n, days, precision, regime)
                    )
                )
            return out

        return (cached if all(c is not None for c in cached) else None), compute

    def _forecast_walls_job(
        self,
        table: Path,
        digest: str,
        names: list[str],
        days: float,
        precision: str,
        regime: str,
        curve: bool = False,
    ) -> tuple[Any, Callable[[threading.Event], Any]]:
        """As :meth:`walls_job` over the served forecast's posterior draws: answered here when
        the forecast's stored group holds the request, else a computation for the queue."""
        # why here: the walls service imports xarray; the cheap endpoints must not wait for it
        from forecast.analyses import forecast_walls as aw

        fid, path, meta = self.meta(None)
        regime = regime or str(meta.attrs.get("regime", "paper"))  # cached metadata, no read
        settings = dict(duration_days=days, precision=precision, regime=regime, hardware=table)
        key = ("forecast-curve" if curve else "forecast-walls", fid, digest, tuple(names), days)
        key += (precision, regime)

        def answer() -> Any:
            with _reading(fid, path):
                if curve:
                    return aw.forecast_curve_record(path, names[0], **settings)
                return aw.forecast_walls_records(path, names, **settings)

        hit = _MODEL_CACHE.get(key)
        if hit is None and aw.stored_group_answers(path, names, curve=curve, **settings):
            hit = _model_cached(key, answer)
        return hit, (lambda cancelled: _model_cached(key, answer))

    def walls(
        self,
        accelerators: list[str] | None,
        duration_days: float = 90.0,
        precision: str = "bf16",
        regime: str | None = None,
        assumptions: str = "forecast",
    ) -> list[dict]:
        """Both walls of each accelerator, as ``wallcast walls --json`` (``assumptions``: see
        :meth:`walls_job`)."""
        cached, compute = self.walls_job(
            accelerators, duration_days, precision, regime, assumptions
        )
        return cached if cached is not None else compute(threading.Event())

    def curve_job(
        self,
        accelerator: str,
        duration_days: float = 90.0,
        precision: str = "bf16",
        regime: str | None = None,
        assumptions: str = "forecast",
    ) -> tuple[dict | None, Callable[[threading.Event], dict]]:
        """As :meth:`walls_job`, for :meth:`curve`."""
        if assumptions not in ASSUMPTION_SOURCES:
            raise BadParameterError("assumptions", assumptions, list(ASSUMPTION_SOURCES))
        table, digest, names, days = self._model_inputs([accelerator], duration_days, precision)
        name = names[0]
        if regime is not None and regime not in REGIMES:
            raise BadParameterError("regime", regime, list(REGIMES))
        if assumptions == "forecast":
            hit, compute_record = self._forecast_walls_job(
                table, digest, [name], days, precision, regime, curve=True
            )

            def shaped(record: dict) -> dict:
                keys = ("log10_flop", "utilization", "utilization_lower", "utilization_upper")
                return {**record, "curve": {k: record[k] for k in keys}}

            return (None if hit is None else shaped(hit)), (
                lambda cancelled: shaped(compute_record(cancelled))
            )
        regime = regime or "paper"
        walls_cached, walls_compute = self.walls_job([name], days, precision, regime, "paper")
        key = ("curve", digest, name, days, precision, regime)

        def compute(cancelled: threading.Event) -> dict:
            walls = walls_compute(cancelled)[0]
            if cancelled.is_set():
                raise ClientGoneError
            curve = _model_cached(key, lambda: _compute_curve(table, name, days, precision, regime))
            return {**walls, **curve}

        hit = _MODEL_CACHE.get(key)
        if walls_cached is not None and hit is not None:
            return {**walls_cached[0], **hit}, compute
        return None, compute

    def curve(
        self,
        accelerator: str,
        duration_days: float = 90.0,
        precision: str = "bf16",
        regime: str | None = None,
        assumptions: str = "forecast",
    ) -> dict:
        """Best utilization against training compute, with both walls, in a plan regime
        (``paper`` or ``realistic``) and over ``assumptions`` (see :meth:`walls_job`)."""
        cached, compute = self.curve_job(accelerator, duration_days, precision, regime, assumptions)
        return cached if cached is not None else compute(threading.Event())

    def plan_job(
        self,
        accelerators: list[str] | None,
        training_flop: float | None = None,
        year: int | None = None,
        duration_days: float = 90.0,
        precision: str = "bf16",
        draws: int = PLAN_DRAWS,
        regime: str = "realistic",
    ) -> tuple[dict | None, Callable[[threading.Event], dict]]:
        """(cached answer or None, the computation) of ``/v1/plan``: the planner's answer
        (:func:`forecast.analyses.planner.plan_answer`, the JSON of ``wallcast plan --json``'s
        search form) over the served forecast; parameters checked here (422 with the allowed
        values), the search queued by the caller."""
        if training_flop is not None and not (
            math.isfinite(training_flop)
            and PLAN_FLOP_RANGE[0] <= training_flop <= PLAN_FLOP_RANGE[1]
        ):
            raise BadParameterError(
                "flop",
                training_flop,
                f"FLOP from {PLAN_FLOP_RANGE[0]:g} to {PLAN_FLOP_RANGE[1]:g}",
                f"got {training_flop:g}",
            )
        if not 1 <= draws <= PLAN_MAX_DRAWS:
            raise BadParameterError("draws", draws, f"whole numbers from 1 to {PLAN_MAX_DRAWS}")
        regime = regime.lower()  # as the CLI's --regime
        if regime not in REGIMES:
            raise BadParameterError("regime", regime, list(REGIMES))
        fid, path, meta = self.meta(None)
        years = [int(float(y)) for y in meta.coords.get("year", [])]
        if year is not None and year not in years:
            raise BadParameterError("year", year, years)
        if training_flop is None and year is None:
            raise BadParameterError("flop", None, "a compute budget, or give year", "missing")
        if not accelerators and year is None:
            raise BadParameterError(
                "accelerator", None, "names of /v1/accelerators, or give year", "missing"
            )
        if accelerators:
            table, digest, names, days = self._model_inputs(accelerators, duration_days, precision)
        else:  # the frontier accelerator of the year: no row of the table to check
            if precision not in PRECISIONS:
                raise BadParameterError("precision", precision, PRECISIONS)
            days = _whole_days(duration_days)
            table, digest, _ = self._hardware()
            names = []
        costs = data_folder(self.data_dir) / "accelerator_costs.csv"
        costs_digest = _file_digest(costs)
        key = (
            "plan", fid, digest, costs_digest, tuple(names), training_flop, year, days, precision,
            draws, regime,
        )  # fmt: skip

        def answer(cancelled: threading.Event) -> dict:
            def compute() -> dict:
                with _reading(fid, path):
                    return _planner().plan_answer(
                        path,
                        accelerators=names or None,
                        year=year,
                        training_flop=training_flop,
                        duration_days=days,
                        precision=precision,
                        draws=draws,
                        hardware=table,
                        accelerator_costs=costs,
                        regime=regime,
                    )

            return _model_cached(key, compute)

        return _MODEL_CACHE.get(key), answer

    def requirements_job(
        self,
        year: int,
        duration_days: float = 90.0,
        precision: str = "bf16",
        draws: int = REQUIREMENTS_DRAWS,
    ) -> tuple[dict | None, Callable[[threading.Event], dict]]:
        """(cached answer or None, the computation) of ``/v1/requirements``: the JSON of
        ``wallcast requirements --json``
        (:func:`forecast.analyses.planner.requirements_answer`) over the served forecast;
        parameters checked here (422 with the allowed values), the search queued by the caller."""
        if not 1 <= draws <= REQUIREMENTS_MAX_DRAWS:
            raise BadParameterError(
                "draws", draws, f"whole numbers from 1 to {REQUIREMENTS_MAX_DRAWS}"
            )
        if precision not in PRECISIONS:
            raise BadParameterError("precision", precision, PRECISIONS)
        days = _whole_days(duration_days)
        fid, path, meta = self.meta(None)
        years = [int(float(y)) for y in meta.coords.get("year", [])]
        if year not in years:
            raise BadParameterError("year", year, years)
        key = ("requirements", fid, year, days, precision, draws)

        def answer(cancelled: threading.Event) -> dict:
            def compute() -> dict:
                with _reading(fid, path):
                    return _planner().requirements_answer(
                        path, year=year, duration_days=days, precision=precision, draws=draws
                    )

            return _model_cached(key, compute)

        return _MODEL_CACHE.get(key), answer

    def _model_inputs(
        self, accelerators: list[str] | None, duration_days: float, precision: str
    ) -> tuple[Path, str, list[str], float]:
        """(hardware table, its hash, accelerator names, run length rounded to whole days)."""
        if precision not in PRECISIONS:
            raise BadParameterError("precision", precision, PRECISIONS)
        days = _whole_days(duration_days)
        table, digest, known = self._hardware()
        all_names = [a["name"] for a in known]
        if not accelerators:
            names = all_names
        else:
            df = _hardware_frame(str(table), digest)
            names = []
            for wanted in accelerators:
                try:
                    name = get_accelerator(df, wanted).name
                except WallcastError as exc:
                    why = str(exc) if len(wanted) <= ECHO_CHARS else f"no match for {shown(wanted)}"
                    raise BadParameterError("accelerator", wanted, all_names, why) from None
                if name not in names:
                    names.append(name)
        if precision == "fp8":
            no_fp8 = [a["name"] for a in known if a["name"] in names and not a["fp8"]]
            if no_fp8:
                raise BadParameterError(
                    "precision", precision, ["bf16"], f"no FP8 figure for {', '.join(no_fp8)}"
                )
        return table, digest, names, days


def _whole_days(duration_days: float) -> float:
    """A run length checked against :data:`DURATION_DAYS_RANGE` and rounded to whole days (the
    value answered and cached on)."""
    lo, hi = DURATION_DAYS_RANGE
    if not (math.isfinite(duration_days) and lo <= duration_days <= hi):
        raise BadParameterError(
            "duration_days", duration_days, f"days from {lo:g} to {hi:g}", f"got {duration_days}"
        )
    return float(max(lo, round(duration_days / DURATION_DAYS_STEP) * DURATION_DAYS_STEP))


@contextlib.contextmanager
def _catalog() -> Iterator[None]:
    """A folder the catalog cannot read is the server's data problem (503), not the client's."""
    try:
        yield
    except CatalogError as exc:
        raise ForecastUnreadableError(None, exc.reason, exc.detail) from None


@contextlib.contextmanager
def _reading(
    forecast_id: str, path: Path, reason: str = "its data cannot be read"
) -> Iterator[None]:
    """Reading a forecast: a failure (``store.reading_forecast``'s ForecastReadError, or what
    h5py raises outside it) is a ForecastUnreadableError (503) with ``reason`` and without the
    path; a file removed meanwhile is unknown (404); a bad question stays a 422."""
    try:
        yield
    except (BadParameterError, ForecastUnreadableError, UnknownForecastError):
        raise
    except FileNotFoundError:
        raise UnknownForecastError(f"no published forecast with id {shown(forecast_id)}") from None
    except ForecastReadError as exc:
        log.warning("forecast %s unreadable: %s", forecast_id, exc)
        raise ForecastUnreadableError(forecast_id, reason, str(exc)) from None
    except WallcastError:
        raise
    except (OSError, KeyError, ValueError, TypeError, IndexError, RuntimeError) as exc:
        log.warning("forecast %s unreadable: %s: %r", forecast_id, path, exc)
        raise ForecastUnreadableError(forecast_id, reason, repr(exc)) from None


def _coord_index(values: list, dim: str, wanted: str) -> int:
    if dim == "year" or (values and isinstance(values[0], int | float)):
        number = _year_value(wanted) if dim == "year" else _number(dim, wanted)
        for i, v in enumerate(values):
            if math.isclose(float(v), number, rel_tol=0, abs_tol=1e-9):
                return i
        raise BadParameterError(dim, wanted, values)
    if wanted not in values:
        raise BadParameterError(dim, wanted, values)
    return values.index(wanted)


def _number(parameter: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise BadParameterError(parameter, raw, "a number", f"not a number: {shown(raw)}") from None
    if not math.isfinite(value):
        raise BadParameterError(parameter, raw, "a finite number", f"not finite: {shown(raw)}")
    return value


def _year_value(raw: str) -> float:
    return _number("year", raw)


@lru_cache(maxsize=256)
def _cached_headline(key: FileKey, scenario: str | None, prob: float) -> dict:
    # why here: the store's h5py readers must not pay for importing xarray
    import xarray as xr

    meta = _read_meta(key)
    data = {}
    names = ["hit_year", "hit_flop"]
    names += [f"paper_{n}" for n in names if f"paper_{n}" in meta.variables]
    for name in names:
        data[name] = xr.Variable(meta.variables[name]["dims"], _read_variable(key, name))
    coords = {d: meta.coords[d] for d in ("scenario", "wall", "year") if d in meta.coords}
    ds = xr.Dataset(data, coords=coords)
    fc = Forecast(Path(key.path), None, ds, meta.attrs)  # type: ignore[arg-type]
    h = headline(fc, scenario, prob)
    return {
        "scenario": h.scenario,
        "wall": h.wall,
        "sentence": h.sentence,
        "detail": h.detail,
        "others": list(h.others),
        "p_hit": h.p_hit,
        "last_year": h.last_year,
        "year": json_ready(h.year),
        "flop": json_ready(h.flop),
        "regime": fc.regime,
        # the paper's idealized bound beside the realistic walls ("" when not held)
        "paper_beside": paper_beside_sentence(fc, h.scenario),
    }


# ----------------------------------------------------------------------------- model answers


def _file_digest(path: Path) -> str:
    """A short hash of a file's bytes ('' when it is absent): part of a cache key."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return ""


def _planner() -> Any:
    """:mod:`forecast.analyses.planner`, imported on the first planner request."""
    # why here: the planner imports JAX; the cheap endpoints must not wait for it
    from forecast.analyses import planner

    return planner


_MODEL_LOCK = threading.Lock()  # one plan search at a time (CPU-bound; never the same twice)
_MODEL_CACHE: OrderedDict[tuple, dict] = OrderedDict()
MODEL_CACHE_SIZE = 512  # answers kept (oldest dropped first): bounded for any request mix


def _model_cached(key: tuple, compute) -> dict:
    """The cached answer for ``key`` (hardware-table hash and parameters), computed once.

    A cached answer is returned without waiting for a search in progress for another key."""
    hit = _MODEL_CACHE.get(key)
    if hit is not None:
        return hit
    with _MODEL_LOCK:
        hit = _MODEL_CACHE.get(key)
        if hit is None:
            hit = compute()
            _MODEL_CACHE[key] = hit
            while len(_MODEL_CACHE) > MODEL_CACHE_SIZE:
                _MODEL_CACHE.popitem(last=False)
    return hit


def model_cache_size() -> int:
    """Answers held by the plan-search cache (walls and curves)."""
    return len(_MODEL_CACHE)


def _file_hash(path: Path) -> str:
    # why here: the plan search imports JAX; reading commands must not
    from forecast.analyses.accelerator_walls import hardware_table_hash

    if not path.is_file():
        raise WallcastError(f"{path}: no such hardware table")
    return hardware_table_hash(path)


@lru_cache(maxsize=8)
def _hardware_frame(table: str, digest: str):

    return load_hardware(table)


@lru_cache(maxsize=8)
def _accelerator_list(table: str, digest: str) -> tuple[dict, ...]:

    df = _hardware_frame(table, digest)
    out = []
    for name in df["name"].tolist():
        acc = get_accelerator(df, str(name))
        out.append(
            {
                "name": acc.name,
                "release_year": float(acc.release_year),
                "fp8": acc.flops_fp8 is not None,
            }
        )
    return tuple(out)


def _compute_walls(
    table: Path, name: str, duration_days: float, precision: str, regime: str = "paper"
) -> dict:
    """One entry of ``wallcast walls --json`` (the walls service, :mod:`forecast.analyses.accelerator_walls`)."""
    # why here: the plan search imports JAX; reading commands must not
    from forecast.analyses.accelerator_walls import walls_record

    return walls_record(
        name, duration_days=duration_days, precision=precision, hardware=table, regime=regime
    )


def _compute_curve(
    table: Path, name: str, duration_days: float, precision: str, regime: str = "paper"
) -> dict:
    """Best utilization on the explorer's compute grid (the walls service's curve record)."""
    # why here: the plan search imports JAX; reading commands must not
    from forecast.analyses.accelerator_walls import curve_record

    record = curve_record(
        name,
        duration_days=duration_days,
        precision=precision,
        hardware=table,
        log10_flop_range=CURVE_LOG10_FLOP,
        step_log10=CURVE_STEP,
        regime=regime,
    )
    return {"curve": {k: record[k] for k in ("log10_flop", "utilization")}}
