"""The forecast service: a read-only HTTP API and a live dashboard over published forecasts.

``create_app`` builds the FastAPI application (``wallcast api`` serves it with uvicorn, and
``wallcast serve`` beside the Prefect loop).  Layers: :mod:`forecast.service.backend` is the one
adapter to storage, queries and the model; ``routes/`` holds one module per resource;
:mod:`forecast.service.dashboard` serves the page and its assets (Plotly's JavaScript from the
``plotly`` package, so the page works offline).  Query paths never import JAX.
"""

from forecast.service.app import create_app

__all__ = ["create_app"]
