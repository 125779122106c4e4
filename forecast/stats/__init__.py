"""The statistical programs: NumPyro models of the hardware trends, the scaling laws and the joint
model, pure functions of data and an explicit ``rng_key`` (running them is :mod:`forecast.inference`).
"""
