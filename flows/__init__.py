"""Prefect orchestration of wallcast (see flows/README.md).

* :mod:`flows.refresh` - the ``refresh-forecast`` flow (load -> fit -> propagate each scenario ->
  publish -> artifacts) with cache policies, and :func:`flows.refresh.flow_with_task_runner`;
* :mod:`flows.landing` - ingestion of files from ``data/incoming/`` (plain functions + a task);
* :mod:`flows.serve` - ``wallcast serve``: weekly schedule plus the landing-folder watcher;
* :mod:`flows.publishing` - publish under the lock, clean leftovers, retention (no Prefect import);
* :mod:`flows.locking` - ``fcntl.flock`` locks ("another refresh is running (pid N)").

Importing this package imports nothing heavy; import the submodules you need.
"""
