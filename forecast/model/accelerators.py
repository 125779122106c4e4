"""Turn an accelerator row of the hardware table into the model's :class:`Hardware`.

Some rows of ``data/hardware.csv`` leave a field empty because no public figure was found: the
scale-out bandwidth of AMD Instinct parts and TPU v4, the scale-up domain size of MI455X.  The
model needs every field, so :func:`hardware_from_accelerator` fills the gaps with the documented
defaults below and returns, next to the :class:`Hardware`, one sentence per assumption it made,
so that every report can print them.

Units are SI as everywhere in wallcast: dense FLOP/s, bytes/s per direction, bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from forecast.config.errors import WallcastError
from forecast.model.params import Hardware

if TYPE_CHECKING:
    from forecast.data.hardware import Accelerator


#: Scale-out bytes/s per direction per accelerator when the table has none: one 400 Gb/s NIC per
#: accelerator (50 GB/s), the DGX/HGX H100-class figure (8x ConnectX-7 per 8 GPUs).
DEFAULT_SCALEOUT_BANDWIDTH = 5.0e10


#: Scale-up domain size when the table has none: an 8-accelerator node (HGX / OAM baseboard).
DEFAULT_SCALEUP_DOMAIN_SIZE = 8


#: Training precisions the CLI offers -> bytes per weight/activation number in the matmuls.
PRECISIONS: dict[str, float] = {"bf16": 2.0, "fp8": 1.0}


class PrecisionUnavailableError(WallcastError, ValueError):
    """A precision the accelerator (or wallcast) does not support."""


def bytes_per_number(precision: str) -> float:
    """Bytes per number for a precision name ('bf16' -> 2, 'fp8' -> 1)."""
    key = precision.strip().lower()
    if key not in PRECISIONS:
        raise PrecisionUnavailableError(
            f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}"
        )
    return PRECISIONS[key]


def hardware_from_accelerator(
    acc: Accelerator, precision: str = "bf16"
) -> tuple[Hardware, list[str]]:
    """The model's view of one accelerator, and the list of gap-filling assumptions made.

    ``precision`` "bf16" uses the table's dense 16-bit FLOP/s; "fp8" uses the dense FP8 FLOP/s
    (run the model with ``bytes_per_number=bytes_per_number("fp8")`` = 1 to match) and raises
    :class:`PrecisionUnavailableError` if the part has no FP8 figure.

    Gaps are filled as follows (each adds a sentence to the returned list):

    * scale-out bandwidth missing -> :data:`DEFAULT_SCALEOUT_BANDWIDTH` (5e10 B/s, one 400 Gb/s
      NIC per accelerator, the common DGX-class figure);
    * scale-up domain size missing -> :data:`DEFAULT_SCALEUP_DOMAIN_SIZE` (8).
    """
    key = precision.strip().lower()
    bytes_per_number(key)  # validates the name
    if key == "fp8":
        if acc.flops_fp8 is None:
            raise PrecisionUnavailableError(
                f"{acc.name} has no FP8 figure in the hardware table; use --precision bf16"
            )
        flops = float(acc.flops_fp8)
    else:
        flops = float(acc.flops_16bit)

    assumptions: list[str] = []
    scaleout = acc.scaleout_bandwidth
    if scaleout is None:
        scaleout = DEFAULT_SCALEOUT_BANDWIDTH
        assumptions.append(
            "scale-out bandwidth not in the table: assumed 5.0e10 B/s per direction "
            "(one 400 Gb/s NIC per accelerator, the common DGX-class figure)"
        )
    domain = acc.scaleup_domain_size
    if domain is None:
        domain = DEFAULT_SCALEUP_DOMAIN_SIZE
        assumptions.append(
            f"scale-up domain size not in the table: assumed {DEFAULT_SCALEUP_DOMAIN_SIZE} "
            "accelerators (one 8-way node)"
        )

    hw = Hardware(
        flops=flops,
        hbm_bandwidth=float(acc.hbm_bandwidth),
        hbm_capacity=float(acc.hbm_capacity),
        scaleup_bandwidth=float(acc.scaleup_bandwidth),
        scaleup_domain_size=float(domain),
        scaleout_bandwidth=float(scaleout),
    )
    return hw, assumptions
