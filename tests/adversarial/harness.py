"""Shared checks of the adversarial corpus (issue 13): every bad input must end cleanly.

* :func:`run_cli` runs ``wallcast ARGS`` in a subprocess (this checkout first on ``PYTHONPATH``);
* :func:`assert_clean_error` checks the contract for bad input: exit 2, no traceback, and the last
  non-empty stderr line is the one ``error:`` line, naming what it must mention;
* :func:`snapshot` hashes every file under a folder, to prove tables are byte-identical and
  nothing under ``data/rejected/`` was overwritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from unittest import mock

REPO_ROOT = Path(__file__).resolve().parents[2]
EXIT_USER_ERROR = 2


def run_cli(
    args: list[str],
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 300.0,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m forecast ARGS`` (the ``wallcast`` command) and capture its output."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    full_env.setdefault("COLUMNS", "200")
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "forecast", *args],
        env=full_env,
        cwd=cwd or REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_main(
    args: list[str], env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``wallcast ARGS`` through :func:`forecast.cli.app.main` in this process.  An uncaught
    exception is reported as the traceback it would print (so :func:`assert_clean_error` fails)."""
    from forecast.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    status = 0
    with (
        mock.patch.object(sys, "argv", ["wallcast", *args]),
        mock.patch.dict(os.environ, dict(env or {})),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            main()
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001 (reported as the traceback it would print)
            err.write(
                "Traceback (most recent call last):\n" + "".join(traceback.format_exception(exc))
            )
            status = 1
    return subprocess.CompletedProcess(["wallcast", *args], status, out.getvalue(), err.getvalue())


def assert_clean_error(proc: subprocess.CompletedProcess[str], *must_mention: str) -> str:
    """Exit 2, no traceback, one ``error:`` line and it is the last one; it mentions each string
    in ``must_mention`` (case-sensitive).  Returns that line."""
    out = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == EXIT_USER_ERROR, f"exit {proc.returncode}, expected 2\n{out}"
    assert "Traceback" not in proc.stderr + proc.stdout, f"traceback\n{out}"
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines, f"nothing on stderr\n{out}"
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1, f"expected one 'error:' line, got {len(errors)}\n{out}"
    assert lines[-1].startswith("error:"), f"the error: line is not the last line\n{out}"
    for text in must_mention:
        assert text in lines[-1], f"{text!r} not in the error line {lines[-1]!r}"
    return lines[-1]


def snapshot(folder: str | Path) -> dict[str, str]:
    """{relative path: sha256 of the bytes} of every file under ``folder`` (recursively)."""
    root = Path(folder)
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def assert_unchanged(before: Mapping[str, str], after: Mapping[str, str], what: str = "") -> None:
    """Every file in ``before`` is still there with the same bytes (new files are allowed)."""
    changed = [p for p, h in before.items() if after.get(p) != h]
    assert not changed, f"{what} changed or removed: {changed}"


def run_cli_in_process(args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``wallcast ARGS`` in this process (typer's CliRunner): the same checks as
    :func:`run_cli` without the interpreter start.  An uncaught exception is reported as the
    traceback it would print, so :func:`assert_clean_error` catches it."""

    from typer.testing import CliRunner

    from forecast.cli import app

    result = CliRunner().invoke(app, args, prog_name="wallcast")
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "Traceback (most recent call last):\n" + "".join(
            traceback.format_exception(result.exception)
        )
    return subprocess.CompletedProcess(["wallcast", *args], result.exit_code, result.stdout, stderr)


def processes_mentioning(text: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains ``text``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids
