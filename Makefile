# The README's two commands: `make demo` and `make test`.
PYTHON ?= python3
PIP = $(PYTHON) -m pip install --progress-bar off -q

.PHONY: demo install install-test test lint screenshots bench

install:
	$(PIP) -e .
	PYTHON=$(PYTHON) bash scripts/install-llama-server.sh

demo: install
	llamaherd demo

install-test:
	$(PIP) -e '.[test]'
	PYTHON=$(PYTHON) bash scripts/install-llama-server.sh

lint:
	$(PYTHON) -m ruff check app tests bench
	$(PYTHON) -m mypy app

test: install-test lint
	$(PYTHON) -m pytest -q -p no:cacheprovider

screenshots: install
	$(PYTHON) -m app.screenshots screenshots

BENCHES = event_latency_cli ssh_connect lifecycle

bench: install-test
	for b in $(BENCHES); do $(PYTHON) -m bench.$$b || exit 1; done
