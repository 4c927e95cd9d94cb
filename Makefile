# The two commands: `make run` and `make test`. Everything else is a helper (`make help`).
PYTHON ?= python3
.DEFAULT_GOAL := help
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: help install run test lint typecheck unit quick migrate schema bench bench-full bench-huge bench-tools clean

help: ## list the targets
	@echo "Targets (PORT=9000 make run serves on another port):"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)$$/  make \1\t\2/' | expand -t 22

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "Python 3.11 or newer is required ($(PYTHON))" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# The Python client (clients/python, distribution tenant-context) installs beside the
# service: its tests run in `make test` against the service.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt clients/python/pyproject.toml
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt \
		-e '.[dev,embedded,bench,ha]' -e 'clients/python[test]'
	@touch $(STAMP)

install: $(STAMP) ## create .venv and install the service, its Python client and the development tools

# `make run` is a development setup: webhooks may reach a receiver on this machine
# (the README's walkthrough) unless the environment says otherwise. A deployment runs
# `tenant-service serve` and sets neither (docs/operations.md).
DEV_ENV := WEBHOOK_ALLOW_HTTP=$${WEBHOOK_ALLOW_HTTP-true} \
	WEBHOOK_ALLOWED_PRIVATE_CIDRS=$${WEBHOOK_ALLOWED_PRIVATE_CIDRS-127.0.0.1/32}

run: install ## serve on :8080 (PORT=...), embedded PostgreSQL unless DATABASE_URL; prints a key once
	$(DEV_ENV) $(BIN)/tenant-service serve

migrate: install ## apply the SQL migrations and exit
	$(BIN)/tenant-service migrate

schema: install ## regenerate sql/schema.sql from freshly migrated database (embedded PostgreSQL unless DATABASE_URL)
	$(BIN)/python -m tests.support.schema_dump

lint: install ## ruff check and ruff format --check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install ## mypy (strict)
	$(BIN)/mypy

unit: install ## only pytest, with PYTEST_ARGS
	$(BIN)/pytest $(PYTEST_ARGS)

# The quick tier runs in QUICK_WORKERS pytest-xdist processes, each with its own embedded
# PostgreSQL (or its own databases on DATABASE_URL's server); QUICK_WORKERS=0 runs it in
# this one process. Why three, and the times: docs/testing.md.
QUICK_WORKERS ?= 3

quick: install ## the fast tier: in-process tests only (tests/tiers.py), no lint; its time: docs/testing.md
	$(BIN)/pytest -q -n $(QUICK_WORKERS) -m "not processes and not browser and not cluster and not slow" $(PYTEST_ARGS)

test: lint typecheck unit ## lint, typecheck and the whole test suite (what CI runs first)

# The benchmarks load the service with wrk when it is installed (Debian's package; tried
# here when apt-get is at hand and we are root), else with the slower Python generator.
bench-tools: ## install wrk for the benchmarks when possible
	@command -v wrk >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& DEBIAN_FRONTEND=noninteractive timeout 180 apt-get install -y -qq wrk >/dev/null 2>&1; } \
		|| echo "wrk is not installed: the Python load generator will be used (lower ceilings)"

bench: install bench-tools ## the benchmark suite at 100,000 tenants (about 2.5 minutes)
	$(BIN)/python -m bench run --quick $(BENCH_ARGS)

bench-full: install bench-tools ## the benchmark suite at 1,000,000 tenants
	$(BIN)/python -m bench run --full $(BENCH_ARGS)

bench-huge: install bench-tools ## the cost curve at 10k, 100k, 1M and 10M tenants (35 min or more, ~40 GB of disk)
	$(BIN)/python -m bench curve $(BENCH_ARGS)

clean: ## remove .venv and the tool caches (not ./.data)
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

# A 10-minute soak with webhooks delivering (not in CI; docs/performance.md).
.PHONY: soak
soak: install ## a 10-minute soak with webhooks delivering
	$(BIN)/python -m bench.soak
