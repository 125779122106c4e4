"""Configuration and process runtime, the bottom layer: folders, run settings, constants, errors,
the platform record, JAX set-up and locks. Imports nothing above it and no JAX at import time.
"""
