"""Answers read from a published forecast (no JAX): intervals, the headline, the analyses' rows and
the number formats every surface shares.
"""
