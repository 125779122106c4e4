"""Analyses over the model and a published forecast: the walls of each accelerator, sensitivity
(Sobol), the trend and frontier backtests, the law holdouts and the frozen-hardware reading.
"""
