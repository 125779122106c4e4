"""Exceptions shared by all layers (no heavy imports)."""

from __future__ import annotations


class WallcastError(Exception):
    """Base class of every error wallcast reports to a user."""


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
