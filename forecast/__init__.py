"""wallcast: probabilistic forecasts of the data-movement and latency walls of frontier AI training."""

__version__ = "0.1.0"
