"""The ``wallcast`` Typer application and what every command shares: error reporting, JSON.

Errors derived from :class:`forecast.config.errors.WallcastError` are reported as one line
``error: ...`` on stderr with exit status 2, without a traceback.  Usage errors (bad options)
also exit with 2, as click does.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from typing import Any

import typer

from forecast.config.errors import WallcastError
from forecast.config.paths import configure_jax_cache
from forecast.config.runtime import chunk_threads

EXIT_USER_ERROR = 2

app = typer.Typer(
    name="wallcast",
    help=(
        "Forecast the data-movement and latency walls of frontier AI training "
        "(after Erdil & Schneider-Joseph 2024). Units: FLOP = total training compute, "
        "utilization = fraction of peak dense FLOP/s."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def report_error(exc: BaseException) -> None:
    """``error: <message>`` on one line of stderr, whatever the exception holds."""
    typer.echo(f"error: {' '.join(str(exc).split())}", err=True)


def reports_errors[F: Callable[..., Any]](fn: F) -> F:
    """Turn a WallcastError (or an OSError: read-only or full disk) raised by a command into
    ``error: ...`` on stderr and exit 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:

        try:
            return fn(*args, **kwargs)
        except WallcastError as exc:
            report_error(exc)
            raise typer.Exit(EXIT_USER_ERROR) from None
        except OSError as exc:  # the file system refused (read-only, full disk, not a folder)
            report_error(os_error_message(exc))
            raise typer.Exit(EXIT_USER_ERROR) from None

    return wrapper  # type: ignore[return-value]


def os_error_message(exc: OSError) -> str:
    """``<file>: <reason>`` of an OSError (its strerror, not Python's repr)."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    files = [f for f in (exc.filename, exc.filename2) if f is not None]
    return f"{' -> '.join(map(str, files))}: {reason}" if files else reason


def progress(message: str) -> None:
    """One progress line on stderr (stdout stays the command's answer)."""
    typer.echo(message, err=True)


def check_positive(value: float, option: str) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise typer.BadParameter(f"must be a positive number, got {value}", param_hint=option)


def check_finite(value: float, option: str) -> None:
    if not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}", param_hint=option)


def json_clean(x: Any) -> Any:
    """NaN/inf -> None, recursively (strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_clean(v) for v in x]
    return x


def echo_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON (NumPy scalars as floats)."""
    typer.echo(json.dumps(obj, indent=2, default=float))


def _is_click_error(exc: BaseException) -> bool:
    """A click/typer usage or parameter error (typer vendors click, so match by shape)."""
    return all(hasattr(exc, a) for a in ("format_message", "exit_code", "show"))


def main() -> None:
    """Entry point of the ``wallcast`` console script and ``python -m forecast``."""
    # Compiled NUTS kernels and wall searches are reused across commands and weekly refreshes
    # (`make run`'s analyse and walls steps reuse what `wallcast run` compiled); BENCHMARKS.md.
    configure_jax_cache()
    try:
        chunk_threads()  # a bad WALLCAST_CHUNK_THREADS: one error line now, not inside a search
        status = app(prog_name="wallcast", standalone_mode=False)
    except WallcastError as exc:  # raised outside a command body (e.g. in a callback)
        report_error(exc)
        sys.exit(EXIT_USER_ERROR)
    except OSError as exc:
        report_error(os_error_message(exc))
        sys.exit(EXIT_USER_ERROR)
    except Exception as exc:
        if type(exc).__name__ == "Abort":  # click's Abort (e.g. Ctrl-C at a prompt)
            report_error("aborted")
            sys.exit(1)
        if not _is_click_error(exc):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":  # `wallcast` alone: the help, as before
            exc.show()  # type: ignore[attr-defined]
            sys.exit(EXIT_USER_ERROR)
        # a bad option or argument: one line naming it, last (click would print a usage box)
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "wallcast"
        report_error(f"{exc.format_message()} (see '{command} --help')")  # type: ignore[attr-defined]
        sys.exit(exc.exit_code)  # type: ignore[attr-defined]
    except KeyboardInterrupt:
        report_error("interrupted")
        sys.exit(130)
    sys.exit(status if isinstance(status, int) else 0)
