"""The jobs as plain functions: the forecast (load, fit, propagate, assemble) and the analyses of a
published forecast. The Prefect flows and the CLI only wrap them.
"""
