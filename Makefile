# The README's two commands: `make demo` and `make test`. Everything is installed into the project's own virtual
# environment, .venv (created here on first use), never into the system's or the user's Python.
VENV ?= .venv
BASE_PYTHON ?= python3
# The interpreter every target runs; `make test PYTHON=/some/python` uses that one instead (no .venv is made).
PYTHON ?= $(VENV)/bin/python
PIP = $(PYTHON) -m pip install --progress-bar off -q

ifeq ($(PYTHON),$(VENV)/bin/python)
ENV_READY = $(VENV)/bin/python
endif

.PHONY: demo install install-test test lint screenshots recording bench soak

$(VENV)/bin/python:
	@echo "llamaherd: creating the project's virtual environment in $(VENV) (everything is installed there)"
	$(BASE_PYTHON) -m venv $(VENV)

install: $(ENV_READY)
	$(PIP) -e .
	PYTHON=$(PYTHON) bash scripts/install-llama-server.sh

demo: install
	$(PYTHON) -m app demo

install-test: $(ENV_READY)
	$(PIP) -e '.[test]'
	PYTHON=$(PYTHON) bash scripts/install-llama-server.sh

# lint-imports through $(PYTHON): its console script is on PATH only in an activated .venv (or after a pyenv rehash)
lint:
	$(PYTHON) -m ruff check app tests bench scripts
	$(PYTHON) -m ruff format --check app tests bench scripts
	$(PYTHON) -m mypy app scripts tests bench
	$(PYTHON) -c 'from importlinter.cli import lint_imports_command; lint_imports_command()'

# Most of the suite's time is waiting (routers starting, ssh round trips, a screen settling), so it runs on
# TEST_WORKERS workers; then the tests that assert a time bound (marker `timing`) run apart from that load, three at
# a time: they wait rather than work (21 s of CPU in 147 s run one by one), so they barely load each other.
TEST_WORKERS ?= 4
test: install-test lint
	$(PYTHON) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup -m "not timing"
	$(PYTHON) -m pytest -q -p no:cacheprovider -n 3 -m timing

screenshots: install
	$(PYTHON) -m scripts.screenshots screenshots

# The demo with its scenario, recorded by asciinema while scripts/demo_tour.py presses the keys (needs tmux).
recording: install
	$(PIP) -e '.[recording]'
	$(PYTHON) -m scripts.recording docs/demo.cast

BENCHES = event_latency_cli ssh_connect lifecycle ui_event_to_screen ui_idle_cpu ui_size hostile_rss liveness link_loss log_flood remote_sessions_idle history_query activity_cost remote_rtt remote_actions history_readback scrollback_rss http1_h11 ask_first_token metrics_scrape serve_sessions fleet_size fleet_size_ssh pull_cost pull_to_screen wedged_flag detail_refresh

bench: install-test
	for b in $(BENCHES); do $(PYTHON) -m bench.$$b || exit 1; done

# Not part of `make test` or `make bench`: two soaks of SOAK_MINUTES each (the plain dashboard, then the demo).
SOAK_MINUTES ?= 20

soak: install-test
	$(PYTHON) -m bench.soak plain $(SOAK_MINUTES)
	$(PYTHON) -m bench.soak demo $(SOAK_MINUTES)
