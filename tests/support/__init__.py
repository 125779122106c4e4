"""Helpers shared by tests, benchmarks and scripts; not part of the package."""
