# wallcast image: the CLI on Python 3.12.
#   docker build -t wallcast .
#   docker run --rm -v "$PWD/outputs:/app/outputs" wallcast            # walls table
#   docker run --rm wallcast wallcast walls --accelerator H100 --json
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PREFECT_HOME=/app/.prefect \
    MPLCONFIGDIR=/tmp/matplotlib \
    # forecast.hardware finds data/hardware.csv next to the package, so the package is imported
    # from /app (the installed copy supplies the dependencies and the `wallcast` script).
    PYTHONPATH=/app

RUN useradd --create-home --uid 10001 wallcast

WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir . \
    && mkdir -p /app/outputs /app/.prefect /app/data/incoming /app/data/rejected \
    && chown -R wallcast:wallcast /app

USER wallcast

VOLUME ["/app/data", "/app/outputs"]

# A later issue changes this to `wallcast serve`.
CMD ["wallcast", "walls"]
