# syntax=docker/dockerfile:1
# The service as a small image: wheels are built in one stage, installed in a slim one
# that runs as an unprivileged user. Nothing else reaches the final image: no compiler,
# no tests, no embedded PostgreSQL (give it DATABASE_URL; see compose.yaml).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY service ./service
COPY sql ./sql
# The service and its pinned runtime dependencies, as wheels (the dev and embedded
# extras are not installed).
RUN pip wheel --constraint constraints.txt --wheel-dir /wheels .

FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PORT=8080 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/data \
    SERVICE_ENV=production
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /app --create-home \
       --shell /usr/sbin/nologin app \
    && install -d -o app -g app /app/data
# Bind-mounted from the build stage, so the wheels never become a layer of this image.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index /wheels/*.whl
# Numeric, so an orchestrator can check it is not root (runAsNonRoot) without /etc/passwd.
USER 10001:10001
WORKDIR /app
EXPOSE 8080
# SIGTERM (docker stop) drains in-flight requests within SHUTDOWN_TIMEOUT_SECONDS (30 by
# default): give `docker stop -t` / terminationGracePeriodSeconds more than that.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PORT', '8080'), timeout=2)"]
CMD ["tenant-service", "serve"]
