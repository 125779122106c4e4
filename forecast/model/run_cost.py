"""Energy and money of a run from its accelerator-hours: pure NumPy functions of arrays.

* :func:`energy_mwh`: accelerator-hours x TDP x server watts per accelerator watt x average power
  fraction x PUE (the method of [cottier2024]);
* :func:`facility_power_mw`: the power to provision: accelerators x TDP x server ratio x PUE;
* :func:`money_usd`: accelerator-hours x rental price per accelerator-hour (a cloud price, which
  includes the data centre and its power);
* :func:`price_from_interval90`: a listed low-high price range read as a lognormal's 90 % interval;
* :func:`trend_power_w`, :func:`trend_price_usd_per_hour`: a future accelerator's power and price
  from a reference accelerator's, carried by the energy-efficiency and price-performance trends
  in proportion to peak 16-bit FLOP/s.
"""

from __future__ import annotations

import numpy as np
from scipy import special

Z90 = 1.6448536269514722  # the standard normal's 95 % quantile: a 90 % interval is +- Z90 sigma
HOURS_PER_DAY = 24.0


def energy_mwh(accelerator_hours, tdp_w, server_ratio, average_fraction, pue) -> np.ndarray:
    """Energy drawn from the grid (MWh) by a run of ``accelerator_hours``."""
    watts = np.asarray(tdp_w, float) * server_ratio * average_fraction * pue
    return np.asarray(accelerator_hours, float) * watts / 1e6


def facility_power_mw(accelerators, tdp_w, server_ratio, pue) -> np.ndarray:
    """Power to provision (MW) for ``accelerators`` at full server TDP."""
    return np.asarray(accelerators, float) * np.asarray(tdp_w, float) * server_ratio * pue / 1e6


def money_usd(accelerator_hours, price_usd_per_hour) -> np.ndarray:
    """Rental cost (USD) of ``accelerator_hours``."""
    return np.asarray(accelerator_hours, float) * np.asarray(price_usd_per_hour, float)


def price_from_interval90(low: float, high: float, u) -> np.ndarray:
    """Prices at probabilities ``u`` of the lognormal whose 90 % interval is [low, high]
    (a point value when low == high)."""
    u = np.asarray(u, float)
    median = np.sqrt(low * high)
    sigma = np.log(high / low) / (2 * Z90)
    return median * np.exp(sigma * special.ndtri(u))


def trend_power_w(peak_16bit_flops, year, ref_peak_16bit_flops, ref_tdp_w, ref_year, growth):
    """TDP (W) of an accelerator of ``peak_16bit_flops`` in ``year``: the reference accelerator's
    FLOP/s per watt grown by ``growth`` per year since ``ref_year``."""
    flops_per_watt = ref_peak_16bit_flops / ref_tdp_w * np.power(growth, year - ref_year)
    return np.asarray(peak_16bit_flops, float) / flops_per_watt


def trend_price_usd_per_hour(
    peak_16bit_flops, year, ref_peak_16bit_flops, ref_price_usd_per_hour, ref_price_year, growth
):
    """Rental price per hour of an accelerator of ``peak_16bit_flops`` in ``year``: the reference
    accelerator's price per peak FLOP/s, falling by ``growth`` per year since its listing."""
    per_flops = np.asarray(ref_price_usd_per_hour, float) / ref_peak_16bit_flops
    return np.asarray(peak_16bit_flops, float) * per_flops / np.power(growth, year - ref_price_year)
