# wallcast image: the CLI on Python 3.12; the default command is the forecast service.
#   docker build -t wallcast .
#   docker run -d --name wallcast -v "$PWD/data:/app/data" -v "$PWD/outputs:/app/outputs" \
#       -v wallcast-prefect:/app/.prefect wallcast                        # wallcast serve
#   docker run --rm wallcast wallcast walls --accelerator H100 --json     # one-off command
#   docker run -d -p 8000:8000 -v "$PWD/outputs:/app/outputs" wallcast    # + API and dashboard
#
# Configuration (environment):
#   WALLCAST_DATA_DIR     data folder: hardware.csv, frontier_runs.csv, incoming/, rejected/, processed/
#   WALLCAST_OUTPUTS_DIR  published forecasts: forecasts/<id>/ and the 'latest' pointer
#   WALLCAST_PRIORS_DIR   priors: baseline.toml and scenarios/ (default: /app/priors)
#   PREFECT_API_URL       unset: embedded Prefect (temporary local server, SQLite in PREFECT_HOME);
#                         set (e.g. http://prefect-server:4200/api): runs report to that server
#   PREFECT_HOME          cache records, results and the embedded SQLite database
#   WALLCAST_API_HOST     address of the HTTP API and dashboard (port 8000, `--api-port`);
#                         0.0.0.0 here so that `-p 8000:8000` reaches it
# Volumes: /app/data, /app/outputs, /app/.prefect (keep it to keep the cache across restarts).
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PREFECT_HOME=/app/.prefect \
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=120 \
    WALLCAST_DATA_DIR=/app/data \
    WALLCAST_OUTPUTS_DIR=/app/outputs \
    WALLCAST_API_HOST=0.0.0.0 \
    MPLCONFIGDIR=/tmp/matplotlib \
    # forecast.config.paths finds priors/ (and, without WALLCAST_DATA_DIR, data/) next to the package,
    # so the package is imported from /app (the installed copy supplies the dependencies and
    # the `wallcast` script).
    PYTHONPATH=/app

RUN useradd --create-home --uid 10001 wallcast

WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir . \
    && mkdir -p /app/outputs /app/.prefect /app/data/incoming /app/data/rejected /app/data/processed \
    && chown -R wallcast:wallcast /app

USER wallcast

VOLUME ["/app/data", "/app/outputs", "/app/.prefect"]

# The HTTP API and dashboard of `wallcast serve` (and of `wallcast api`).
EXPOSE 8000

# Weekly refresh (Mondays 06:00 UTC) plus a watcher of /app/data/incoming, and the API on port
# 8000; options after `serve` (e.g. --cron, --poll-seconds, --draws, --api-port) change it.
CMD ["wallcast", "serve"]
