# syntax=docker/dockerfile:1
# Build wheels for the service and its pinned dependencies, then install them into a
# slim image that runs as an unprivileged user. Point DATABASE_URL at PostgreSQL.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY service ./service
COPY sql ./sql
RUN pip wheel --no-cache-dir -c constraints.txt --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --system --uid 10001 --create-home --home-dir /app app
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index /wheels/*.whl && rm -rf /wheels
USER app
WORKDIR /app
ENV PORT=8080 \
    DATA_DIR=/app/data \
    PYTHONUNBUFFERED=1
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PORT', '8080'), timeout=2)"
CMD ["tenant-service", "serve"]
