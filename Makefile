# wallcast: `make run` computes the walls, `make test` runs the test suite.
# Both create .venv on first use (Python >= 3.12) and install the project with its dev extras.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed-stamp

# Is "$$1" a Python >= 3.12? (a pyenv shim of a missing version fails this check, so it is skipped)
PY_OK := import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)

.PHONY: help run test test-other-isa lint bench clean distclean venv

help:
	@echo "make run    - create .venv if needed, run the forecast and its analyses, walls of every accelerator -> outputs/"
	@echo "make test   - create .venv if needed, run the test suite (pytest, two workers)"
	@echo "make test-other-isa - the machine-sensitive tests again, XLA compiling for an older CPU"
	@echo "make lint   - ruff check + ruff format --check + the layer contract (scripts/check_layers.py)"
	@echo "make bench  - benchmarks/walls.py --draws 20000"
	@echo "make api    - serve the API and dashboard on http://127.0.0.1:8000/ (after make run)"
	@echo "make clean  - remove caches and build files (keeps .venv; 'make distclean' removes it too)"

# --------------------------------------------------------------------------- environment

$(PY):
	@py=""; \
	for c in python3.13 python3.12; do \
	  if command -v "$$c" >/dev/null 2>&1 && "$$c" -c '$(PY_OK)' >/dev/null 2>&1; then py="$$(command -v "$$c")"; break; fi; \
	done; \
	if [ -z "$$py" ] && command -v pyenv >/dev/null 2>&1; then \
	  c="$$(pyenv which python 2>/dev/null || true)"; \
	  if [ -n "$$c" ] && "$$c" -c '$(PY_OK)' >/dev/null 2>&1; then py="$$c"; fi; \
	fi; \
	if [ -z "$$py" ] && command -v python3 >/dev/null 2>&1 && python3 -c '$(PY_OK)' >/dev/null 2>&1; then \
	  py="$$(command -v python3)"; \
	fi; \
	if [ -z "$$py" ]; then \
	  echo "error: wallcast needs Python 3.12 or newer and none was found" >&2; \
	  echo "       (tried python3.13, python3.12, 'pyenv which python', python3)." >&2; \
	  echo "       Install one, e.g. 'pyenv install 3.12' or 'apt install python3.12 python3.12-venv'," >&2; \
	  echo "       then run make again." >&2; \
	  exit 1; \
	fi; \
	echo "creating $(VENV) with $$py ($$("$$py" --version 2>&1))"; \
	if ! "$$py" -m venv $(VENV); then \
	  rm -rf $(VENV); \
	  echo "error: '$$py -m venv' failed; on Debian/Ubuntu install the venv module (apt install python3.12-venv)" >&2; \
	  exit 1; \
	fi

# Re-install only when pyproject.toml changes (or the venv is new). uv (from PyPI, into the venv)
# installs the same requirements ~15x faster than pip (BENCHMARKS.md section 10: 3 s against 57 s
# here, empty caches). uv reads none of pip's settings (a mirror, a wheelhouse, certificates), so
# where uv cannot be installed or its install fails, pip installs the project as it always did.
# --compile-bytecode: uv, unlike pip, writes no .pyc files by default, and where
# PYTHONDONTWRITEBYTECODE is set (as on the 2-core machines here) no process writes them either,
# so every Python process of `make test` and `make run` (each test worker, each `wallcast` command,
# Prefect server and flow run) compiled JAX, Prefect and the rest from source again: ~7 s of CPU
# a process for the imports of `wallcast run` against ~2.7 s from bytecode (BENCHMARKS.md section 7).
$(STAMP): pyproject.toml | $(PY)
	@if $(PIP) install -q --disable-pip-version-check 'uv>=0.5' && [ -x $(VENV)/bin/uv ] \
	  && echo "installing with uv" \
	  && $(VENV)/bin/uv pip install --python $(PY) --compile-bytecode -e '.[dev]'; then :; \
	else \
	  echo "uv unavailable or its install failed: installing with pip"; $(PIP) install -e '.[dev]'; \
	fi
	@touch $(STAMP)

venv: $(STAMP)

# --------------------------------------------------------------------------- targets

# `run`: the forecast (fit, every scenario, publish), its sensitivity analysis and backtest, the
# report and deck (written once, by `analyse`, which regenerates them with the analyses' sections;
# `wallcast run` alone writes them itself), and the point walls of every accelerator
# (outputs/walls.json).
run: $(STAMP)
	@mkdir -p outputs
	$(VENV)/bin/wallcast run --no-report
	@# the accelerators' walls over the forecast's posterior draws, read from the forecast
	$(VENV)/bin/wallcast walls --json > outputs/walls.json.tmp
	@mv outputs/walls.json.tmp outputs/walls.json
	@echo "wrote outputs/walls.json (walls of every accelerator in data/hardware.csv, over the forecast's draws)"
	$(VENV)/bin/wallcast analyse

# Two workers (pytest-xdist), each running whole test files (--dist loadfile), so a module's
# fixtures (a published forecast, a fit) are built once, in one worker; files go out in collection
# order, longest first (tests/conftest.py; xdist would otherwise put the files with the most tests
# first and a long one-test file last: --no-loadscope-reorder); every worker has its own
# PREFECT_HOME, all share one JAX compilation cache (tests/conftest.py). TEST_WORKERS=0 runs in
# one process.
# --durations: the slowest tests, for the suite-time budget (BENCHMARKS.md).
TEST_WORKERS ?= 2
test: $(STAMP)
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30

# The machine-sensitive tests (NUTS fits, the convergence gate, the stored references, every
# shipped priors file) again with XLA compiling for the instruction set below this CPU's: the
# code another, older CPU runs, so NUTS takes other trajectories (README, "Reproducibility").
test-other-isa: $(STAMP)
	@isa="$$($(PY) -c 'from forecast.config.platform import other_isa; print(other_isa())')"; \
	  if [ -z "$$isa" ]; then \
	    echo "test-other-isa: not an x86 CPU, no older instruction set to emulate; skipped"; exit 0; \
	  fi; \
	  echo "machine-sensitive tests under XLA_FLAGS=--xla_cpu_max_isa=$$isa"; \
	  XLA_FLAGS="$${XLA_FLAGS:-} --xla_cpu_max_isa=$$isa" $(VENV)/bin/pytest -q -m machine_sensitive \
	    -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) scripts/check_layers.py

bench: $(STAMP)
	$(PY) benchmarks/walls.py --draws 20000

# The HTTP API and dashboard over outputs/ (http://127.0.0.1:8000/); after `make run`.
.PHONY: api
api: $(STAMP)
	$(VENV)/bin/wallcast api

clean:
	rm -rf .pytest_cache .ruff_cache .hypothesis build dist *.egg-info outputs/walls.json.tmp
	find . -path ./$(VENV) -prune -o -type d -name __pycache__ -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
