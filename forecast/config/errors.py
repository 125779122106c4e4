"""Exceptions shared by all layers (no heavy imports)."""

from __future__ import annotations


class WallcastError(Exception):
    """Base class of every error wallcast reports to a user.

    Every subclass survives pickling with its message and attributes, whatever its
    ``__init__`` takes: Prefect, process pools and Dask workers pickle the exceptions of the
    tasks they run, and the default (``cls(*args)``) would call a subclass's ``__init__`` with
    the formatted message alone (``DataValidationError`` needs file, row, field and reason).
    """

    def __reduce__(self):
        state = dict(self.__dict__)  # the attributes and notes, as they were
        if isinstance(self, OSError):  # slots of OSError, not in __dict__; those set only
            # (one set to None would print as "[Errno None] None: None")
            slots = ("errno", "strerror", "filename", "filename2")
            state |= {k: getattr(self, k) for k in slots if getattr(self, k) is not None}
        return (_rebuild_error, (type(self), self.args), state)


def _rebuild_error(cls: type[WallcastError], args: tuple) -> WallcastError:
    """An instance of ``cls`` with ``args``, its ``__init__`` not called (pickle restores the
    attributes it set)."""
    error = cls.__new__(cls)
    error.args = args
    return error


class DataValidationError(WallcastError, ValueError):
    """Bad input data: names the file, row and field."""

    def __init__(self, file: str, row: int | None, field: str | None, reason: str) -> None:
        self.file = str(file)
        self.row = row
        self.field = field
        self.reason = reason
        where = self.file
        if row is not None:
            where += f", row {row}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {reason}")


class UnknownAcceleratorError(WallcastError, KeyError):
    """An accelerator name that is not in the hardware table."""

    def __init__(self, name: str, closest: list[str]) -> None:
        self.name = name
        self.closest = closest
        hint = ", ".join(repr(c) for c in closest) if closest else "none"
        super().__init__(f"unknown accelerator {name!r}; closest names: {hint}")

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return self.args[0]
