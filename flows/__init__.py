"""Prefect orchestration of wallcast (see flows/README.md): flows, tasks and deployments only.

* :mod:`flows.refresh` - the ``refresh-forecast`` flow (load -> fit -> propagate each scenario ->
  publish -> artifacts) with cache policies, and :func:`flows.refresh.flow_with_task_runner`;
* :mod:`flows.serve` - ``wallcast serve``: the ``watch-landing`` flow (ingest task + refresh),
  the weekly schedule and the landing-folder poller.

The work itself is plain library code: :mod:`forecast.jobs.forecast_job` (load, fit, propagate,
assemble), :mod:`forecast.store` (publish, retention, reading), :mod:`forecast.config.filelock`
(the lock) and :mod:`forecast.data.ingest` (landing files).  ``forecast`` never imports
``flows``.  Importing this package imports nothing heavy.
"""
