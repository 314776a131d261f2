# syntax=docker/dockerfile:1
# Errand's image: `docker build -t errand .`, then see compose.yaml and docs/deploy.md.
# Stage 1 builds the wheel and a virtual environment with only the runtime dependencies (the
# same steps .ci/run checks: wheel -> clean venv -> `errand --help`). Stage 2 copies that venv
# onto a clean slim Python: no compiler, no build tools, no test extras, no source tree.

ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY jobs ./jobs
COPY bot ./bot
COPY dashboard ./dashboard
COPY discord_emulator ./discord_emulator
COPY migrations ./migrations
# pyproject.toml force-includes the example catalog into the wheel (the sandbox's `command` kind).
COPY examples/commands.toml ./examples/commands.toml
RUN pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/errand \
 && /opt/errand/bin/pip install /wheels/errand-*.whl \
 && /opt/errand/bin/errand --help > /dev/null

FROM python:${PYTHON_VERSION}-slim AS runtime
LABEL org.opencontainers.image.title="errand" \
      org.opencontainers.image.description="A Discord bot with a durable job runner on PostgreSQL"
# A fixed, unprivileged uid/gid so volume permissions are predictable.
RUN groupadd --system --gid 10001 errand \
 && useradd --system --uid 10001 --gid errand --home-dir /data --no-create-home errand \
 && mkdir -p /data \
 && chown errand:errand /data
COPY --from=build /opt/errand /opt/errand
ENV PATH="/opt/errand/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    ERRAND_DATA_DIR=/data \
    ERRAND_LOG_FORMAT=json \
    ERRAND_HEALTH_HOST=0.0.0.0 \
    ERRAND_HEALTH_PORT=8080
USER errand:errand
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
# Readiness, not mere liveness: unhealthy while the database is unreachable, migrations are
# pending, the worker drains or (bot) the gateway is down. Python's stdlib: slim has no curl.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/readyz', timeout=4)"]
# Migrations run on start (advisory-locked: replicas starting together are safe).
ENTRYPOINT ["errand"]
CMD ["run"]
