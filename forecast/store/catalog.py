"""The published forecasts of an outputs folder, as a long-running reader sees them (no JAX).

A server reads an outputs folder that other processes write and that a user may have damaged:
every name is checked before it is opened. :class:`Catalog` lists the forecast folders, reads the
``latest`` pointer without following a symlink or blocking on a FIFO (:func:`read_pointer`) and
accepts a forecast id only when it is a folder listed in ``forecasts/`` whose file is a regular
file inside the outputs folder, every symlink followed: no id can reach a file outside it.
Problems that make the folder unreadable raise :class:`CatalogError` with a short reason.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from forecast.config.errors import WallcastError
from forecast.store.layout import FORECAST_FILE, FORECASTS_DIR, LATEST_POINTER

POINTER_MAX_BYTES = 4096
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
"""What a forecast id may look like (ids are ``YYYYMMDDTHHMMSSZ-<8 hex>``,
:func:`forecast.store.identity.forecast_id`); any id a request names must match it."""


class CatalogError(WallcastError, OSError):
    """The outputs folder (its pointer or its forecasts folder) cannot be read."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def is_regular(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode)


def read_pointer(path: Path, max_bytes: int = POINTER_MAX_BYTES) -> str | None:
    """The text of a ``latest`` pointer; None when there is none. Opened without blocking, never
    through a symlink, and only if it is a small regular UTF-8 file (a FIFO or a device would hang
    ``read``); :class:`CatalogError` otherwise."""
    try:
        # never through a symlink (publishing writes a plain file): no pointer is read from
        # outside the outputs folder, nor from /proc or a device
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP (a symlink), EACCES, ...
        why = "is a symlink" if exc.errno == errno.ELOOP else "cannot be opened"
        raise CatalogError(f"the latest pointer {why}", repr(exc)) from None
    try:
        st = os.fstat(fd)
        if not is_regular(st):
            raise CatalogError("the latest pointer is not a regular file", str(path))
        if st.st_size > max_bytes:
            raise CatalogError("the latest pointer is too large", f"{st.st_size} bytes")
        data = os.read(fd, max_bytes + 1)
    except CatalogError:
        raise
    except OSError as exc:
        raise CatalogError("the latest pointer cannot be read", repr(exc)) from None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise CatalogError("the latest pointer is not UTF-8 text", f"{len(data)} bytes") from None


@dataclass(frozen=True)
class Catalog:
    """The published forecasts under one outputs folder."""

    outputs: Path

    @property
    def forecasts_dir(self) -> Path:
        return self.outputs / FORECASTS_DIR

    def inside(self, path: Path) -> bool:
        """Whether ``path``, every symlink followed, lies inside the outputs folder."""
        root = os.path.realpath(self.outputs)
        return os.path.realpath(path).startswith(root.rstrip(os.sep) + os.sep)

    def readable_file(self, path: Path) -> bool:
        """A regular file inside the outputs folder."""
        try:
            return is_regular(path.stat()) and self.inside(path)
        except OSError:
            return False

    def listing(self) -> list[str]:
        """The names in ``forecasts/`` (none when it does not exist)."""
        try:
            return os.listdir(self.forecasts_dir)
        except FileNotFoundError:
            return []
        except OSError as exc:  # not a folder, permission denied, ...
            raise CatalogError("the forecasts folder cannot be listed", repr(exc)) from None

    def is_published(self, forecast_id: str, entries: list[str] | None = None) -> bool:
        """A folder listed in ``forecasts/``, named like an id, with a regular forecast file
        inside the outputs folder."""
        if not ID_PATTERN.match(forecast_id):
            return False
        if forecast_id not in (self.listing() if entries is None else entries):
            return False
        return self.readable_file(self.forecasts_dir / forecast_id / FORECAST_FILE)

    def ids(self) -> list[str]:
        """Published forecast ids, oldest first (ids sort by creation time)."""
        entries = self.listing()
        return sorted(e for e in entries if self.is_published(e, entries))

    def pointer(self) -> tuple[str | None, str | None, str]:
        """(the id ``latest`` names, what is wrong with the pointer, its text): (None, None, "")
        when there is no pointer or an empty one."""
        try:
            text = read_pointer(self.outputs / LATEST_POINTER)
        except CatalogError as exc:
            return None, exc.reason, ""
        if not text:
            return None, None, ""
        target = Path(text)
        name = target.name
        listed = target.parent == Path(FORECASTS_DIR) and ID_PATTERN.match(name)
        if not listed or name not in self.listing():
            return None, "the latest pointer names no published forecast", text
        return name, None, text

    def forecast_dir(self, forecast_id: str) -> Path | None:
        """The folder of a published forecast, or None when ``forecast_id`` names none."""
        return self.forecasts_dir / forecast_id if self.is_published(forecast_id) else None
