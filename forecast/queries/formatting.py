"""Number formatting shared by the CLI, the flows' artifacts, the report and the deck.

One home for how wallcast writes numbers for people, so that a hit year or a FLOP figure reads the
same in every output.  JSON output never goes through these: it carries plain floats.
"""

from __future__ import annotations

import math

NOT_HIT_FLOP = "not hit"


def sci(x: float, digits: int = 1) -> str:
    """Scientific notation without '+' or zero padding: 2.0e28, 2.9e3, 1.5e-4."""
    if not math.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else "nan")
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def fmt_flop(x: float, digits: int = 1) -> str:
    """Training compute in FLOP: '1.3e30'; +inf (a wall never reached) as 'not hit'."""
    return NOT_HIT_FLOP if math.isinf(x) else sci(x, digits)


def fmt_year(v: float, last_year: int | None = None) -> str:
    """Fractional hit year to one decimal: '2030.5'; +inf as 'not by <last_year>'."""
    if math.isinf(v):
        return f"not by {last_year}" if last_year is not None else "not by end"
    return f"{v:.1f}"


def calendar_year(v: float) -> int:
    """The calendar year a fractional year falls in (2029.6 -> 2029), after rounding to one
    decimal as the tables print it (2032.98 shows as 2033.0 there, so 2033 here)."""
    return int(math.floor(round(v, 1)))


def fmt_calendar_year(v: float, last_year: int | None = None) -> str:
    """A hit year in prose: the calendar year it falls in ('2029' for 2029.9; 'in 2029' means
    during 2029); +inf as 'not by <last_year>'. Tables keep :func:`fmt_year`'s decimal year."""
    if math.isinf(v):
        return f"not by {last_year}" if last_year is not None else "not by end"
    return str(calendar_year(v))


def fmt_pct(p: float) -> str:
    """A fraction as a whole percentage: 0.8 -> '80%'."""
    return f"{p:.0%}"


def fmt_interval(median: str, lower: str, upper: str) -> str:
    """'median (lower - upper)', the form every interval table uses."""
    return f"{median} ({lower} - {upper})"


def fmt_log10_flop(log10_flop: float, grid: tuple[float, float]) -> str:
    """A wall given in log10 FLOP: '5.2e28'; beyond the plan search's grid (+-inf) as '>1e40'
    or '<1e20' (``grid``: the grid's ends in log10 FLOP, ``forecast.analyses.accelerator_walls.SEARCH_LOG10_FLOP_RANGE``)."""
    if math.isinf(log10_flop):
        return f">1e{grid[1]:.0f}" if log10_flop > 0 else f"<1e{grid[0]:.0f}"
    return sci(10.0**log10_flop)


def fmt_multiplier(x: float) -> str:
    """A cost multiplier to two significant figures: '1.3x', '83x', '2,500x', '1.2e5x'; +inf (no
    plan finishes in time) as 'infeasible'. More digits would claim a precision the draws lack."""
    if math.isinf(x):
        return "infeasible"
    if x < 9.95:
        return f"{x:.1f}x"
    if x < 9950:
        return f"{float(f'{x:.2g}'):,.0f}x"
    return f"{sci(x, 1)}x"


def fmt_days(x: float) -> str:
    """A duration in days: '42 days', '8.6 days', '0.46 days'; +inf as 'never'."""
    if math.isinf(x):
        return "never"
    if x >= 10:
        return f"{x:.0f} days"
    return f"{x:.1f} days" if x >= 1 else f"{x:.2f} days"


def fmt_count(x: float, digits: int = 2) -> str:
    """A large count to ``digits`` significant digits with a k/M/B/T suffix: 2.9e7 -> '29M',
    3.6e8 -> '360M', 1.2e9 -> '1.2B'; below 1000 plainly ('119')."""
    if not math.isfinite(x):
        return sci(x)
    rounded = float(f"{x:.{digits}g}")
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(rounded) >= scale:
            return f"{rounded / scale:.6g}{suffix}"
    return f"{rounded:.6g}"


def fmt_value(x: float, unit: str) -> str:
    """An input in its registry unit, as the report writes it: tokens and parameters as counts
    ('29M'), a fraction as a percentage ('57%'), a growth rate per year as a factor ('1.50x'),
    layers to the nearest one ('108'), an exponent (unit '1') to two decimals ('0.27'),
    anything else to three significant digits."""
    if not math.isfinite(x):
        return sci(x)
    if unit in ("tokens", "params"):
        return fmt_count(x)
    if unit == "fraction":
        return fmt_pct(x)
    if unit == "x/yr":
        return f"{x:.2f}x"
    if unit == "layers":
        return f"{x:.0f}"
    if unit == "1":
        return f"{x:.2f}"
    return f"{x:.3g}"


_UNIT_WORDS = {
    "tokens": "tokens",
    "params": "parameters",
    "layers": "layers",
    "bytes": "bytes",
    "experts": "experts",
    "tokens/param": "tokens per parameter",
    "dex": "dex",
    "FLOP": "FLOP",
}


_SINGULAR = {"layers": "layer", "bytes": "byte", "experts": "expert", "tokens": "token"}


def fmt_quantity(x: float | None, unit: str, *, with_unit: bool = True) -> str:
    """An input with its unit, for a reader: '23M tokens', '1.45x per year', '57%', '3.2 µs',
    '90 days', '5.8x', '2.0e25 FLOP', '0.27' (an exponent has none); None as 'n/a'.
    ``with_unit=False`` gives the same number without the unit's words ('23M', '1.45x', '3.2'),
    for the ends of an interval whose median carries them."""
    if x is None:
        return "n/a"
    if not with_unit:
        full = fmt_quantity(x, unit)
        words = {"x/yr": " per year", "us": " µs", "days": " days", "FLOP": " FLOP"}
        tail = words.get(unit, f" {_UNIT_WORDS[unit]}" if unit in _UNIT_WORDS else "")
        return full.removesuffix(tail) if tail else full
    if unit == "fraction":
        return fmt_pct(x) if math.isfinite(x) else sci(x)
    if unit == "days":
        return fmt_days(x)
    if unit == "us":
        return f"{x:.3g} µs" if math.isfinite(x) else sci(x)
    if unit == "x/yr":
        return f"{x:.2f}x per year" if math.isfinite(x) else sci(x)
    if unit == "x":
        return f"{x:.3g}x" if math.isfinite(x) else sci(x)
    if unit == "FLOP":
        return f"{fmt_flop(x)} FLOP"
    if unit == "1" or not unit:
        return fmt_value(x, "1") if unit == "1" else f"{x:.3g}"
    word = _UNIT_WORDS.get(unit, unit)
    value = fmt_count(x) if unit in ("tokens", "params") else fmt_value(x, unit)
    if value == "1" and word in _SINGULAR:
        word = _SINGULAR[word]
    return f"{value} {word}"
